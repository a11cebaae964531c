/* The victim's side of the harness protocol (docs/native-contract.md, "Victim lifecycle"),
 * shared by ic-victim's driver and ic-run, which speaks it for a user's program: the options
 * the harness gives every victim, the clock choice, the --sync handshake and the rep line. */
#ifndef IC_PROTOCOL_H
#define IC_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ic_common.h"
#include "ic_opts.h"

enum { IC_CLOCK_CPU, IC_CLOCK_WALL, IC_CLOCK_AUTO };
extern const char *const ic_protocol_clocks[];

#define IC_OPT_ENTRY_REPS                                                                  \
  {.name = "reps", .type = IC_OPT_U64, .def = "100", .min = 1, .max = 1000000,             \
   .help = "repetitions, one sample per region each"}
#define IC_OPT_ENTRY_SYNC                                                                  \
  {.name = "sync", .type = IC_OPT_FLAG,                                                    \
   .help = "before each repetition read a line from stdin: 'go' runs it, "                 \
           "'quit' or EOF ends the run (samples are still written)"}
#define IC_OPT_ENTRY_CLOCK                                                                 \
  {.name = "clock", .type = IC_OPT_ENUM, .def = "cpu", .choices = ic_protocol_clocks,      \
   .help = "what the markers time: cpu (thread CPU time), wall (the cycle "                \
           "counter; repetitions with an involuntary context switch are marked "           \
           "descheduled), auto (wall where CPU time would cost a system call)"}

/* Switches the markers to the clock asked for (IC_CLOCK_*) after ic_regions_init and says
 * why in `why`; --clock wall on a host without a usable counter exits 3. */
void ic_protocol_choose_clock(uint64_t asked, char *why, size_t cap);
/* What the ready line says of the run, after its event, pid and kind. */
typedef struct {
  int64_t cpu; /* -1: not pinned */
  bool rt, mlock, sync;
  uint64_t reps, seed;
  const char *clock_why;
} ic_protocol_ready_t;
void ic_protocol_ready_fields(ic_json_t *j, const ic_protocol_ready_t *r);
/* The end line's clock fields and the marker calls that found no slot. */
void ic_protocol_end_fields(ic_json_t *j, uint64_t dropped);
/* Whether the markers run on the wall clock. */
bool ic_protocol_wall(void);
/* --sync: reads one line; "go" runs the repetition, anything else ends the run. */
bool ic_protocol_go(void);
/* The rep line: region 0's times of `rep`, so a controller can decide while the run goes on
 * (block sizing, adaptive stopping); the samples themselves still come at the end. */
void ic_protocol_rep_line(int rep);

#endif
