// EXPECT-ERROR: 2: unknown module 'nosuchmodule'
import nosuchmodule;
