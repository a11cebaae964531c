/* The observation points: buffer layout, bounds, flush format, and that the CPU time they
 * record is CPU time (a sleep costs none, a spin costs its length). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ic_region.h"
#include "ic_test.h"

static const char *const names[] = {"total", "alpha", "beta \"quoted\""};

static char *flush_text(ic_regions_extra_fn extra) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  ic_regions_flush(f, extra, NULL);
  fclose(f);
  return out;
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

static void test_bad_init(void) {
  CHECK(!ic_regions_init(names, 0, 1));
  CHECK(!ic_regions_init(names, 3, 0));
}

static void test_round_trip(void) {
  CHECK(ic_regions_init(names, 3, 2));
  ic_regions_set_rep(0);
  IC_REGION_BEGIN(1);
  IC_REGION_END(1);
  ic_regions_set_rep(1);
  IC_REGION_BEGIN(0);
  IC_REGION_BEGIN(2);
  IC_REGION_END(2);
  IC_REGION_END(0);
  ic_regions_set_nivcsw(0, 7);
  CHECK(ic_regions_reps() == 2);
  CHECK(ic_regions_dropped() == 0);

  char *text = flush_text(NULL);
  /* Only what was recorded, in (rep, region) order. */
  CHECK(count_lines(text) == 3);
  char *line = strtok(text, "\n");
  int want[][2] = {{0, 1}, {1, 0}, {1, 2}};
  for (int i = 0; i < 3 && line; i++, line = strtok(NULL, "\n")) {
    int rep, region, cpu, used = 0;
    unsigned long long wall, cputime;
    long long nivcsw;
    char name[64];
    int got = sscanf(line,
                     "{\"event\":\"sample\",\"rep\":%d,\"region\":%d,\"name\":\"%63[^,],"
                     "\"wall_ns\":%llu,\"cpu_ns\":%llu,\"nivcsw\":%lld,\"cpu\":%d}%n",
                     &rep, &region, name, &wall, &cputime, &nivcsw, &cpu, &used);
    CHECK(got == 7);
    CHECK(used == (int)strlen(line));
    CHECK(rep == want[i][0] && region == want[i][1]);
    CHECK(nivcsw == (rep == 1 && region == 0 ? 7 : -1));
    CHECK(cpu >= 0);
    if (region == 2)
      CHECK(!strcmp(name, "beta \\\"quoted\\\"\""));
    if (region == 1)
      CHECK(!strcmp(name, "alpha\""));
  }
  free(text);
  ic_regions_fini();
}

static void test_bounds(void) {
  CHECK(ic_regions_init(names, 3, 2));
  /* No repetition selected yet: nothing may be written. */
  IC_REGION_BEGIN(0);
  IC_REGION_END(0);
  CHECK(ic_regions_dropped() == 1);
  ic_regions_set_rep(0);
  IC_REGION_BEGIN(3);
  IC_REGION_END(3);
  IC_REGION_BEGIN(-1);
  IC_REGION_END(-1);
  CHECK(ic_regions_dropped() == 5);
  ic_regions_set_rep(2);
  IC_REGION_BEGIN(0);
  IC_REGION_END(0);
  ic_regions_set_nivcsw(0, 1);
  CHECK(ic_regions_dropped() == 7);
  CHECK(ic_regions_sample(2, 0) == NULL);
  CHECK(ic_regions_sample(0, 3) == NULL);
  CHECK(ic_regions_sample(-1, 0) == NULL);
  for (int rep = 0; rep < 2; rep++)
    for (int r = 0; r < 3; r++)
      CHECK(ic_regions_sample(rep, r)->entries == 0);
  CHECK(ic_regions_reps() == 1);
  char *text = flush_text(NULL);
  CHECK(text[0] == '\0');
  free(text);
  ic_regions_fini();
}

static void test_accumulates(void) {
  CHECK(ic_regions_init(names, 2, 1));
  ic_regions_set_rep(0);
  for (int i = 0; i < 3; i++) {
    IC_REGION_BEGIN(1);
    IC_REGION_END(1);
  }
  CHECK(ic_regions_sample(0, 1)->entries == 3);
  ic_regions_fini();
}

static void extra(ic_json_t *j, int rep, int region, void *ctx) {
  (void)ctx;
  ic_json_i64(j, "tag", rep * 10 + region);
}

static void test_extra_fields(void) {
  CHECK(ic_regions_init(names, 3, 2));
  ic_regions_set_rep(1);
  IC_REGION_BEGIN(2);
  IC_REGION_END(2);
  char *text = flush_text(extra);
  CHECK(strstr(text, ",\"tag\":12}\n") != NULL);
  free(text);
  ic_regions_fini();
}

static uint64_t thread_cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return ic_region_timespec_ns(&t);
}

