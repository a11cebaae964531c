/* A control task of the kind intercore's users run: every step filters a sensor sample (FIR),
 * looks the filtered value up in a calibration map (bilinear interpolation over a table),
 * and closes a PID loop on the result. It is nobody's victim: an ordinary program that marks
 * its three stages with ic_user.h, so `intercore measure -- ./control` reports each stage's
 * slowdown (docs/user-programs.md). Strict C11: it builds with -std=c11 and no feature macro.
 *
 *   ./control [--steps N] [--map ROWS]    prints the plant's final state
 */
#include <ic_user.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FIR, LUT, PID };
static const char *const regions[] = {"fir", "lut", "pid"};

enum { TAPS = 64 };

typedef struct {
  double kp, ki, kd, integral, last_error;
} pid_t_;

/* Deterministic sensor noise: the same input every run, so every run does the same work. */
static double noise(unsigned *state) {
  *state = *state * 1664525u + 1013904223u;
  return (double)(*state >> 8) / (double)(1u << 24) - 0.5;
}

static double fir(const double *coeff, const double *history, int newest) {
  double acc = 0.0;
  for (int k = 0; k < TAPS; k++)
    acc += coeff[k] * history[(newest - k + TAPS) % TAPS];
  return acc;
}

/* A calibration map over (signal, load), both scaled into [0, 1), read by bilinear
 * interpolation: rows x rows doubles, large enough that it lives in the shared cache. */
static double lookup(const double *map, int rows, double x, double y) {
  double fx = x * (rows - 1), fy = y * (rows - 1);
  int i = (int)fx, j = (int)fy;
  double ax = fx - i, ay = fy - j;
  const double *r0 = map + (size_t)i * rows, *r1 = r0 + rows;
  return (1 - ax) * ((1 - ay) * r0[j] + ay * r0[j + 1]) + ax * ((1 - ay) * r1[j] + ay * r1[j + 1]);
}

static double pid_step(pid_t_ *c, double setpoint, double measured, double dt) {
  double error = setpoint - measured;
  c->integral += error * dt;
  double derivative = (error - c->last_error) / dt;
  c->last_error = error;
  return c->kp * error + c->ki * c->integral + c->kd * derivative;
}

static double clamp01(double v) { return v < 0 ? 0 : v > 0.999 ? 0.999 : v; }

static long arg(int argc, char **argv, const char *name, long def, long min, long max) {
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], name)) {
      char *end;
      long v = strtol(argv[i + 1], &end, 10);
      if (*end || v < min || v > max) {
        fprintf(stderr, "control: %s: want %ld..%ld, got '%s'\n", name, min, max, argv[i + 1]);
        exit(2);
      }
      return v;
    }
  return def;
}

int main(int argc, char **argv) {
  long steps = arg(argc, argv, "--steps", 20000, 1, 100000000);
  int rows = (int)arg(argc, argv, "--map", 512, 2, 8192);
  ic_user_regions(regions, 3);

  double coeff[TAPS], history[TAPS] = {0};
  for (int k = 0; k < TAPS; k++)
    coeff[k] = 1.0 / TAPS;
  double *map = malloc((size_t)rows * (size_t)rows * sizeof *map);
  if (!map) {
    fprintf(stderr, "control: cannot allocate the %dx%d map\n", rows, rows);
    return 1;
  }
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < rows; j++)
      map[(size_t)i * rows + j] = (double)i / rows * (1.0 + 0.5 * (double)j / rows);

  pid_t_ pid = {.kp = 0.8, .ki = 0.2, .kd = 0.01};
  unsigned seed = 12345u;
  double plant = 0.0, load = 0.3, u = 0.0;
  for (long s = 0; s < steps; s++) {
    int newest = (int)(s % TAPS);
    history[newest] = plant + 0.05 * noise(&seed);
    load = clamp01(load + 0.01 * noise(&seed));

    IC_REGION_BEGIN(FIR);
    double filtered = fir(coeff, history, newest);
    IC_REGION_END(FIR);

    IC_REGION_BEGIN(LUT);
    /* Successive steps read far-apart rows, as a map indexed by a noisy signal does. */
    double calibrated = lookup(map, rows, clamp01(filtered + 0.5 * noise(&seed) + 0.5), load);
    IC_REGION_END(LUT);

    IC_REGION_BEGIN(PID);
    u = pid_step(&pid, 0.5, calibrated, 0.01);
    IC_REGION_END(PID);

    plant += 0.01 * (u - plant);
  }
  printf("control: %ld steps, plant %.6f, last command %.6f\n", steps, plant, u);
  free(map);
  return 0;
}
