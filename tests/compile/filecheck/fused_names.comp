// RUN: intercore compile %s --explain --cpus 1
// A merged process is named after its parts (p_a + p_b -> p_a_b), which is also the name of
// the function a_b's process: the merge takes p_a_b_2, and on one CPU every call ends in one
// task (the names once collided, and a_b's call was left out of the plan's tasks).
type blk = float[8];
blk src(int i);
blk a(const blk x);
blk b(const blk x);
blk a_b(const blk x);
stateful void sink(int i, const blk x, const blk y);
int main() {
  for (int i = 0; i < 50; i++) {
    blk s = src(i);
    sink(i, b(a(s)), a_b(s));
  }
  return 0;
}
// CHECK: 1. fuse p_a + p_b -> p_a_b_2
// CHECK-NEXT: 2. fuse p_a_b + p_sink -> p_a_b_sink
// CHECK: tasks: p_src_a_b_2_a_b_sink (src, a, b, a_b, sink)
