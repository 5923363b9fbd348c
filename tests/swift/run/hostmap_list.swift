import location;
string h[] = hostmapList();
trace(size(h), h[0]);
