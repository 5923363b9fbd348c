// EXPECT-ERROR: 3: argument 1 of 'json_type' must be file, not string
import json;
trace(json_type("{}", ""));
