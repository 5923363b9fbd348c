// EXPECT-ERROR: 3: constructing a pair takes its 2 fields in order (a, b), given 1 argument
type pair { int a; float b; }
pair q = pair(1);
