// RUN: intercore compile %s --emit fused --cpus 1 --no-fuse
// --no-fuse keeps one process per node where fuse_one_cpu.comp fuses all five.
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
// CHECK: dfg.process @p_src {
// CHECK-NEXT: dfg.process @p_a {
// CHECK-NEXT: dfg.process @p_b {
// CHECK-NEXT: dfg.process @p_c {
// CHECK-NEXT: dfg.process @p_sink {
// CHECK-COUNT-4: dfg.channel
// CHECK-COUNT-5: dfg.instantiate
