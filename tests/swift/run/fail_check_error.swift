int a = "s";
