import io;
import location;
int r = hostmapOneWorkerRank("node1");
trace(r);
