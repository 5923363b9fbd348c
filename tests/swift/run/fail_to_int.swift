trace(toInt("abc"));
