main { }
