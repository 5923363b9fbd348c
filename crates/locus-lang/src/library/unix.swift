// The `unix` module: everyday programs as app functions, under the names
// and signatures Swift/T's module gives them (its `sleep(int)` is the
// builtin `sleep` here, which takes an int as well).

app (file o) cp(file i) { "cp" i o; }

// `cat` of files to an output file, or to the task's stdout (`catp`).
app (file o) cat(file f[]) { "cat" f @stdout=o; }
app catp(file f[]) { "cat" f; }

app (file o) sed(file i, string command) { "sed" command i @stdout=o; }

app (file o) touch() { "touch" o; }

app (file o) echo(string s) { "echo" s @stdout=o; }

app printenv() { "printenv"; }

app (void v) mkdir(string dirname) { "mkdir" "-p" dirname; }

app (void v) rm(string flags, string path) { "rm" flags path; }
