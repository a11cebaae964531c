// RUN: intercore compile %s --emit fused --cpus 2 --split 2
// --split 2: the replicable chain fuses into one process of two instances; the stateful
// sink stays one instance of its own (a stateful node is never duplicated).
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
// CHECK: dfg.process @p_src_a_b_c {{.*}}callees = ["src", "a", "b", "c"]{{.*}}multiplicity = 2 : i64, replicable}
// CHECK-NEXT: dfg.process @p_sink {{.*}}multiplicity = 1 : i64, stateful}
// CHECK: dfg.channel {capacity = 8 : i64, var = "c.r"
