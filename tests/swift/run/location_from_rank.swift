import files; import string;
app (file o) r() { "sh" "-c" "echo $ADLB_RANK_SELF" @stdout=o; }
file f = @location=locationFromRank(1) r();
trace(trim(read(f)));
