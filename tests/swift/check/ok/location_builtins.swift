location L = location(0, HARD, RANK);
location M = location(1, SOFT, NODE);
location N = locationFromRank(2);
trace("placed");
