// A module of the modules_import test; it imports one too.
import modules.shapes.area;
global const string HELLO = "hello";
(string o) greet(string who) { o = HELLO + " " + who + " " + fromInt(square_area(2)); }
