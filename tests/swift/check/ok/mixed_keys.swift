string M[string][]; M["x"][0] = "a"; trace(M["x"][0]);
