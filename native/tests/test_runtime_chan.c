/* Channel semantics: FIFO order across threads, blocking when full/empty, close wakes both
 * ends, a drained closed channel says so. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "ic_chan.h"
#include "ic_test.h"

enum { COUNT = 200000 };

static void *producer(void *arg) {
  ic_chan_t *c = arg;
  for (uint64_t i = 0; i < COUNT; i++)
    if (!ic_chan_push(c, &i))
      return (void *)1;
  ic_chan_close(c);
  return NULL;
}

static void *blocked_pull(void *arg) {
  uint64_t v;
  return ic_chan_pull(arg, &v) ? (void *)1 : NULL; /* must wake with false on close */
}

int main(void) {
  /* order and count across two threads through a small ring */
  ic_chan_t *c = ic_chan_new(sizeof(uint64_t), 4);
  pthread_t t;
  pthread_create(&t, NULL, producer, c);
  uint64_t v, expect = 0, bad = 0;
  while (ic_chan_pull(c, &v))
    bad += v != expect++;
  void *rc;
  pthread_join(t, &rc);
  CHECK(rc == NULL);
  CHECK(bad == 0);
  CHECK(expect == COUNT);
  CHECK(ic_chan_closed(c));
  CHECK(!ic_chan_push(c, &v)); /* closed: refused */
  ic_chan_free(c);

  /* a consumer asleep on an empty channel wakes when it is closed */
  c = ic_chan_new(sizeof(uint64_t), 1);
  pthread_create(&t, NULL, blocked_pull, c);
  struct timespec pause = {0, 20 * 1000 * 1000};
  nanosleep(&pause, NULL);
  ic_chan_close(c);
  pthread_join(t, &rc);
  CHECK(rc == NULL);
  ic_chan_free(c);

  /* tokens pushed before close are still delivered, then false */
  c = ic_chan_new(sizeof(uint64_t), 2);
  v = 7;
  CHECK(ic_chan_push(c, &v));
  ic_chan_close(c);
  CHECK(ic_chan_pull(c, &v) && v == 7);
  CHECK(!ic_chan_pull(c, &v));
  ic_chan_free(c);
  CHECK(ic_chan_new(0, 4) == NULL);
  return TEST_RESULT();
}
