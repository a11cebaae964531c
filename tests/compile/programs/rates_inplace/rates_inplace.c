#include <stdio.h>

#include "composition.h"

void gen(int i, int *out) {
  out[0] = i;
  out[1] = 100 * i;
}

void scale(int *x) {
  x[0] *= 2;
  x[1] *= 3;
}

int sum(const int *x) {
  int s = 0;
  for (int k = 0; k < 6; k++) s += x[k];
  return s;
}

void show(int n, int y) { printf("%d %d\n", n, y); }
