// EXPECT-ERROR: 2: 'strcat' takes no keyword arguments ('s=')
trace(strcat(s="a"));
