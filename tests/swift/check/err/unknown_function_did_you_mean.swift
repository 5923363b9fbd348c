// EXPECT-ERROR: 3: unknown function 'strlenn'; did you mean 'strlen'?
import string;
int n = strlenn("abc");
