app (file file_output) write_file(){
 "./write-local.sh" file_output;
}
app (void) read_file(file file_input){
 "java read-local.class" file_input;
}
int n = 4;
string file_name[] = ["a", "b", "c", "d"];
foreach i in [0:n-1] {
  file f<file_name[i]> = write_file();
  read_file(f);
}
