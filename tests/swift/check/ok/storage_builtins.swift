string host = lookup("/locus/data/a.txt");
location L = ip2rank(host);
int r = get_rank("/locus/data/a.txt");
set_rank("/locus/data/b.txt", r);
