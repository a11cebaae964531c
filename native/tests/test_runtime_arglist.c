/* List options: repeated and comma-separated values both collect, in order. */
#include <stdlib.h>
#include <string.h>

#include "arglist.h"
#include "ic_common.h"
#include "ic_test.h"

static const char *json_of(const ic_arglist_t *l) {
  static char *out;
  size_t len;
  free(out);
  FILE *f = test_memstream(&out, &len);
  ic_json_t j;
  ic_json_begin(&j, f);
  ic_arglist_json(&j, "l", l);
  ic_json_close(&j);
  fclose(f);
  return out;
}

int main(void) {
  char *argv[] = {"--cgroup", "/a,/b", "--cpu", "1", "--cgroup=/c", "--cgroupx", "/no",
                  "--cgroup"};
  ic_arglist_t l;
  ic_arglist_collect(&l, 8, argv, "cgroup");
  CHECK(l.n == 3);
  CHECK(l.n == 3 && !strcmp(l.items[0], "/a") && !strcmp(l.items[1], "/b") &&
        !strcmp(l.items[2], "/c"));
  CHECK(!strcmp(json_of(&l), "{\"l\":[\"/a\",\"/b\",\"/c\"]}"));
  ic_arglist_free(&l);
  CHECK(l.n == 0 && !l.items);

  ic_arglist_collect(&l, 0, argv, "cgroup");
  CHECK(l.n == 0 && !strcmp(json_of(&l), "{\"l\":[]}"));
  ic_arglist_free(&l);
  return TEST_RESULT();
}
