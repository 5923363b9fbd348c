foreach i in [0:2] {
  foreach j in [0:2] {
    trace(i * 3 + j);
  }
}
