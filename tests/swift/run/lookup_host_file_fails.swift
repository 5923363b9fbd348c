string h = lookup("/etc/hostname");
trace(h);
