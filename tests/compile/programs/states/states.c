/* The functions of states.comp: each stateful function keeps its state in its own
 * globals, so the two may run on different threads at the same time. */
#include <stdio.h>

int sample(int i) { return (i * 37) % 11; }

static int counts[4];
void histogram(int v) { counts[v % 4] += 1; }

static int best = -1, new_best;
void track(int v) {
  if (v > best) {
    best = v;
    new_best += 1;
  }
}

void report(int rises) {
  printf("histogram %d %d %d %d\n", counts[0], counts[1], counts[2], counts[3]);
  printf("peak %d new %d rises %d\n", best, new_best, rises);
}
