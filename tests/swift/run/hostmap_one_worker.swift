import location;
trace(hostmapOneWorkerRank("node0"));
