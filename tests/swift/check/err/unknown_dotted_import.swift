// EXPECT-ERROR: 2: unknown module 'a.b.c'
import a.b.c;
