int a = 5;
if (a > 3) { trace("big"); } else { trace("small"); }
