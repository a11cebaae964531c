#include "controller.h"

#include <ic_user.h>

#include <stdio.h>
#include <stdlib.h>

enum { FIR, LUT, PID };
static const char *const regions[] = {"fir", "lut", "pid"};

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

static double pid_step(pid_state *c, double setpoint, double measured, double dt) {
  double error = setpoint - measured;
  c->integral += error * dt;
  double derivative = (error - c->last_error) / dt;
  c->last_error = error;
  return c->kp * error + c->ki * c->integral + c->kd * derivative;
}

static double clamp01(double v) { return v < 0 ? 0 : v > 0.999 ? 0.999 : v; }

int controller_init(controller *c, int rows) {
  ic_user_regions(regions, 3);
  *c = (controller){.rows = rows, .pid = {.kp = 0.8, .ki = 0.2, .kd = 0.01}, .seed = 12345u,
                    .load = 0.3};
  for (int k = 0; k < TAPS; k++)
    c->coeff[k] = 1.0 / TAPS;
  c->map = malloc((size_t)rows * (size_t)rows * sizeof *c->map);
  if (!c->map) {
    fprintf(stderr, "cannot allocate the %dx%d map\n", rows, rows);
    return 0;
  }
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < rows; j++)
      c->map[(size_t)i * rows + j] = (double)i / rows * (1.0 + 0.5 * (double)j / rows);
  return 1;
}

void controller_step(controller *c) {
  int newest = (int)(c->step++ % TAPS);
  c->history[newest] = c->plant + 0.05 * noise(&c->seed);
  c->load = clamp01(c->load + 0.01 * noise(&c->seed));

  IC_REGION_BEGIN(FIR);
  double filtered = fir(c->coeff, c->history, newest);
  IC_REGION_END(FIR);

  IC_REGION_BEGIN(LUT);
  /* Successive steps read far-apart rows, as a map indexed by a noisy signal does. */
  double calibrated = lookup(c->map, c->rows, clamp01(filtered + 0.5 * noise(&c->seed) + 0.5),
                             c->load);
  IC_REGION_END(LUT);

  IC_REGION_BEGIN(PID);
  c->u = pid_step(&c->pid, 0.5, calibrated, 0.01);
  IC_REGION_END(PID);

  c->plant += 0.01 * (c->u - c->plant);
}

void controller_free(controller *c) { free(c->map); }
