/* A best-effort image filter as a periodic task (ic_task.h), the example's co-runner beside
 * the bandwidth writer: a 3x3 box blur of an 8-bit --width x --height image into a second
 * one, --rows-per-job rows a job, each job taking the next band and wrapping at the bottom,
 * as a camera pipeline works through its frames. Every pixel is read from three rows and
 * written once, and no band is touched again until the whole image has streamed past.
 *
 * At the defaults (4096 x 4096, two images of 16 MiB) the images are far larger than any
 * private cache and than a board's shared one, so the filter streams through the shared
 * cache and memory; on a core it shares with another task it leaves that task's cached data
 * evicted whenever it ran in between. Where the shared cache is larger than both images (a
 * server's, as this development VM's), pass a larger --height.
 *
 *   ./image_filter --period 20ms --jobs 100 -- --width 4096 --height 4096 --rows-per-job 512
 *
 * The runner's options come first (./image_filter --help lists them); the program's own
 * follow. It prints ic-periodic's lines on stdout, then a checksum of the output on stderr. */
#include <ic_task.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "args.h"

typedef struct {
  long width, height, rows_per_job, next_row;
  uint8_t *in, *out;
} filter_state;

/* Row `y` of the input, clamped at the top and bottom edges. */
static const uint8_t *row(const filter_state *f, long y) {
  y = y < 0 ? 0 : y >= f->height ? f->height - 1 : y;
  return f->in + (size_t)y * (size_t)f->width;
}

static void blur_row(filter_state *f, long y) {
  const uint8_t *up = row(f, y - 1), *mid = row(f, y), *down = row(f, y + 1);
  uint8_t *dst = f->out + (size_t)y * (size_t)f->width;
  long w = f->width;
  for (long x = 0; x < w; x++) {
    long l = x > 0 ? x - 1 : 0, r = x + 1 < w ? x + 1 : w - 1;
    unsigned sum = up[l] + up[x] + up[r] + mid[l] + mid[x] + mid[r] + down[l] + down[x] + down[r];
    dst[x] = (uint8_t)((sum + 4) / 9);
  }
}

static void job(void *ctx, uint64_t n) {
  (void)n;
  filter_state *f = ctx;
  for (long i = 0; i < f->rows_per_job; i++) {
    blur_row(f, f->next_row);
    f->next_row = (f->next_row + 1) % f->height;
  }
}

int main(int argc, char **argv) {
  argc = ic_task_options(argc, argv);
  filter_state f = {.width = arg_long(argc, argv, "--width", 4096, 3, 1L << 16),
                    .height = arg_long(argc, argv, "--height", 4096, 3, 1L << 20)};
  f.rows_per_job = arg_long(argc, argv, "--rows-per-job", 512, 1, f.height);
  size_t pixels = (size_t)f.width * (size_t)f.height;
  f.in = malloc(pixels);
  f.out = malloc(pixels);
  if (!f.in || !f.out) {
    fprintf(stderr, "%s: cannot allocate two %ldx%ld images\n", argv[0], f.width, f.height);
    return 1;
  }
  /* A gradient with a fine texture on it: edges for the blur to soften. Writing every
   * pixel of both images now also faults their pages in before the first job. */
  for (size_t p = 0; p < pixels; p++) {
    f.in[p] =
        (uint8_t)(((p % (size_t)f.width) * 255 / (size_t)f.width) ^ ((p * 2654435761u) >> 24));
    f.out[p] = 0;
  }
  int status = ic_task_run(job, &f);
  unsigned long sum = 0;
  for (size_t p = 0; p < pixels; p++)
    sum += f.out[p];
  fprintf(stderr, "image_filter: %ldx%ld, %ld rows a job, output sum %lu\n", f.width, f.height,
          f.rows_per_job, sum);
  free(f.in);
  free(f.out);
  return status;
}
