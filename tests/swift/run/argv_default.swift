import sys;
trace(argv("name", "nobody"));
