// An app that exits 0 without writing a declared output fails (Nextflow's
// rule), whether the output is named on its command line or not.
app (file o) lie() { "true" }
main {
  file f<"/locus/lies/never.txt"> = lie();
  trace(filename(f));
}
