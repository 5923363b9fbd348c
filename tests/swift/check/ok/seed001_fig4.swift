import files;
app (file o) application(file i) { "app" i @stdout=o; }
file fileArray[] = glob("/locus/*");
foreach f in fileArray {
    string filename = filename(f);
    string host = lookup(filename);
    location L = ip2rank(host);
    file o = @location=L application(f);
}
