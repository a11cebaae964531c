#include "region_watch.h"

#include <stdlib.h>

#include "ic_common.h"
#include "ic_prefault.h"
#include "ic_region.h"

/* Window executions kept per job; a longer record would only cost memory for a monitor
 * window that is finer than what freezing can follow. */
#define PER_JOB 8
#define MAX_RECORDS (1u << 16)

typedef struct {
  uint64_t job, enter_ns, exit_ns;
  int id;
} record_t;

typedef struct {
  ic_notify_t *notify;
  uint64_t job;
  uint64_t entered[32]; /* entry time of each open window region, 0: not open */
  record_t *records;
  size_t n, cap;
  uint64_t dropped;
} watch_t;

static watch_t w;

static void on_region(int id, bool enter) {
  uint64_t t = ic_notify_region(w.notify, id, enter);
  if (!t)
    return;
  if (enter) {
    w.entered[id] = t;
    return;
  }
  /* An exit without its entry: the monitor installed its windows inside the region. */
  if (!w.entered[id])
    return;
  if (w.n < w.cap)
    w.records[w.n++] = (record_t){w.job, w.entered[id], t, id};
  else
    w.dropped++;
  w.entered[id] = 0;
}

void ic_region_watch_begin(ic_notify_t *n, uint64_t jobs) {
  uint64_t cap = jobs < MAX_RECORDS / PER_JOB ? jobs * PER_JOB : MAX_RECORDS;
  w = (watch_t){.notify = n, .cap = (size_t)cap};
  if (!(w.records = malloc(w.cap * sizeof *w.records)))
    ic_die(IC_EXIT_FAIL, "cannot allocate the record of %zu window executions", w.cap);
  ic_prefault(w.records, w.cap * sizeof *w.records); /* no page fault inside a region */
  ic_region_watch_g = on_region;
}

void ic_region_watch_job(uint64_t job) { w.job = job; }

void ic_region_watch_end(void) { ic_region_watch_g = NULL; }

uint64_t ic_region_watch_print(const char *name) {
  char region[IC_NOTIFY_NAME_LEN];
  for (size_t i = 0; i < w.n; i++) {
    const record_t *r = &w.records[i];
    ic_json_t j;
    ic_json_begin(&j, stdout);
    ic_json_str(&j, "event", "window");
    ic_json_str(&j, "name", name);
    ic_json_u64(&j, "job", r->job);
    ic_notify_region_name(w.notify, r->id, region);
    ic_json_str(&j, "region", region);
    ic_json_u64(&j, "enter_ns", r->enter_ns);
    ic_json_u64(&j, "exit_ns", r->exit_ns);
    ic_json_end(&j);
  }
  free(w.records);
  w.records = NULL;
  return w.dropped;
}
