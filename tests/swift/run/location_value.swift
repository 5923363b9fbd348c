location L = location(2, SOFT, NODE);
trace(L);
