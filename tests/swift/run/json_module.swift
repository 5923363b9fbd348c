// Swift/T's json module: comma-separated paths into a document, values as
// Python's str() prints them.
import io;
import files;
import json;
string doc = "{\"name\": \"scan\", \"sizes\": [3, 4.5], \"opts\": {\"fast\": true, \"n\": null}}";
printf("name=%s", json_get(doc, "name"));
printf("size1=%s", json_get(doc, "sizes,1"));
printf("sizes=%s", json_get(doc, "sizes"));
printf("opts=%s", json_get(doc, "opts"));
file f <"/locus/corpus/json_module.json"> = write(doc);
printf("type=%s %s %s %s", json_type(doc, "opts"), json_type(doc, "sizes"), json_type(doc, "name"), json_type(doc, "sizes,1"));
printf("size=%i names=%s", json_array_size(doc, "sizes"), json_object_names(doc, "opts"));
printf("int=%i float=%0.1f", json_get_int(doc, "sizes,0") + 1, json_get_float(doc, "sizes,1"));
trace(json_get_boolean(doc, "opts,fast"));
printf("%s %s", json_arrayify("1, 2"), json_objectify("\"a\": 1"));
string names[] = ["n", "s"];
string types[] = ["float", "string"];
printf("%s", json_encode_array(1, 2.5, "x", true));
printf("%s", json_encode_array_contents(1, "x"));
printf("%s", json_encode_array_retype(types, 3, 4));
printf("%s", json_encode_array_format("%i %0.2f", 3, 2.5));
printf("%s", json_encode_object(names, 7, "seven"));
printf("%s", json_encode_object_contents(names, 7, "seven"));
printf("%s", json_encode_object_retype(names, types, 7, 8));
printf("%s", json_encode_object_format(names, "%i %s", 7.9, "x"));
printf("len=%s", json_list_length(f, "sizes"));
printf("keys=%s", json_dict_entries(f, "opts"));
