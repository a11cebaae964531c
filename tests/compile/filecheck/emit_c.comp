// RUN: intercore compile %s --emit c --cpus 2 --no-fuse --schedule threads
// The C back end: a recursive function becomes a static C function called by its task;
// each task runs the loop and pushes (or pulls) at the point of each def; the effects
// token orders the stateful show after fib and, in the next iteration, fib after show.
long fib(long n) {
  if (n < 2) { return n; } else { return fib(n - 1) + fib(n - 2); }
}
long square(long x);
stateful void show(int i, long v);
int main() {
  for (int i = 0; i < 20; i++) {
    show(i, square(fib(i)));
  }
  return 0;
}
// CHECK: int64_t square(int64_t a0);
// CHECK: void show(int32_t a0, int64_t a1);
// CHECK: static int64_t comp_fib(int64_t a0) {
// CHECK: v_fib_r = comp_fib((v_n - ((int64_t)1)));
// CHECK: return v_ret;
// CHECK-LABEL: variant 0, task 0: p_fib
// CHECK: v_fib_r = comp_fib(((int64_t)v_i));
// CHECK-NEXT: if (!ic_chan_push(ch[0], &v_fib_r)) return;
// CHECK-NEXT: if (!ic_chan_push(ch[1], &v_effects)) return;
// CHECK-NEXT: if (!ic_chan_pull(ch[3], &v_effects))
// CHECK-LABEL: variant 0, task 1: p_square
// CHECK: if (!ic_chan_pull(ch[0], &v_fib_r))
// CHECK-NEXT: v_square_r = square(v_fib_r);
// CHECK-NEXT: if (!ic_chan_push(ch[2], &v_square_r)) return;
// CHECK-LABEL: variant 0, task 2: p_show
// CHECK: if (!ic_chan_pull(ch[1], &v_effects))
// CHECK-NEXT: if (!ic_chan_pull(ch[2], &v_square_r))
// CHECK-NEXT: show(v_i, v_square_r);
// CHECK-NEXT: if (!ic_chan_push(ch[3], &v_effects)) return;
// CHECK: static void (*const v0_tasks[])(ic_chan_t **) = {v0_t0, v0_t1, v0_t2};
// CHECK-LABEL: variant 2, task 0
// CHECK-NOT: ic_chan_{{push|pull}}
// CHECK: show(v_i, v_square_r);
// Each thread leaves SCHED_OTHER before its task, so that its wake-ups preempt no task.
// CHECK: ic_rt_task_thread();
// CHECK-NEXT: tasks[omp_get_thread_num()](ch);
// CHECK-LABEL: int main(void)
