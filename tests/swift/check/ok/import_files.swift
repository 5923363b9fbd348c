import files;
file f<"x.txt">;
string s = read(f);
file g = write(s);
file all[] = glob("*.txt");
trace(s);
