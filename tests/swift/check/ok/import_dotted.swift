import io;
import location;
int r = hostmapOneWorker("node1");
trace(r);
