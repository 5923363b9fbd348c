// EXPECT-ERROR: 4: argument 1 of 'json_type' must be string, not file
import json;
file f = input("x.json");
trace(json_type(f, ""));
