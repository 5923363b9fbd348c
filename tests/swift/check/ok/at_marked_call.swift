// `@f(x)`: a mark of a call Swift/T ignores.
(int x) f (int y) { x = y; }
int x = @f(2);
trace(x);