static void test_cpu_time_is_cpu_time(void) {
  CHECK(ic_regions_init(names, 3, 1));
  ic_regions_set_rep(0);
  IC_REGION_BEGIN(1);
  struct timespec nap = {0, 50 * 1000 * 1000};
  nanosleep(&nap, NULL);
  IC_REGION_END(1);
  const ic_sample_t *slept = ic_regions_sample(0, 1);
  CHECK(slept->wall_ns >= 50000000);
  CHECK(slept->cpu_ns < 5000000);

  /* Spin for 30 ms of CPU time as the kernel counts it; preemption by other tenants may
   * stretch the wall time but not the CPU time. */
  uint64_t c0 = thread_cpu_ns();
  IC_REGION_BEGIN(2);
  while (thread_cpu_ns() - c0 < 30000000)
    ;
  IC_REGION_END(2);
  uint64_t spent = thread_cpu_ns() - c0;
  const ic_sample_t *spun = ic_regions_sample(0, 2);
  CHECK(spun->cpu_ns >= 29000000 && spun->cpu_ns <= spent + 1000000);
  CHECK(spun->wall_ns + 1000000 >= spun->cpu_ns);
  printf("cputime mode %s: sleep cpu %llu ns, spin cpu %llu / wall %llu ns\n",
         ic_regions_cputime_mode(), (unsigned long long)slept->cpu_ns,
         (unsigned long long)spun->cpu_ns, (unsigned long long)spun->wall_ns);
  ic_regions_fini();
}

#ifdef IC_ARCH_HAVE_CYCLES
/* The user-page arithmetic of perf_event_open(2) against a page built here: the kernel
 * fills the same fields, but this host may not offer cap_user_time at all. */
static void test_perf_page_arithmetic(void) {
  for (uint64_t cyc = 1; cyc < (1ull << 62); cyc = cyc * 3 + 12345) {
    unsigned __int128 exact = (unsigned __int128)cyc * 349525u >> 20;
    CHECK(ic_region_cyc_to_ns(cyc, 349525u, 20) == (uint64_t)exact);
  }
  static struct perf_event_mmap_page page;
  page.cap_user_time = 1;
  page.cap_user_time_zero = 1;
  page.time_running = 5000;
  page.time_offset = (uint64_t)-1000;
  page.time_zero = 777;
  page.time_mult = 1;
  page.time_shift = 0;
  uint64_t before = ic_arch_cycles();
  ic_stamp_t t = ic_region_stamp_perf(&page);
  uint64_t after = ic_arch_cycles();
  CHECK(t.wall_ns - 777 >= before && t.wall_ns - 777 <= after);
  CHECK(t.cpu_ns == t.wall_ns - 777 + 5000 - 1000);
}
#endif

static void test_forced_clock_mode(void) {
  setenv("IC_REGION_CPUTIME", "clock", 1);
  CHECK(ic_regions_init(names, 1, 1));
  CHECK(!strcmp(ic_regions_cputime_mode(), "clock_gettime"));
  ic_regions_fini();
  unsetenv("IC_REGION_CPUTIME");
}

/* ic-run's program: its markers write into a row that belongs to ic-run (shared memory),
 * which fini must leave alone, and in raw-wall mode they keep counter ticks. */
static void test_borrowed_row(void) {
  ic_sample_t row[2] = {{.nivcsw = -1, .cpu = -1}, {.nivcsw = -1, .cpu = -1}};
  CHECK(!ic_regions_attach_row(names, 0, row, false));
  CHECK(ic_regions_attach_row(names, 2, row, false));
  IC_REGION_BEGIN(1);
  IC_REGION_END(1);
  IC_REGION_BEGIN(1);
  IC_REGION_END(1);
  IC_REGION_END(2); /* outside the declared regions */
  CHECK(row[1].entries == 2 && row[0].entries == 0);
  CHECK(row[1].cpu >= 0);
  CHECK(ic_regions_dropped() == 1);
  ic_regions_fini(); /* frees only what is ours: row lives on the stack */
#ifdef IC_ARCH_HAVE_CYCLES
  ic_sample_t wall[1] = {{.nivcsw = -1, .cpu = -1}};
  CHECK(ic_regions_attach_row(names, 1, wall, true));
  CHECK(!strcmp(ic_regions_cputime_mode(), "wall"));
  IC_REGION_BEGIN(0);
  IC_REGION_END(0);
  CHECK(wall[0].entries == 1 && wall[0].wall_ns == wall[0].cpu_ns);
  ic_regions_fini();
#endif
}

/* ic-run's own buffer: a sample measured outside the markers lands in the current row. */
static void test_record(void) {
  CHECK(ic_regions_init(names, 2, 2));
  ic_regions_set_rep(1);
  ic_regions_record(1, &(ic_sample_t){.wall_ns = 5, .cpu_ns = 4, .nivcsw = 0, .cpu = 3,
                                      .entries = 1});
  ic_regions_record(2, &(ic_sample_t){.entries = 1});
  const ic_sample_t *s = ic_regions_sample(1, 1);
  CHECK(s && s->wall_ns == 5 && s->cpu_ns == 4 && s->cpu == 3 && s->entries == 1);
  CHECK(ic_regions_sample(1, 0)->entries == 0);
  CHECK(ic_regions_dropped() == 1);
  ic_regions_fini();
}

int main(void) {
  test_bad_init();
  test_borrowed_row();
  test_record();
  test_round_trip();
  test_bounds();
  test_accumulates();
  test_extra_fields();
  test_cpu_time_is_cpu_time();
  test_forced_clock_mode();
#ifdef IC_ARCH_HAVE_CYCLES
  test_perf_page_arithmetic();
#endif
  return TEST_RESULT();
}
