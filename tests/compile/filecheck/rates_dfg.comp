// RUN: intercore compile %s --emit dfg
// After the lowering every call of the loop fires once per period: one rate (the 4
// periods) for all, so fusion may join them, and a channel carries a period's tokens.
int gen(int i);
int decimate(const int x[4]);
stateful void show(int n, const int z);
int main() {
  for (int i = 0; i < 16; i++) {
    int x = gen(i);
    show(i, decimate(x));
  }
  return 0;
}
// CHECK: dfg.process @p_gen_x4 {ops = [{{[0-9]+}} : i64], callees = ["gen_x4"], loop = "[[L:L[0-9]+]]", rate = "4", weight = 1.6
// CHECK: dfg.process @p_decimate {{.*}} loop = "[[L]]", rate = "4", weight = 4.0
// CHECK: dfg.process @p_show {{.*}} loop = "[[L]]", rate = "4", weight = 4.0
// CHECK: dfg.channel {capacity = 8 : i64, var = "x", def = {{[0-9]+}} : i64} : !dfg.input<!comp.array<int_x4, 4 x i32>>
// CHECK: dfg.channel {{.*}} : !dfg.input<i32>
