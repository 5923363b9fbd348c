trace(true && false, true || false, !false);
