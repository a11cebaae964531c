/* susan: SUSAN-style image processing (Smith & Brady) on a synthetic grey image of
 * rectangles and discs over a gradient, with noise. Both modes weigh each neighbour by a
 * brightness-similarity lookup table, the core of SUSAN's USAN:
 *  - smooth:  brightness- and distance-weighted mean over a 7×7 window;
 *  - corners: USAN area over the 37-pixel circular mask, response g - n below the
 *             geometric threshold g (half the maximum area), then 5×5 non-maximum
 *             suppression.
 * Its working set is a few image rows, so it is cache-friendly and sensitive mostly to
 * L1/L2 contention. The kernels live in susan_kernels.h, shared with examples/apps/image. */
#include <math.h>
#include <string.h>

#include "susan_kernels.h"
#include "victim.h"

enum { MODE_SMOOTH, MODE_CORNERS };
enum { R_SMOOTH = 1, R_CORNERS = 2 };
enum { O_WIDTH, O_HEIGHT, O_MODE, O_THRESHOLD };

typedef struct {
  size_t w, h;
  int mode;
  uint8_t *img, *out;
  uint32_t *resp;
  ic_mem_t mi, mo;
  susan_kernels_t k;
  uint64_t corners;
} susan_t;

static const char *const modes[] = {"smooth", "corners", NULL};

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
  susan_setup(&s->k, s->w, s->h, s->mode == MODE_CORNERS, (double)opt[O_THRESHOLD].u);
  make_image(s, seed);
  /* Borders are never written: they keep their input, or no corner response. */
  if (s->out)
    memcpy(s->out, s->img, (size_t)pixels);
  else
    memset(s->resp, 0, (size_t)pixels * sizeof(uint32_t));
  return s;
}

static void run_rep(void *state, int rep) {
  susan_t *s = state;
  (void)rep;
  if (s->mode == MODE_SMOOTH) {
    IC_REGION_BEGIN(R_SMOOTH);
    susan_smooth(&s->k, s->img, s->out);
    IC_REGION_END(R_SMOOTH);
  } else {
    IC_REGION_BEGIN(R_CORNERS);
    susan_usan(&s->k, s->img, s->resp);
    s->corners = susan_count_corners(&s->k, s->resp);
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

IC_VICTIM(susan, "SUSAN smoothing or corner detection on a synthetic image");
