trace("one") => trace("two");
