#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ic_common.h"
#include "ic_test.h"

static void test_escape(void) {
  char buf[64];
  CHECK(!strcmp(ic_json_escape("plain", buf, sizeof buf), "plain"));
  CHECK(!strcmp(ic_json_escape("a\"b\\c", buf, sizeof buf), "a\\\"b\\\\c"));
  CHECK(!strcmp(ic_json_escape("\n\r\t\b\f", buf, sizeof buf), "\\n\\r\\t\\b\\f"));
  CHECK(!strcmp(ic_json_escape("\x01\x1f", buf, sizeof buf), "\\u0001\\u001f"));
  /* UTF-8 passes through untouched. */
  CHECK(!strcmp(ic_json_escape("\xc3\xa9", buf, sizeof buf), "\xc3\xa9"));
  /* Truncation never splits an escape: "ab" + "\u0001" would not fit in 8 bytes. */
  CHECK(!strcmp(ic_json_escape("ab\x01xyz", buf, 8), "ab"));
  CHECK(!strcmp(ic_json_escape("a\"", buf, 3), "a"));
}

static void test_writer(void) {
  char *out;
  size_t len;
  FILE *f = test_memstream(&out, &len);
  ic_json_t j;
  ic_json_begin(&j, f);
  ic_json_str(&j, "k\"ey", "v\"al\n\x02");
  ic_json_u64(&j, "n", UINT64_MAX);
  ic_json_i64(&j, "i", -5);
  ic_json_f64(&j, "x", 0.25);
  ic_json_f64(&j, "nan", NAN);
  ic_json_f64(&j, "inf", INFINITY);
  ic_json_bool(&j, "b", true);
  ic_json_null(&j, "z");
  ic_json_array(&j, "a");
  ic_json_u64(&j, NULL, 1);
  ic_json_object(&j, NULL);
  ic_json_str(&j, "p\\", "/cg/\"q");
  ic_json_array(&j, "e");
  ic_json_pop(&j);
  ic_json_pop(&j);
  ic_json_null(&j, NULL);
  ic_json_pop(&j);
  ic_json_object(&j, "o");
  ic_json_pop(&j);
  ic_json_end(&j);
  ic_json_begin(&j, f);
  ic_json_close(&j);
  fclose(f);
  const char *want = "{\"k\\\"ey\":\"v\\\"al\\n\\u0002\",\"n\":18446744073709551615,\"i\":-5,"
                     "\"x\":0.25,\"nan\":null,\"inf\":null,\"b\":true,\"z\":null,"
                     "\"a\":[1,{\"p\\\\\":\"/cg/\\\"q\",\"e\":[]},null],\"o\":{}}\n{}";
  if (strcmp(out, want))
    fprintf(stderr, "got  %s\nwant %s\n", out, want);
  CHECK(!strcmp(out, want));
  free(out);
}

int main(void) {
  test_escape();
  test_writer();
  return TEST_RESULT();
}
