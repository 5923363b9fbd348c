app (file o) hello() { "echo" "hello" @stdout=o; }
file f<"hello.txt"> = hello();
