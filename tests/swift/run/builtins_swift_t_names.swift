// Swift/T's builtins.swift under its own names (no import needed).
trace("length", length("héllo"));
trace("convert", toInt(3.9), toInt("12"), float2int(-2.5), toFloat(2), toFloat("0.5"), int2float(3));
trace("strings", int2string(7), float2string(0.25), toString(true), string2bool("false"), parseInt("ff", 16), string2int("17"));
trace("minmax", max(3, 9), min(3, 9), max(1.5, 0.5), min_integer(-1, 1));
trace("ternary", ternary(true, 1, 2), ternary_string(false, "a", "b"));
int A[] = [10, 20, 30];
string S[string];
S["x"] = "1"; S["y"] = "2";
trace("contains", contains(A, 1), contains(A, 20), contains(S, "y"), exists(S, "z"));
trace("keys", keys_integer(A), keys_string(S), bagSize(A));
string P[] = pick_integer_string(["a", "b", "c", "d"], [3, 1]);
trace("pick", P[0], P[1], size(P));
trace("ranges", size(range_step(0, 10, 5)), size(range_float(0.0, 2.0)), size(range_float_step(0.0, 1.0, 0.25)));
trace("engines", turbine_engines());
void v = make_void();
v => trace("signalled");
