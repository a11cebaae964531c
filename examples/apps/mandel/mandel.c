/* The functions of mandel.comp: a Mandelbrot image row by row, its checksum and a small
 * character preview. Integer escape counts from IEEE double arithmetic without
 * contraction are the same with any conforming compiler. */
#include <stdint.h>
#include <stdio.h>

#define W 480
typedef uint16_t row[W];
typedef double view[4];

static uint64_t fold = 1469598103934665603ull;
static uint64_t inside;
static char preview[8][61];

void frame(view out) {
  out[0] = -2.2;       /* left */
  out[1] = 1.2;        /* top */
  out[2] = 3.2 / W;    /* step per pixel */
  out[3] = 1500.0;     /* iteration limit */
}

void escape(int32_t y, const view v, row out) {
  const int limit = (int)v[3];
  const double ci = v[1] - y * v[2];
  for (int x = 0; x < W; x++) {
    const double cr = v[0] + x * v[2];
    double zr = 0.0, zi = 0.0;
    int n = 0;
    while (n < limit && zr * zr + zi * zi <= 4.0) {
      const double t = zr * zr - zi * zi + cr;
      zi = 2.0 * zr * zi + ci;
      zr = t;
      n++;
    }
    out[x] = (uint16_t)n;
  }
}

void shade(int32_t y, const row r, int32_t last) {
  for (int x = 0; x < W; x++) {
    fold = (fold ^ r[x]) * 1099511628211ull;
    inside += r[x] == 1500;
  }
  if (y % 40 == 20)
    for (int c = 0; c < 60; c++)
      preview[y / 40][c] = " .:-=+*#%@"[r[c * 8] >= 1500 ? 9 : r[c * 8] % 9];
  if (y == last) {
    for (int k = 0; k < 8; k++)
      printf("%s\n", preview[k]);
    printf("mandel: %d rows, %llu points inside, checksum %016llx\n", (int)last + 1,
           (unsigned long long)inside, (unsigned long long)fold);
  }
}
