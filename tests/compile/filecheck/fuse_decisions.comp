// RUN: intercore compile %s --explain --cpus 2
// dfg-fuse on two CPUs: the cost model fuses the light ends of a chain around its heavy
// stage (b weighs 4) and stops at three tasks, each step with its estimate.
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
// CHECK: 5 nodes, 4 edges, 2 CPU(s); weights from @weight
// CHECK: line 12: b rate 50, weight/firing 4, delta 1 (@weight(4)) [replicable]
// CHECK: estimate before fusion: 288.8
// CHECK-NEXT: 1. fuse p_src + p_a -> p_src_a: estimate 288.8 -> 259.4, 4 task(s); lowers the estimate
// CHECK-NEXT: 2. fuse p_c + p_sink -> p_c_sink: estimate 259.4 -> 230.6, 3 task(s); lowers the estimate
// CHECK-NEXT: stop: best estimate 231 with 3 task(s)
// CHECK: tasks: p_src_a (src, a); p_b (b); p_c_sink (c, sink)
