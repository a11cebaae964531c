/* susan: SUSAN-style image processing (Smith & Brady) on a synthetic grey image of
 * rectangles and discs over a gradient, with noise. Both modes weigh each neighbour by a
 * brightness-similarity lookup table, the core of SUSAN's USAN:
 *  - smooth:  brightness- and distance-weighted mean over a 7×7 window;
 *  - corners: USAN area over the 37-pixel circular mask, response g - n below the
 *             geometric threshold g (half the maximum area), then 5×5 non-maximum
 *             suppression.
 * Its working set is a few image rows, so it is cache-friendly and sensitive mostly to
 * L1/L2 contention. */
#include <math.h>
#include <string.h>

#include "victim.h"

enum { MODE_SMOOTH, MODE_CORNERS };
enum { R_SMOOTH = 1, R_CORNERS = 2 };
enum { O_WIDTH, O_HEIGHT, O_MODE, O_THRESHOLD };
enum { RADIUS = 3, SIDE = 2 * RADIUS + 1, MASK_MAX = SIDE * SIDE, NMS = 2, LUT_SCALE = 100 };

typedef struct {
  size_t w, h;
  int mode;
  uint8_t *img, *out;
  uint32_t *resp;
  ic_mem_t mi, mo;
  uint32_t lut[511];              /* similarity of a brightness difference d at [d + 255] */
  uint32_t spatial[SIDE][SIDE];   /* smoothing: distance weight, 0 at the centre */
  ptrdiff_t mask[MASK_MAX];       /* corners: offsets of the circular mask */
  int nmask;
  uint64_t corners;
} susan_t;

static const char *const modes[] = {"smooth", "corners", NULL};

/* SUSAN's similarity: exp(-(d/t)^2) for smoothing, the sharper exp(-(d/t)^6) for
 * corners. */
static void build_lut(susan_t *s, double t) {
  double power = s->mode == MODE_SMOOTH ? 2.0 : 6.0;
  for (int d = -255; d <= 255; d++)
    s->lut[d + 255] = (uint32_t)lround(LUT_SCALE * exp(-pow(abs(d) / t, power)));
}

static void build_windows(susan_t *s) {
  const double sigma = 2.0;
  s->nmask = 0;
  for (int dy = -RADIUS; dy <= RADIUS; dy++)
    for (int dx = -RADIUS; dx <= RADIUS; dx++) {
      int r2 = dx * dx + dy * dy;
      s->spatial[dy + RADIUS][dx + RADIUS] =
          r2 ? (uint32_t)lround(LUT_SCALE * exp(-r2 / (2 * sigma * sigma))) : 0;
      /* r² <= 11 gives SUSAN's 37-pixel disc; the nucleus itself is left out. */
      if (r2 && r2 <= 11)
        s->mask[s->nmask++] = (ptrdiff_t)dy * (ptrdiff_t)s->w + dx;
    }
}

