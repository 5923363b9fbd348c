// An array literal given to a call in a chained statement closes with the
// chain's part, not after it (it used to leave the run unable to progress).
(int n) count(int A[]) { n = size(A); }
void go = make_void();
int x = 4;
go => trace("count", count([x, x + 1, 2]));
