import files; import string;
app (file o) r() { "sh" "-c" "echo $ADLB_RANK_OFFSET $ADLB_RANK_LEADER" @stdout=o; }
file f = @location=location(1, HARD, RANK) r();
trace(trim(read(f)));
