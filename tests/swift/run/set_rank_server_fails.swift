set_rank("/locus/p/d.txt", 2);
