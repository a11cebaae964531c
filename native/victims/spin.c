/* spin: a fixed amount of register-only work per repetition, --iters multiply-adds on each
 * of four independent chains. It touches no memory, so nothing but the core itself can slow
 * it: the core-sharing probe (measure/core.py) times it beside a register-only spinner on
 * another CPU, which slows it only where the two CPUs are hardware threads of one core. Four
 * chains keep the multiplier busy (a chain waits on its own result), so a sibling's issue
 * slots and its share of the core's buffers show as time. */
#include "ic_arch.h"
#include "victim.h"

enum { R_SPIN = 1 };
enum { O_ITERS };

#define MUL 6364136223846793005ULL
#define ADD 1442695040888963407ULL

typedef struct {
  uint64_t iters;
  uint64_t x[4];
} spin_t;

static void *init(const ic_optval_t *opt, uint64_t seed) {
  spin_t *s = ic_victim_state(sizeof *s);
  s->iters = opt[O_ITERS].u;
  for (unsigned c = 0; c < 4; c++)
    s->x[c] = (seed + c) | 1;
  return s;
}

static void run_rep(void *state, int rep) {
  (void)rep;
  spin_t *s = state;
  uint64_t a = s->x[0], b = s->x[1], c = s->x[2], d = s->x[3];
  IC_REGION_BEGIN(R_SPIN);
  for (uint64_t i = 0; i < s->iters; i++) {
    a = a * MUL + ADD;
    b = b * MUL + ADD;
    c = c * MUL + ADD;
    d = d * MUL + ADD;
    IC_OPAQUE(a);
    IC_OPAQUE(b);
    IC_OPAQUE(c);
    IC_OPAQUE(d);
  }
  IC_REGION_END(R_SPIN);
  s->x[0] = a;
  s->x[1] = b;
  s->x[2] = c;
  s->x[3] = d;
}

static uint64_t checksum(const void *state) {
  const spin_t *s = state;
  return ic_fold(IC_FOLD_INIT, s->x, sizeof s->x);
}

static void fini(void *state) { free(state); }

static const ic_opt_t opts[] = {
    [O_ITERS] = {.name = "iters", .type = IC_OPT_U64, .def = "400000", .min = 1,
                 .max = 1ull << 40, .help = "multiply-adds per chain and repetition"},
};

static const char *const regions[] = {"spin.work", NULL};

IC_VICTIM(spin, "register-only work, a fixed amount per repetition (the core-sharing probe)");
