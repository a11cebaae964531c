/* The stages of signal.comp. Plain C, no dependency on intercore. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 1024
#define TAPS 63

typedef float block[N];

static uint32_t lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

/* Two tones and noise, different for every block index. */
void source(int32_t i, block out) {
  uint32_t seed = (uint32_t)i * 2654435761u + 1u;
  for (int k = 0; k < N; k++) {
    float t = (float)(i * N + k);
    float noise = (float)(lcg(&seed) >> 8) / 16777216.0f - 0.5f;
    out[k] = sinf(0.01f * t) + 0.5f * sinf(0.37f * t) + 0.2f * noise;
  }
}

void window(const block x, block out) {
  for (int k = 0; k < N; k++)
    out[k] = x[k] * (0.5f - 0.5f * cosf(6.2831853f * (float)k / (N - 1)));
}

/* A windowed-sinc low-pass over the block (zero outside it). */
void fir(const block x, block out) {
  static float h[TAPS];
  static int ready;
  if (!ready) {  /* the same coefficients on every call; computed once per thread is fine */
    for (int j = 0; j < TAPS; j++) {
      float m = (float)(j - TAPS / 2);
      float sinc = m == 0.0f ? 0.2f : sinf(0.2f * 3.14159265f * m) / (3.14159265f * m);
      h[j] = sinc * (0.54f - 0.46f * cosf(6.2831853f * (float)j / (TAPS - 1)));
    }
    ready = 1;
  }
  for (int k = 0; k < N; k++) {
    float acc = 0.0f;
    for (int j = 0; j < TAPS; j++) {
      int idx = k - j + TAPS / 2;
      if (idx >= 0 && idx < N)
        acc += h[j] * x[idx];
    }
    out[k] = acc;
  }
}

/* In place: an unnormalised radix-2 FFT of N/2 complex points stored re,im interleaved. */
void fft(block x) {
  const int n = N / 2;
  for (int i = 1, j = 0; i < n; i++) {
    int bit = n >> 1;
    for (; j & bit; bit >>= 1)
      j ^= bit;
    j ^= bit;
    if (i < j) {
      float tr = x[2 * i], ti = x[2 * i + 1];
      x[2 * i] = x[2 * j], x[2 * i + 1] = x[2 * j + 1];
      x[2 * j] = tr, x[2 * j + 1] = ti;
    }
  }
  for (int len = 2; len <= n; len <<= 1) {
    float ang = -6.2831853f / (float)len;
    for (int i = 0; i < n; i += len)
      for (int k = 0; k < len / 2; k++) {
        float wr = cosf(ang * (float)k), wi = sinf(ang * (float)k);
        int a = i + k, b = i + k + len / 2;
        float br = x[2 * b] * wr - x[2 * b + 1] * wi, bi = x[2 * b] * wi + x[2 * b + 1] * wr;
        x[2 * b] = x[2 * a] - br, x[2 * b + 1] = x[2 * a + 1] - bi;
        x[2 * a] += br, x[2 * a + 1] += bi;
      }
  }
}

void magnitude(const block x, block out) {
  for (int k = 0; k < N / 2; k++) {
    float m = sqrtf(x[2 * k] * x[2 * k] + x[2 * k + 1] * x[2 * k + 1]);
    out[2 * k] = m, out[2 * k + 1] = 0.0f;
  }
}

/* FNV-1a over every block's bytes, in block order; printed after the last one. */
void sink(int32_t i, int32_t last, const block x) {
  static uint64_t h = 1469598103934665603ull;
  static int32_t expect;
  if (i != expect++)
    fprintf(stderr, "sink: block %d arrived out of order\n", (int)i);
  const unsigned char *p = (const unsigned char *)x;
  for (size_t k = 0; k < sizeof(block); k++)
    h = (h ^ p[k]) * 1099511628211ull;
  if (i == last)
    printf("signal: %d blocks, checksum %016llx\n", (int)last + 1, (unsigned long long)h);
}
