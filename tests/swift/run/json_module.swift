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
printf("type=%s %s %s", json_type(f, "opts"), json_type(f, "sizes"), json_type(f, "name"));
printf("len=%s", json_list_length(f, "sizes"));
printf("keys=%s", json_dict_entries(f, "opts"));
