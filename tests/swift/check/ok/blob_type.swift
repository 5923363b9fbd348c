(blob b) make() "pkg" "1.0" "make";
blob x = make();
