/* The functions of image.comp, on the susan victim's kernels. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../../native/victims/susan_kernels.h"

#define W 256
#define H 256
#define THRESHOLD 20.0

typedef uint8_t image[W * H];
typedef uint32_t response[W * H];

static uint8_t clamp_u8(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* A gradient with rectangles and discs that move from frame to frame, and noise. */
void synthesize(int32_t i, image out) {
  uint32_t s = (uint32_t)i * 2654435761u + 12345u;
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++)
      out[y * W + x] = (uint8_t)(64 + 64 * x / W + 32 * y / H);
  for (int shape = 0; shape < 12; shape++) {
    s = s * 1664525u + 1013904223u;
    int cx = (int)(s >> 8) % W, cy = (int)(s >> 16) % H, r = 6 + (int)(s >> 27);
    uint8_t v = (uint8_t)(s >> 3);
    for (int y = cy - r; y <= cy + r; y++)
      for (int x = cx - r; x <= cx + r; x++)
        if (x >= 0 && y >= 0 && x < W && y < H && ((shape & 1) || (x - cx) * (x - cx) +
                                                                     (y - cy) * (y - cy) <= r * r))
          out[y * W + x] = v;
  }
  for (int k = 0; k < W * H; k++) {
    s = s * 1664525u + 1013904223u;
    out[k] = clamp_u8(out[k] + (int)((s >> 24) % 9) - 4);
  }
}

void smooth(const image in, image out) {
  susan_kernels_t k;
  susan_setup(&k, W, H, 0, THRESHOLD);
  memcpy(out, in, sizeof(image)); /* borders keep their input */
  susan_smooth(&k, in, out);
}

void usan(const image in, response out) {
  susan_kernels_t k;
  susan_setup(&k, W, H, 1, THRESHOLD);
  memset(out, 0, sizeof(response));
  susan_usan(&k, in, out);
}

int64_t corners(const response r) {
  susan_kernels_t k;
  susan_setup(&k, W, H, 1, THRESHOLD);
  return (int64_t)susan_count_corners(&k, r);
}

int64_t brightness(const image in) {
  int64_t sum = 0;
  for (int k = 0; k < W * H; k++)
    sum += in[k];
  return sum / (W * H);
}

void report(int32_t i, int64_t n, int64_t b, int32_t last) {
  static int64_t total;
  total += n;
  printf("frame %2d: %4lld corners, mean brightness %lld\n", (int)i, (long long)n, (long long)b);
  if (i == last)
    printf("image: %d frames, %lld corners\n", (int)last + 1, (long long)total);
}
