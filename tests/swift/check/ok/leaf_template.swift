(string o) shout(string s) "turbine" "0.0" [ "set <<o>> [ string toupper <<s>> ]" ];
trace(shout("hi"));
