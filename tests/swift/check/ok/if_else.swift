int a = 3;
if (a > 2) { trace("big"); } else { trace("small"); }
