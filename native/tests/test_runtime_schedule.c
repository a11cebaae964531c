/* The periodic runner's pure arithmetic: the release grid, both overrun policies, and an
 * aggressor job's work. */
#include <string.h>

#include "ic_test.h"
#include "schedule.h"

static void release_grid(void) {
  ic_schedule_t s = {.origin_ns = 1000, .period_ns = 100};
  CHECK(ic_release_ns(&s, 0) == 1000);
  CHECK(ic_release_ns(&s, 7) == 1700);
  /* Far releases stay exact: no accumulated rounding. */
  ic_schedule_t big = {.origin_ns = 5, .period_ns = 100000000};
  CHECK(ic_release_ns(&big, 1000000) == 5 + 100000000ULL * 1000000);
}

static void overrun_policies(void) {
  ic_schedule_t s = {.origin_ns = 1000, .period_ns = 100};
  uint64_t skipped = 99;
  /* On time: the next release, nothing skipped. */
  CHECK(ic_next_release(&s, IC_OVERRUN_SKIP, 0, 1050, &skipped) == 1 && skipped == 0);
  CHECK(ic_next_release(&s, IC_OVERRUN_LATE, 0, 1050, &skipped) == 1 && skipped == 0);
  /* Ending exactly at the next release is not an overrun. */
  CHECK(ic_next_release(&s, IC_OVERRUN_SKIP, 0, 1100, &skipped) == 1 && skipped == 0);
  /* One ns past it: skip drops release 1 and waits for 2; late keeps 1. */
  CHECK(ic_next_release(&s, IC_OVERRUN_SKIP, 0, 1101, &skipped) == 2 && skipped == 1);
  CHECK(ic_next_release(&s, IC_OVERRUN_LATE, 0, 1101, &skipped) == 1 && skipped == 0);
  /* Overrunning several periods from a later release: releases 4..6 pass, 7 is next. */
  CHECK(ic_next_release(&s, IC_OVERRUN_SKIP, 3, 1650, &skipped) == 7 && skipped == 3);
  /* Ending exactly on a later release waits for that release, not the one after. */
  CHECK(ic_next_release(&s, IC_OVERRUN_SKIP, 3, 1600, &skipped) == 6 && skipped == 2);
  CHECK(ic_next_release(&s, IC_OVERRUN_LATE, 3, 1650, &skipped) == 4 && skipped == 0);
}

static void work_specs(void) {
  char why[256], buf[64];
  ic_work_t w;
  CHECK(ic_work_parse("passes:4", &w, why, sizeof why) && w.kind == IC_WORK_PASSES &&
        w.amount == 4);
  CHECK(ic_work_parse("time:20ms", &w, why, sizeof why) && w.kind == IC_WORK_CPU_TIME &&
        w.amount == 20000000);
  CHECK(!strcmp(ic_work_format(&w, buf, sizeof buf), "time:20ms"));
  CHECK(ic_work_parse("time:1.5", &w, why, sizeof why) && w.amount == 1500000000);
  CHECK(!strcmp(ic_work_format(&w, buf, sizeof buf), "time:1500ms"));
  CHECK(ic_work_parse("time:250us", &w, why, sizeof why) && w.amount == 250000);
  CHECK(!strcmp(ic_work_format(&w, buf, sizeof buf), "time:250us"));
  /* Every spelling read back gives the same work. */
  ic_work_t odd = {.kind = IC_WORK_CPU_TIME, .amount = 1234567891}, back;
  CHECK(ic_work_parse(ic_work_format(&odd, buf, sizeof buf), &back, why, sizeof why) &&
        back.amount == odd.amount);
  CHECK(!ic_work_parse("passes:0", &w, why, sizeof why) && strstr(why, "passes:N"));
  CHECK(!ic_work_parse("passes:x", &w, why, sizeof why));
  CHECK(!ic_work_parse("time:0", &w, why, sizeof why));
  CHECK(!ic_work_parse("time:2h", &w, why, sizeof why));
  CHECK(!ic_work_parse("4", &w, why, sizeof why) && strstr(why, "passes:N"));
  CHECK(!ic_work_parse("laps:4", &w, why, sizeof why) && strstr(why, "laps"));
  CHECK(!ic_work_parse("pass:4", &w, why, sizeof why));
  CHECK(ic_work_accesses(3, 4096, 64) == 192);
  CHECK(ic_work_accesses(UINT64_MAX / 2, 1 << 20, 64) == UINT64_MAX);
}

int main(void) {
  release_grid();
  overrun_policies();
  work_specs();
  return TEST_RESULT();
}
