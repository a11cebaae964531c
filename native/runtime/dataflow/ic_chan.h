/* The dataflow runtime of `intercore compile build`: single-producer/single-consumer channels with
 * close semantics, and the helpers the generated programs (C and MLIR back ends) call.
 *
 * A channel is a bounded ring of fixed-size tokens. ic_chan_push blocks while the ring is
 * full and ic_chan_pull while it is empty: a short spin, then a futex sleep, so a blocked
 * task gives its CPU away. ic_chan_close wakes both ends for good: a push to a closed
 * channel and a pull from a closed, drained one return false. A task that meets a closed
 * channel stops; ic_rt_abort closes every channel of a run, so one failing task ends the
 * others instead of leaving them blocked.
 *
 * Plain C11 plus the Linux futex call (a yield loop elsewhere); no dependency on OpenMP. */
#ifndef IC_CHAN_H
#define IC_CHAN_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ic_chan ic_chan_t;

ic_chan_t *ic_chan_new(size_t elem_size, size_t capacity);
void ic_chan_free(ic_chan_t *c);
bool ic_chan_push(ic_chan_t *c, const void *elem);
bool ic_chan_pull(ic_chan_t *c, void *elem);
void ic_chan_close(ic_chan_t *c);
bool ic_chan_closed(const ic_chan_t *c);

/* A run's channels, created from (element size, capacity) pairs. */
ic_chan_t **ic_rt_channels(int n, const long *elem_sizes, const long *capacities);
/* Frees them; returns 1 if the run was aborted, 0 otherwise. */
int ic_rt_finish(int n, ic_chan_t **chans);
/* Close every channel of the run: blocked tasks wake up and stop. */
void ic_rt_abort(int n, ic_chan_t **chans);
/* A task met a closed channel where the protocol needs a token: abort the run. */
void ic_rt_protocol_error(int n, ic_chan_t **chans, const char *task, const char *var);
/* For code that cannot index C arrays or pass strings easily (the MLIR back end). */
ic_chan_t *ic_rt_chan(ic_chan_t **chans, long index);
void ic_rt_pull_failed(int n, ic_chan_t **chans, int task, int channel);
/* Name the calling thread (Linux: 15 characters), so tools such as ic-manage and top can
 * tell the tasks apart. */
void ic_rt_name_thread(const char *name);
/* Called by each thread of a run before its task: moves it from SCHED_OTHER to SCHED_BATCH
 * (Linux; same share of the CPU, same nice value), whose wake-ups do not preempt the thread
 * running on the CPU they land on. A consumer woken by each push used to preempt its
 * producer when both shared a CPU, one involuntary switch per token (issue 23); now it runs
 * when the producer blocks (a full channel) or its time slice ends. Other policies are left
 * alone. True if the policy was changed. */
bool ic_rt_task_thread(void);
/* Threads this process may use: OMP_THREAD_LIMIT and the CPU affinity, as the OpenMP
 * runtime reports them through ic_rt_set_thread_limit(); 1 << 30 when unknown. */
void ic_rt_set_thread_limit(int limit);
int ic_rt_thread_limit(void);
/* The run needed more threads than it got: try the variant with fewer tasks. */
void ic_rt_note_fallback(int wanted, int got);

#ifdef __cplusplus
}
#endif

#endif
