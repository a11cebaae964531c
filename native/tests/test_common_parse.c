#include <string.h>

#include "ic_common.h"
#include "ic_test.h"

static void size_ok(const char *s, uint64_t want) {
  uint64_t v = 0;
  bool ok = ic_parse_size(s, &v);
  if (!ok || v != want)
    fprintf(stderr, "size '%s' -> ok=%d %llu, want %llu\n", s, ok, (unsigned long long)v,
            (unsigned long long)want);
  CHECK(ok && v == want);
}

static void size_bad(const char *s) {
  uint64_t v;
  if (ic_parse_size(s, &v))
    fprintf(stderr, "size '%s' accepted as %llu\n", s, (unsigned long long)v);
  CHECK(!ic_parse_size(s, &v));
}

static void duration_ok(const char *s, double want) {
  double v = -1;
  bool ok = ic_parse_duration(s, &v);
  CHECK(ok && v > want * (1 - 1e-12) - 1e-15 && v < want * (1 + 1e-12) + 1e-15);
}

static void duration_bad(const char *s) {
  double v;
  CHECK(!ic_parse_duration(s, &v));
}

static void test_sizes(void) {
  size_ok("0", 0);
  size_ok("512", 512);
  size_ok("512B", 512);
  size_ok("4K", 4096);
  size_ok("4k", 4096);
  size_ok("4KiB", 4096);
  size_ok("2M", 2ULL << 20);
  size_ok("2MiB", 2ULL << 20);
  size_ok("1G", 1ULL << 30);
  size_ok("3T", 3ULL << 40);
  size_ok("18446744073709551615", UINT64_MAX);
  size_ok("16777215T", 16777215ULL << 40);
  size_bad("12XB");
  size_bad("");
  size_bad("K");
  size_bad("-1");
  size_bad("+1");
  size_bad(" 4K");
  size_bad("4 K");
  size_bad("4K ");
  size_bad("4Kib");
  size_bad("1.5M");
  size_bad("0x10");
  size_bad(NULL);
  size_bad("18446744073709551616"); /* 2^64 */
  size_bad("16777216T");            /* 2^64 */
  size_bad("17179869184G");         /* 2^64 */
}

static void test_durations(void) {
  duration_ok("10", 10);
  duration_ok("10s", 10);
  duration_ok("500ms", 0.5);
  duration_ok("250us", 250e-6);
  duration_ok("2m", 120);
  duration_ok("1h", 3600);
  duration_ok("1.5s", 1.5);
  duration_ok("0", 0);
  duration_bad("");
  duration_bad("s");
  duration_bad("10x");
  duration_bad("-1");
  duration_bad("1e3");
  duration_bad("inf");
  duration_bad("nan");
  duration_bad("1.");
  duration_bad(".5");
  duration_bad("10 s");
}

static void test_u64(void) {
  uint64_t v = 0;
  CHECK(ic_parse_u64("42", &v) && v == 42);
  CHECK(ic_parse_u64("0x1F", &v) && v == 31);
  CHECK(ic_parse_u64("0XfF", &v) && v == 255);
  CHECK(ic_parse_u64("18446744073709551615", &v) && v == UINT64_MAX);
  CHECK(ic_parse_u64("0xFFFFFFFFFFFFFFFF", &v) && v == UINT64_MAX);
  CHECK(!ic_parse_u64("18446744073709551616", &v));
  CHECK(!ic_parse_u64("0x10000000000000000", &v));
  CHECK(!ic_parse_u64("0x", &v));
  CHECK(!ic_parse_u64("-1", &v));
  CHECK(!ic_parse_u64(" 1", &v));
  CHECK(!ic_parse_u64("1K", &v));
  CHECK(!ic_parse_u64("0x-1", &v));
  CHECK(!ic_parse_u64("", &v));
}

static void test_format_size(void) {
  char buf[32];
  CHECK(!strcmp(ic_format_size(4096, buf, sizeof buf), "4K"));
  CHECK(!strcmp(ic_format_size(2ULL << 20, buf, sizeof buf), "2M"));
  CHECK(!strcmp(ic_format_size(3ULL << 30, buf, sizeof buf), "3G"));
  CHECK(!strcmp(ic_format_size(1ULL << 50, buf, sizeof buf), "1024T"));
  CHECK(!strcmp(ic_format_size(1536, buf, sizeof buf), "1536"));
  CHECK(!strcmp(ic_format_size(0, buf, sizeof buf), "0"));
  uint64_t back;
  CHECK(ic_parse_size(ic_format_size(6ULL << 20, buf, sizeof buf), &back) && back == 6ULL << 20);
}

int main(void) {
  test_sizes();
  test_durations();
  test_u64();
  test_format_size();
  return TEST_RESULT();
}
