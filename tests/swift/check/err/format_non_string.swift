// EXPECT-ERROR: 3: the format operator needs a string on the left, not int
import string;
string s = 3 % (1, 2);
