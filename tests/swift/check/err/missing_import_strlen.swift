// EXPECT-ERROR: 2: needs 'import string;'
int n = strlen("ab");
