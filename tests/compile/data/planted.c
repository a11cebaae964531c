/* Three named threads for 3 s: two spin on registers, one ("hungry") walks a buffer four
 * times the last-level cache in a random order - the cache-hungry thread the manager must
 * favour first. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile uint64_t sink;

static void *spin(void *arg) {
  prctl(PR_SET_NAME, arg, 0, 0, 0);
  uint64_t x = 1;
  for (double end = now() + 3.0; now() < end;)
    for (int i = 0; i < 100000; i++)
      x = x * 6364136223846793005ull + 1;
  sink = x;
  return NULL;
}

static void *hungry(void *arg) {
  prctl(PR_SET_NAME, arg, 0, 0, 0);
  size_t n = (size_t)64 << 20 >> 3;
  uint64_t *buf = malloc(n * sizeof *buf), x = 0;
  for (size_t i = 0; i < n; i++)
    buf[i] = (i * 2654435761u) % n;
  for (double end = now() + 3.0; now() < end;)
    for (int i = 0; i < 100000; i++)
      x = buf[(x + (uint64_t)i) % n];
  sink = x;
  free(buf);
  return NULL;
}

int main(void) {
  pthread_t t[3];
  pthread_create(&t[0], NULL, spin, "spin-a");
  pthread_create(&t[1], NULL, hungry, "hungry");
  pthread_create(&t[2], NULL, spin, "spin-b");
  for (int i = 0; i < 3; i++)
    pthread_join(t[i], NULL);
  puts("done");
  return 0;
}
