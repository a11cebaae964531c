/* ic_rt_task_thread: a default-policy thread moves to SCHED_BATCH with its nice value, a
 * policy chosen on purpose stays, and two batch tasks sharing one CPU still pass every token
 * in order (a woken consumer now waits for its producer to block or be preempted). How many
 * switches that saves depends on the scheduler and on the host's other load, so bench/
 * schedule.py measures it, not this test. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* cpu_set_t, sched_setaffinity */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/resource.h>

#include "ic_chan.h"
#include "ic_test.h"

enum { COUNT = 20000 };

struct end {
  ic_chan_t *chan;
  cpu_set_t cpu;
  uint64_t in_order;
  bool batch;
};

static void start(struct end *e) {
  sched_setaffinity(0, sizeof e->cpu, &e->cpu);
  e->batch = ic_rt_task_thread() && sched_getscheduler(0) == SCHED_BATCH;
}

static void *produce(void *arg) {
  struct end *e = arg;
  start(e);
  for (uint64_t i = 0; i < COUNT; i++)
    if (!ic_chan_push(e->chan, &i))
      return NULL;
  ic_chan_close(e->chan);
  return NULL;
}

static void *consume(void *arg) {
  struct end *e = arg;
  start(e);
  uint64_t v;
  while (ic_chan_pull(e->chan, &v))
    e->in_order += v == e->in_order;
  return NULL;
}

static void *as_idle(void *arg) {
  struct sched_param sp = {.sched_priority = 0};
  *(bool *)arg = sched_setscheduler(0, SCHED_IDLE, &sp) == 0 && !ic_rt_task_thread() &&
                 sched_getscheduler(0) == SCHED_IDLE;
  return NULL;
}

int main(void) {
  /* the default policy becomes SCHED_BATCH, nice kept; already batch: left alone */
  int nice = getpriority(PRIO_PROCESS, 0);
  CHECK(sched_getscheduler(0) == SCHED_OTHER);
  CHECK(ic_rt_task_thread());
  CHECK(sched_getscheduler(0) == SCHED_BATCH);
  CHECK(getpriority(PRIO_PROCESS, 0) == nice);
  CHECK(!ic_rt_task_thread());

  /* a policy chosen on purpose stays */
  struct sched_param other = {.sched_priority = 0};
  CHECK(sched_setscheduler(0, SCHED_OTHER, &other) == 0); /* threads inherit the policy */
  bool kept = false;
  pthread_t t;
  pthread_create(&t, NULL, as_idle, &kept);
  pthread_join(t, NULL);
  CHECK(kept);

  /* both ends batch on one CPU: every token, in order, then close */
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof allowed, &allowed);
  int first = 0;
  while (!CPU_ISSET(first, &allowed))
    first++;
  struct end prod = {.chan = ic_chan_new(sizeof(uint64_t), 8)}, cons = {.chan = prod.chan};
  CPU_ZERO(&prod.cpu);
  CPU_SET(first, &prod.cpu);
  cons.cpu = prod.cpu;
  pthread_t p, c;
  pthread_create(&c, NULL, consume, &cons);
  pthread_create(&p, NULL, produce, &prod);
  pthread_join(p, NULL);
  pthread_join(c, NULL);
  CHECK(prod.batch && cons.batch);
  CHECK(cons.in_order == COUNT);
  CHECK(ic_chan_closed(prod.chan));
  ic_chan_free(prod.chan);
  return TEST_RESULT();
}
