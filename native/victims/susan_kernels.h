/* SUSAN's kernels (Smith & Brady), shared by the susan victim and the image pipeline of
 * examples/apps/image: header-only, plain C11, no dependency on the victim framework.
 *
 *  - smoothing: brightness- and distance-weighted mean over a 7x7 window;
 *  - corners: USAN area over the 37-pixel circular mask, response g - n below the geometric
 *    threshold g (half the maximum area), then 5x5 non-maximum suppression.
 * Both weigh each neighbour by a brightness-similarity lookup table, the core of SUSAN. */
#ifndef IC_SUSAN_KERNELS_H
#define IC_SUSAN_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

enum { SUSAN_RADIUS = 3, SUSAN_SIDE = 2 * SUSAN_RADIUS + 1,
       SUSAN_MASK_MAX = SUSAN_SIDE * SUSAN_SIDE, SUSAN_NMS = 2, SUSAN_LUT_SCALE = 100 };

typedef struct {
  size_t w, h;
  uint32_t lut[511];                       /* similarity of a difference d at [d + 255] */
  uint32_t spatial[SUSAN_SIDE][SUSAN_SIDE]; /* smoothing: distance weight, 0 at the centre */
  ptrdiff_t mask[SUSAN_MASK_MAX];          /* corners: offsets of the circular mask */
  int nmask;
} susan_kernels_t;

/* SUSAN's similarity: exp(-(d/t)^2) for smoothing, the sharper exp(-(d/t)^6) for corners;
 * the windows for an image `w` pixels wide. */
static inline void susan_setup(susan_kernels_t *k, size_t w, size_t h, int corners, double t) {
  const double power = corners ? 6.0 : 2.0, sigma = 2.0;
  k->w = w, k->h = h;
  for (int d = -255; d <= 255; d++)
    k->lut[d + 255] = (uint32_t)lround(SUSAN_LUT_SCALE * exp(-pow(abs(d) / t, power)));
  k->nmask = 0;
  for (int dy = -SUSAN_RADIUS; dy <= SUSAN_RADIUS; dy++)
    for (int dx = -SUSAN_RADIUS; dx <= SUSAN_RADIUS; dx++) {
      int r2 = dx * dx + dy * dy;
      k->spatial[dy + SUSAN_RADIUS][dx + SUSAN_RADIUS] =
          r2 ? (uint32_t)lround(SUSAN_LUT_SCALE * exp(-r2 / (2 * sigma * sigma))) : 0;
      /* r^2 <= 11 gives SUSAN's 37-pixel disc; the nucleus itself is left out. */
      if (r2 && r2 <= 11)
        k->mask[k->nmask++] = (ptrdiff_t)dy * (ptrdiff_t)w + dx;
    }
}

/* Borders (SUSAN_RADIUS pixels) are not written. */
static inline void susan_smooth(const susan_kernels_t *k, const uint8_t *img, uint8_t *out) {
  const size_t w = k->w, h = k->h;
  for (size_t y = SUSAN_RADIUS; y < h - SUSAN_RADIUS; y++)
    for (size_t x = SUSAN_RADIUS; x < w - SUSAN_RADIUS; x++) {
      const uint8_t centre = img[y * w + x];
      const uint32_t *sim = &k->lut[255 - centre];
      uint32_t total = 0, sum = 0;
      for (int dy = 0; dy < SUSAN_SIDE; dy++) {
        const uint8_t *row = &img[(y + (size_t)dy - SUSAN_RADIUS) * w + x - SUSAN_RADIUS];
        for (int dx = 0; dx < SUSAN_SIDE; dx++) {
          uint32_t wgt = k->spatial[dy][dx] * sim[row[dx]];
          total += wgt;
          sum += wgt * row[dx];
        }
      }
      out[y * w + x] = total ? (uint8_t)((sum + total / 2) / total) : centre;
    }
}

static inline void susan_usan(const susan_kernels_t *k, const uint8_t *img, uint32_t *resp) {
  const size_t w = k->w, h = k->h;
  const uint32_t g = (uint32_t)k->nmask * SUSAN_LUT_SCALE / 2;
  for (size_t y = SUSAN_RADIUS; y < h - SUSAN_RADIUS; y++)
    for (size_t x = SUSAN_RADIUS; x < w - SUSAN_RADIUS; x++) {
      const uint8_t *p = &img[y * w + x];
      const uint32_t *sim = &k->lut[255 - *p];
      uint32_t n = 0;
      for (int i = 0; i < k->nmask; i++)
        n += sim[p[k->mask[i]]];
      resp[y * w + x] = n < g ? g - n : 0;
    }
}

static inline int susan_is_local_max(const susan_kernels_t *k, const uint32_t *resp, size_t y,
                                     size_t x) {
  const uint32_t v = resp[y * k->w + x];
  for (size_t yy = y - SUSAN_NMS; yy <= y + SUSAN_NMS; yy++)
    for (size_t xx = x - SUSAN_NMS; xx <= x + SUSAN_NMS; xx++)
      if (resp[yy * k->w + xx] > v)
        return 0;
  return 1;
}

static inline uint64_t susan_count_corners(const susan_kernels_t *k, const uint32_t *resp) {
  uint64_t n = 0;
  for (size_t y = SUSAN_RADIUS + SUSAN_NMS; y < k->h - SUSAN_RADIUS - SUSAN_NMS; y++)
    for (size_t x = SUSAN_RADIUS + SUSAN_NMS; x < k->w - SUSAN_RADIUS - SUSAN_NMS; x++)
      n += resp[y * k->w + x] && susan_is_local_max(k, resp, y, x);
  return n;
}

#endif
