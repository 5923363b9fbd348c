// EXPECT-ERROR: 2: '%/' cannot combine float and float
float a = 4.0; float c = a %/ 2.0;
