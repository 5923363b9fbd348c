import sys;
import string;
// 1,000,000,000 s after the epoch is in September 2001 in every time zone.
trace(clock_format("%Y-%m", 1000000000), clock_format("%Y-%m", 999999999.6));
trace(strlen(clock_format(CLOCK_FMT_ISO8601, clock_seconds())),
      strlen(clock_format(CLOCK_FMT_RFC3339, 0)), INT_MAX());
