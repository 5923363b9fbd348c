string h = lookup("/locus/no/such/file");
trace(h);
