trace("first") => trace("second") => trace("third");
