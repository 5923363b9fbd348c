int R[] = [0:9]; trace(size(R));
