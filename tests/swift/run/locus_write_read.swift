import files;
file f<"/locus/data/x.txt"> = write("hello\nworld\n");
string lines[] = file_lines(f);
trace(size(lines), lines[1]);
