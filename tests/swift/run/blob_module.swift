// Swift/T's blob module: bytes made from strings, floats and ints, and
// read from files.
import blob;
import files;
import io;
blob b = blob_from_string("hello");
printf("size %i text %s", blob_size(b), string_from_blob(b));
blob f = blob_from_floats([1.5, -2.0]);
float F[] = floats_from_blob(f);
printf("floats %i %.1f %.1f", blob_size(f), F[0], F[1]);
int I[] = ints_from_blob(blob_from_ints([7, 8, 9]));
printf("ints %i %i", size(I), I[2]);
printf("zeroes %i null %i", blob_size(blob_zeroes_float(3)), blob_size(blob_null()));
file t <"/locus/corpus/blob_module.txt"> = write("bytes!");
printf("read %s", string_from_blob(blob_read(t)));
