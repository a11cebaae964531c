// RUN: intercore compile %s --emit mlir --cpus 2 --no-fuse --schedule threads
// The MLIR back end on the same program as emit_c.comp: the user's functions are private
// declarations, the recursive one a private func.func with a body, each task a func.func
// whose loop is an scf.while, and each variant one omp.parallel with a thread per task.
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
// CHECK-DAG: func.func private @ic_chan_push(!llvm.ptr, !llvm.ptr) -> i1
// CHECK-DAG: func.func private @ic_rt_task_thread() -> i1
// CHECK-DAG: func.func private @square(i64) -> i64
// CHECK-DAG: func.func private @show(i32, i64) -> ()
// CHECK: func.func private @comp_fib(%{{[0-9]+}}: i64) -> i64 {
// CHECK: func.call @comp_fib
// CHECK-LABEL: func.func @v0_t0(
// CHECK: scf.while
// CHECK: func.call @comp_fib
// CHECK: func.call @ic_chan_push
// CHECK: func.call @ic_chan_push
// CHECK: func.call @ic_chan_pull
// CHECK-LABEL: func.func @v0_t1(
// CHECK: func.call @ic_chan_pull
// CHECK: func.call @square
// CHECK: func.call @ic_chan_push
// CHECK-LABEL: func.func @v0_t2(
// CHECK: func.call @show
// CHECK-LABEL: func.func @v2_t0(
// CHECK-NOT: ic_chan_
// CHECK: func.call @show
// CHECK-LABEL: func.func @run_v0()
// CHECK: %[[T:[0-9]+]] = arith.constant 3 : i32
// CHECK: "omp.parallel"(%[[T]])
// CHECK: func.call @ic_rt_task_thread() : () -> i1
// CHECK: func.call @v0_t0
// CHECK: func.call @v0_t1
// CHECK: func.call @v0_t2
// CHECK: "omp.terminator"
