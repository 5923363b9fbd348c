int d[int] = {1: 10, 2: 20,
              1: 30};
trace(size(d));
