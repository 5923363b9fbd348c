int D[string] = {"a": 1, "b": 2}; trace(D["b"]);
