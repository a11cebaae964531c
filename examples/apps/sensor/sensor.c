/* The functions of sensor.comp: a synthetic sensor with a per-channel offset. */
#include <stdint.h>
#include <stdio.h>

#define N 256
typedef int32_t frame[N];

static uint64_t alarms, fold = 1469598103934665603ull;

static void mix(uint64_t v) { fold = (fold ^ v) * 1099511628211ull; }

void calibrate(frame out) {
  for (int k = 0; k < N; k++)
    out[k] = (k * 37) % 101 - 50;
}

void read_sensor(int32_t i, const frame offsets, frame out) {
  uint32_t s = (uint32_t)i * 747796405u + 2891336453u;
  for (int k = 0; k < N; k++) {
    s = s * 1664525u + 1013904223u;
    out[k] = (int32_t)(s >> 22) + offsets[k] + ((i % 37) == 0 ? 900 : 0);
  }
}

double level(const frame f) {
  int64_t sum = 0;
  for (int k = 0; k < N; k++)
    sum += f[k];
  return (double)sum / (N * 1024.0);
}

void alarm(int32_t i, const frame f) {
  alarms++;
  mix((uint64_t)i);
  mix((uint64_t)(uint32_t)f[0]);
}

void report(int32_t i, double l) {
  mix((uint64_t)i ^ (uint64_t)(int64_t)(l * 1e6));
}

void summary(int32_t frames) {
  printf("sensor: %d frames, %llu alarms, checksum %016llx\n", (int)frames,
         (unsigned long long)alarms, (unsigned long long)fold);
}
