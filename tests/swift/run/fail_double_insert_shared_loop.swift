// A large foreach is shared out between servers: the write that fails may
// be another server's, and is still named by its place in the script.
int A[];
foreach i in [1:2000] {
    A[i %% 7] = i;
}
