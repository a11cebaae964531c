#include "usage.h"

#include <math.h>

void ic_usage_reset(ic_usage_t *u) { *u = (ic_usage_t){0}; }

static unsigned back(unsigned i, unsigned steps) {
  return (i + IC_USAGE_RING - steps % IC_USAGE_RING) % IC_USAGE_RING;
}

bool ic_usage_active(const ic_usage_t *u, uint64_t idle_after_ns) {
  return u->changed && u->count && u->t_ns[u->newest] - u->last_change_ns <= idle_after_ns;
}

void ic_usage_add(ic_usage_t *u, uint64_t t_ns, uint64_t usage_ns, uint64_t idle_after_ns) {
  if (u->count) {
    uint64_t prev_t = u->t_ns[u->newest], prev_u = u->usage_ns[u->newest];
    if (usage_ns > prev_u) {
      /* Judged against the previous sample: was the group idle just before this? */
      if (!ic_usage_active(u, idle_after_ns))
        u->onset_ns = prev_t;
      u->last_change_ns = t_ns;
      u->changed = true;
    }
    u->newest = (u->newest + 1) % IC_USAGE_RING;
  }
  u->t_ns[u->newest] = t_ns;
  u->usage_ns[u->newest] = usage_ns;
  if (u->count < IC_USAGE_RING)
    u->count++;
}

double ic_usage_pct(const ic_usage_t *u, uint64_t window_ns) {
  if (u->count < 2)
    return NAN;
  uint64_t t1 = u->t_ns[u->newest], u1 = u->usage_ns[u->newest];
  unsigned oldest = u->count - 1, i = oldest;
  for (unsigned s = 1; s <= oldest; s++)
    if (t1 - u->t_ns[back(u->newest, s)] >= window_ns) {
      i = s;
      break;
    }
  unsigned from = back(u->newest, i);
  uint64_t dt = t1 - u->t_ns[from];
  uint64_t du = u1 > u->usage_ns[from] ? u1 - u->usage_ns[from] : 0;
  return dt ? 100.0 * (double)du / (double)dt : NAN;
}
