// Swift/T's second names and modules check as Swift/T's.
import sys;
import json;
import R;
string o; int c;
(o, c) = system(["true"]);
trace(o, c, json_get("[1]", "0"), R("", "1"), repr(1), bool2string(true));
trace(max(1, 2), min(1.0, 2.0), pow(2, 3), toInt(1.5), toFloat(1));
