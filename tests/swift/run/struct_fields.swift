type person { string name; int age; }
person p;
p.name = "Ada"; p.age = 36;
trace(p.name, p.age);
