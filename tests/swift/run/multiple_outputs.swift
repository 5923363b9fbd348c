(int q, int r) dm(int a, int b) { q = a %/ b; r = a %% b; }
int q, r;
(q, r) = dm(17, 5);
trace(q, r);
