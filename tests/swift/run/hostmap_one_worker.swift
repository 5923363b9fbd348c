import location;
trace(hostmapOneWorker("node0"));
