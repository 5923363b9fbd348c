boolean t = true; boolean f = false; trace(t && !f, t || f);
