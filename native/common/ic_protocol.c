/* The victim side of the harness protocol (ic_protocol.h). */
#include "ic_protocol.h"

#include <stdio.h>
#include <string.h>

#include "ic_common.h"
#include "ic_region.h"

const char *const ic_protocol_clocks[] = {"cpu", "wall", "auto", NULL};

bool ic_protocol_wall(void) { return !strcmp(ic_regions_cputime_mode(), "wall"); }

void ic_protocol_choose_clock(uint64_t asked, char *why_out, size_t cap) {
  if (asked == IC_CLOCK_CPU) {
    snprintf(why_out, cap, "thread CPU time (%s), as asked", ic_regions_cputime_mode());
    return;
  }
  if (asked == IC_CLOCK_AUTO && !strcmp(ic_regions_cputime_mode(), "perf_mmap")) {
    snprintf(why_out, cap, "thread CPU time: the perf user page gives it without a system call");
    return;
  }
  char why[192];
  if (ic_regions_use_wall_clock(why, sizeof why)) {
    snprintf(why_out, cap, "%s: %s",
             asked == IC_CLOCK_AUTO ? "thread CPU time would cost a system call per marker here"
                                    : "wall clock, as asked",
             why);
    return;
  }
  if (asked == IC_CLOCK_WALL)
    ic_die(IC_EXIT_UNSUPPORTED, "--clock wall: %s", why);
  snprintf(why_out, cap, "thread CPU time (%s): no wall-clock counter, %s",
           ic_regions_cputime_mode(), why);
}

void ic_protocol_ready_fields(ic_json_t *j, const ic_protocol_ready_t *r) {
  ic_json_i64(j, "cpu", r->cpu);
  ic_json_bool(j, "rt", r->rt);
  ic_json_bool(j, "mlock", r->mlock);
  ic_json_u64(j, "reps", r->reps);
  ic_json_bool(j, "sync", r->sync);
  ic_json_u64(j, "seed", r->seed);
  ic_json_str(j, "cputime_mode", ic_regions_cputime_mode());
  ic_json_str(j, "clock", ic_protocol_wall() ? "wall" : "cpu");
  ic_json_str(j, "clock_why", r->clock_why);
}

void ic_protocol_end_fields(ic_json_t *j, uint64_t dropped) {
  ic_json_str(j, "cputime_mode", ic_regions_cputime_mode());
  ic_json_str(j, "clock", ic_protocol_wall() ? "wall" : "cpu");
  ic_json_str(j, "nivcsw_scope", "total");
  ic_json_u64(j, "dropped", dropped);
}

bool ic_protocol_go(void) {
  char line[64];
  if (!fgets(line, sizeof line, stdin))
    return false;
  line[strcspn(line, "\r\n")] = '\0';
  if (!strcmp(line, "go"))
    return true;
  if (strcmp(line, "quit"))
    ic_warn("--sync: unknown command '%s', stopping", line);
  return false;
}

void ic_protocol_rep_line(int rep) {
  const ic_sample_t *s = ic_regions_sample(rep, 0);
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "rep");
  ic_json_i64(&j, "rep", rep);
  if (s && s->entries) {
    ic_json_u64(&j, "wall_ns", ic_regions_ticks_to_ns(s->wall_ns));
    ic_json_u64(&j, "cpu_ns", ic_regions_ticks_to_ns(s->cpu_ns));
    ic_json_i64(&j, "nivcsw", s->nivcsw);
  }
  ic_json_end(&j);
}
