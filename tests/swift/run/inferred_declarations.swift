// Variables declared by their first assignment: scalars, whole arrays,
// and arrays (of arrays) by assigning their elements.
x = 1;
y = x + 2;
A[0][1] = x;
A[1][0] = y;
q = A[0];
trace("A", A[0][1], A[1][0], q[1], size(A));
S["k"] = 2.5;
trace("S", S["k"]);
B = [1, 2, 3];
s = "a" + "b";
trace("B", size(B), s);
