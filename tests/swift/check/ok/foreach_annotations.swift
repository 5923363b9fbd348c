@async foreach i in [0:3] { trace(i); }
@splitdegree=16 @leafdegree=4 foreach j in [0:100] { trace(j); }
