/* The declared functions of alarms.comp: integer-derived inputs, so every build computes
   the same floats in the same order. */
#include <stdio.h>

#define N 64

void capture(int i, float *out) {
  for (int k = 0; k < N; k++)
    out[k] = (float)((i * 37 + k * 11) % 101) / 100.0f;
}

void denoise(const float *x, float *out) {
  for (int k = 0; k < N; k++)
    out[k] = (x[k > 0 ? k - 1 : k] + 2.0f * x[k] + x[k < N - 1 ? k + 1 : k]) / 4.0f;
}

void normalize(float *x) {
  float top = 0.0f;
  for (int k = 0; k < N; k++)
    top = x[k] > top ? x[k] : top;
  for (int k = 0; k < N && top > 0.0f; k++)
    x[k] /= top;
}

float energy(const float *x) {
  float s = 0.0f;
  for (int k = 0; k < N; k++)
    s += x[k] * x[k];
  return s / N;
}

float peak(const float *x) {
  float top = 0.0f;
  for (int k = 0; k < N; k++)
    top = x[k] > top ? x[k] : top;
  return top;
}

float band(const float *x, int b) {
  float s = 0.0f;
  for (int k = b * (N / 4); k < (b + 1) * (N / 4); k++)
    s += x[k];
  return s / (N / 4);
}

static int raised;

void alarm(int i, float level) {
  raised++;
  if (raised <= 3)
    printf("alarm %d level %.4f\n", i, level);
}

void summary(float sum, int alarms) {
  printf("sum %.4f alarms %d raised %d\n", sum, alarms, raised);
}
