// EXPECT-ERROR: 2: unknown type 'widget'
widget w;
