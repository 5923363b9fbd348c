import location;
trace(hostmapOneWorker("nowhere"));
