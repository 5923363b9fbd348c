// EXPECT-ERROR: 2: 'PI' needs 'import math;'
float p = PI;
