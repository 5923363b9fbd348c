import sys;
sleep(0.01) => trace("after");
trace("any order");
