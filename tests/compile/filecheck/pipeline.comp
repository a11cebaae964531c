// RUN: intercore compile %s --emit dfg
// One process per call, one channel per def-use, all at the loop's rate.
type block = float[64];
block source(int i);
block scale(const block x, float k);
stateful void sink(int i, const block x);
int main() {
  for (int i = 0; i < 100; i++) {
    sink(i, scale(source(i), 2.0f));
  }
  return 0;
}
// CHECK: dfg.process @p_source {ops = [{{[0-9]+}} : i64], callees = ["source"], loop = "[[L:L[0-9]+]]", rate = "100"
// CHECK-SAME: replicable
// CHECK: dfg.process @p_scale {{.*}}loop = "[[L]]", rate = "100"
// CHECK: dfg.process @p_sink {{.*}}loop = "[[L]]", rate = "100"{{.*}}stateful
// CHECK: dfg.graph @graph
// CHECK-NEXT: %[[A:[0-9]+]], %[[B:[0-9]+]] = dfg.channel {capacity = 8 : i64, var = "source.r"
// CHECK-NEXT: %[[C:[0-9]+]], %[[D:[0-9]+]] = dfg.channel {capacity = 8 : i64, var = "scale.r"
// CHECK-NEXT: dfg.instantiate @p_source inputs() outputs(%[[A]])
// CHECK-NEXT: dfg.instantiate @p_scale inputs(%[[B]]) outputs(%[[C]])
// CHECK-NEXT: dfg.instantiate @p_sink inputs(%[[D]]) outputs()
