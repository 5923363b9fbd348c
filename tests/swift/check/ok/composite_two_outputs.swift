(int q, int r) divmod(int a, int b) { q = a %/ b; r = a %% b; }
int q, r;
(q, r) = divmod(7, 2);
trace(q, r);
