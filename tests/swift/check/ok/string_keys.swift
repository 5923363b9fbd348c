string D[string]; D["a"] = "x"; D["b"] = "y"; trace(D["a"]);
