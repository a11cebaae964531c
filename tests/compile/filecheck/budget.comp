// RUN: intercore compile %s --explain --cpus 1 --budget 250
// --budget refuses fused tasks heavier than W: on one CPU the model would fuse all five
// calls (weight 400); with 250 it stops at three tasks and names each refusal.
type blk = float[8];
blk src(int i);
blk a(const blk x);
@weight(4) blk b(const blk x);
blk c(const blk x);
stateful void sink(int i, const blk x);
int main() {
  for (int i = 0; i < 50; i++) {
    sink(i, c(b(a(src(i)))));
  }
  return 0;
}
// CHECK: 1. fuse p_a + p_b -> p_a_b
// CHECK-NEXT: 2. fuse p_c + p_sink -> p_c_sink
// CHECK-NEXT: stop: best estimate 615 with 3 task(s)
// CHECK: not fused: p_src + p_a_b: over budget (300 > 250)
// CHECK: not fused: p_a_b + p_c_sink: over budget (350 > 250)
// CHECK: tasks: p_src (src); p_a_b (a, b); p_c_sink (c, sink)
