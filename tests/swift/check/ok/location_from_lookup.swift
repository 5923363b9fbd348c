import files;
app (file o) process(file i) { "wc" i @stdout=o; }
file inputs[] = glob("/locus/in/*");
foreach f in inputs {
  file r = @location=ip2rank(lookup(filename(f))) process(f);
}
