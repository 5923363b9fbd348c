// The unix module's apps, as Swift/T's.
import unix;
import files;
import io;
import string;
file a <"/locus/unix/a.txt"> = echo("hello unix");
file b <"/locus/unix/b.txt"> = sed(a, "s/unix/world/");
file c <"/locus/unix/c.txt"> = cp(b);
file d <"/locus/unix/d.txt"> = cat([a, c]);
printf("cat: %s", replace_all(read(d), "\n", "|", 0));
file t <"/locus/unix/t.txt"> = touch();
printf("touched %i", file_size(t));
