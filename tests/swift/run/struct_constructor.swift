// Swift/T's guide: a struct is constructed by calling its type by name,
// its fields in declared order (arrays and nested structs too).
type person {
  string name;
  int age;
  int events[];
}
type pair { int a; float b; }
type team { person lead; pair score; }

person p = person("Nguyen", 42, [1, 2]);
trace("person", p.name, p.age, p.events[1]);
pair q;
q = pair(1, 2);
trace("pair", q.a, q.b);
trace("inline", pair(3, 4.5).b);
person people[];
people[0] = person("Thelma", 31, [3]);
trace("element", people[0].name, people[0].events[0]);
team t = team(person("Louise", 29, []), pair(7, 0.5));
trace("nested", t.lead.name, t.score.a, size(t.lead.events));
