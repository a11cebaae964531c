// RUN: intercore compile %s --explain --cpus 2 --max-tasks 2
// --max-tasks wins over the estimate: the search goes on past its best partition (three
// tasks, fuse_decisions.comp) to two, and says that step raises the estimate.
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
// CHECK: 2. fuse p_c + p_sink -> p_c_sink
// CHECK-NEXT: 3. fuse p_b + p_c_sink -> p_b_c_sink: estimate 230.6 -> 302.5, 2 task(s); on the way to the best partition (302)
// CHECK-NEXT: stop: best estimate 302 with 2 task(s)
// CHECK: tasks: p_src_a (src, a); p_b_c_sink (b, c, sink)
// CHECK: schedule: threads (2 task(s) <= 2 CPU(s))
