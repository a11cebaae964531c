/* The freeze/thaw log's line: escaped, whole or not at all. */
#include <string.h>

#include "ic_freezelog.h"
#include "ic_test.h"

static void log_line(void) {
  char buf[512];
  ic_log_entry_t e = {.t_ns = 42, .action = "freeze", .group = "/cg/\"be\"", .reason = "release",
                      .job = 3, .has_latency = true, .latency_ns = -7, .by = "monitor"};
  size_t n = ic_log_format(buf, sizeof buf, &e);
  CHECK(n == strlen(buf) && buf[n - 1] == '\n');
  CHECK(!strcmp(buf, "{\"t_ns\":42,\"action\":\"freeze\",\"group\":\"/cg/\\\"be\\\"\",\"reason\":"
                     "\"release\",\"job\":3,\"latency_ns\":-7,\"by\":\"monitor\"}\n"));
  e = (ic_log_entry_t){.t_ns = 1, .action = "thaw", .group = "/g", .reason = "cap", .job = -1,
                       .error = 19, .by = "watchdog"};
  ic_log_format(buf, sizeof buf, &e);
  CHECK(strstr(buf, "\"error\":\"No such device\"") && !strstr(buf, "job") &&
        !strstr(buf, "latency"));
  CHECK(ic_log_format(buf, 10, &e) == 0); /* too small: nothing half-written */
}

int main(void) {
  log_line();
  return TEST_RESULT();
}
