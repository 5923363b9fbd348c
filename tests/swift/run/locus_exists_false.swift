import files;
trace(file_exists("/locus/nothing/here"));
