import location;
trace(hostmapOneWorkerRank("nowhere"));