static uint8_t clamp_u8(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

static void draw_shape(susan_t *s, ic_rng_t *r) {
  size_t w = s->w, h = s->h, small = w < h ? w : h;
  long cx = (long)(ic_rng_next(r) % w), cy = (long)(ic_rng_next(r) % h);
  long size = 4 + (long)(ic_rng_next(r) % (small / 8 + 1));
  uint8_t v = (uint8_t)ic_rng_next(r);
  bool disc = ic_rng_next(r) & 1;
  for (long y = cy - size; y <= cy + size; y++)
    for (long x = cx - size; x <= cx + size; x++) {
      if (x < 0 || y < 0 || x >= (long)w || y >= (long)h)
        continue;
      if (disc && (x - cx) * (x - cx) + (y - cy) * (y - cy) > size * size)
        continue;
      s->img[(size_t)y * w + (size_t)x] = v;
    }
}

static void make_image(susan_t *s, uint64_t seed) {
  ic_rng_t r;
  ic_rng_seed(&r, seed);
  for (size_t y = 0; y < s->h; y++)
    for (size_t x = 0; x < s->w; x++)
      s->img[y * s->w + x] = (uint8_t)(64 + 64 * x / s->w + 32 * y / s->h);
  size_t shapes = 8 + s->w * s->h / 32768;
  for (size_t i = 0; i < shapes; i++)
    draw_shape(s, &r);
  for (size_t i = 0; i < s->w * s->h; i++)
    s->img[i] = clamp_u8(s->img[i] + (int)(ic_rng_next(&r) % 9) - 4);
}

static void *init(const ic_optval_t *opt, uint64_t seed) {
  susan_t *s = ic_victim_state(sizeof *s);
  s->w = (size_t)opt[O_WIDTH].u;
  s->h = (size_t)opt[O_HEIGHT].u;
  s->mode = (int)opt[O_MODE].u;
  uint64_t pixels = (uint64_t)s->w * s->h;
  s->img = ic_victim_alloc(&s->mi, pixels, 1, "the image");
  if (s->mode == MODE_SMOOTH)
    s->out = ic_victim_alloc(&s->mo, pixels, 1, "the smoothed image");
  else
    s->resp = ic_victim_alloc(&s->mo, pixels, sizeof(uint32_t), "the corner response");
  build_lut(s, (double)opt[O_THRESHOLD].u);
  build_windows(s);
  make_image(s, seed);
  /* Borders are never written: they keep their input, or no corner response. */
  if (s->out)
    memcpy(s->out, s->img, (size_t)pixels);
  else
    memset(s->resp, 0, (size_t)pixels * sizeof(uint32_t));
  return s;
}

static void smooth(susan_t *s) {
  const size_t w = s->w, h = s->h;
  for (size_t y = RADIUS; y < h - RADIUS; y++)
    for (size_t x = RADIUS; x < w - RADIUS; x++) {
      const uint8_t centre = s->img[y * w + x];
      const uint32_t *sim = &s->lut[255 - centre];
      uint32_t total = 0, sum = 0;
      for (int dy = 0; dy < SIDE; dy++) {
        const uint8_t *row = &s->img[(y + (size_t)dy - RADIUS) * w + x - RADIUS];
        for (int dx = 0; dx < SIDE; dx++) {
          uint32_t wgt = s->spatial[dy][dx] * sim[row[dx]];
          total += wgt;
          sum += wgt * row[dx];
        }
      }
      s->out[y * w + x] = total ? (uint8_t)((sum + total / 2) / total) : centre;
    }
}

static void usan_response(susan_t *s) {
  const size_t w = s->w, h = s->h;
  const uint32_t g = (uint32_t)s->nmask * LUT_SCALE / 2;
  for (size_t y = RADIUS; y < h - RADIUS; y++)
    for (size_t x = RADIUS; x < w - RADIUS; x++) {
      const uint8_t *p = &s->img[y * w + x];
      const uint32_t *sim = &s->lut[255 - *p];
      uint32_t n = 0;
      for (int i = 0; i < s->nmask; i++)
        n += sim[p[s->mask[i]]];
      s->resp[y * w + x] = n < g ? g - n : 0;
    }
}

static bool is_local_max(const susan_t *s, size_t y, size_t x) {
  const uint32_t v = s->resp[y * s->w + x];
  for (size_t yy = y - NMS; yy <= y + NMS; yy++)
    for (size_t xx = x - NMS; xx <= x + NMS; xx++)
      if (s->resp[yy * s->w + xx] > v)
        return false;
  return true;
}

static uint64_t count_corners(const susan_t *s) {
  uint64_t n = 0;
  for (size_t y = RADIUS + NMS; y < s->h - RADIUS - NMS; y++)
    for (size_t x = RADIUS + NMS; x < s->w - RADIUS - NMS; x++)
      n += s->resp[y * s->w + x] && is_local_max(s, y, x);
  return n;
}

static void run_rep(void *state, int rep) {
  susan_t *s = state;
  (void)rep;
  if (s->mode == MODE_SMOOTH) {
    IC_REGION_BEGIN(R_SMOOTH);
    smooth(s);
    IC_REGION_END(R_SMOOTH);
  } else {
    IC_REGION_BEGIN(R_CORNERS);
    usan_response(s);
    s->corners = count_corners(s);
    IC_REGION_END(R_CORNERS);
  }
}

static uint64_t checksum(const void *state) {
  const susan_t *s = state;
  uint64_t pixels = (uint64_t)s->w * s->h;
  if (s->mode == MODE_SMOOTH)
    return ic_fold(IC_FOLD_INIT, s->out, (size_t)pixels);
  uint64_t h = ic_fold(IC_FOLD_INIT, s->resp, (size_t)pixels * sizeof(uint32_t));
  return ic_fold(h, &s->corners, sizeof s->corners);
}

static void fini(void *state) {
  susan_t *s = state;
  ic_mem_free(&s->mi);
  ic_mem_free(&s->mo);
  free(s);
}

static const ic_opt_t opts[] = {
    [O_WIDTH] = {.name = "width", .type = IC_OPT_U64, .def = "1024", .min = 16,
                 .max = 1u << 16, .help = "image width in pixels"},
    [O_HEIGHT] = {.name = "height", .type = IC_OPT_U64, .def = "1024", .min = 16,
                  .max = 1u << 16, .help = "image height in pixels"},
    [O_MODE] = {.name = "mode", .type = IC_OPT_ENUM, .def = "smooth", .choices = modes,
                .help = "brightness-weighted smoothing, or USAN corner detection"},
    [O_THRESHOLD] = {.name = "threshold", .type = IC_OPT_U64, .def = "20", .min = 1,
                     .max = 255, .help = "brightness difference t of the similarity LUT"},
};

/* Both modes' regions are declared so a region id means the same for every run; a run
 * records only its mode's. */
static const char *const regions[] = {"susan.smooth", "susan.corners", NULL};

const ic_victim_t ic_victim_susan = {
    .name = "susan",
    .help = "SUSAN smoothing or corner detection on a synthetic image",
    .opts = opts,
    .nopts = IC_NOPTS(opts),
    .regions = regions,
    .init = init,
    .run_rep = run_rep,
    .checksum = checksum,
    .fini = fini,
};
