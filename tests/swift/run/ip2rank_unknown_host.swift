location L = ip2rank("nowhere");
trace(1);
