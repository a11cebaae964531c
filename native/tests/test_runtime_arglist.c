/* List options: repeated and comma-separated values both collect, in order. */
#include <stdlib.h>
#include <string.h>

#include "arglist.h"
#include "ic_test.h"

int main(void) {
  char *argv[] = {"--cgroup", "/a,/b", "--cpu", "1", "--cgroup=/c", "--cgroupx", "/no",
                  "--cgroup"};
  ic_arglist_t l;
  ic_arglist_collect(&l, 8, argv, "cgroup");
  CHECK(l.n == 3);
  CHECK(l.n == 3 && !strcmp(l.items[0], "/a") && !strcmp(l.items[1], "/b") &&
        !strcmp(l.items[2], "/c"));
  char *json = ic_arglist_json(&l);
  CHECK(!strcmp(json, "[\"/a\",\"/b\",\"/c\"]"));
  free(json);
  ic_arglist_free(&l);
  CHECK(l.n == 0 && !l.items);

  ic_arglist_collect(&l, 0, argv, "cgroup");
  json = ic_arglist_json(&l);
  CHECK(l.n == 0 && !strcmp(json, "[]"));
  free(json);
  ic_arglist_free(&l);
  return TEST_RESULT();
}
