// RUN: intercore compile %s --explain --cpus 1
// The contrast to budget.comp and no_fuse.comp: with one CPU and no bound, one task.
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
// CHECK: 4. fuse p_src + p_a_b_c_sink -> p_src_a_b_c_sink: estimate 506.2 -> 400, 1 task(s)
// CHECK: tasks: p_src_a_b_c_sink (src, a, b, c, sink)
