// RUN: intercore compile %s --emit c --no-fuse --schedule threads --cpus 2
// What cond_expr.comp means in C: the summary task pulls the level and computes d, prev
// and rises itself, in its copy of the loop, instead of receiving them from a task.
type frame = float[16];
frame capture(int i);
double level(const frame f);
stateful void alarm(int i, const frame f);
stateful void summary(int rises);
int main() {
  double prev = 0.0;
  int rises = 0;
  for (int i = 0; i < 40; i++) {
    frame f = capture(i);
    double l = level(f);
    double d = l - prev;
    prev = l;
    if (d * 2.0 > 0.5) {
      alarm(i, f);
      rises += 1;
    }
  }
  summary(rises);
  return 0;
}
// CHECK-LABEL: variant 0, task 3: p_summary
// CHECK: if (!ic_chan_pull(ch[3], &v_l))
// CHECK-NEXT: v_d = (v_l - v_prev);
// CHECK-NEXT: v_prev = v_l;
// CHECK-NEXT: if (((v_d * 2.0) > 0.5)) {
// CHECK-NEXT: if (!ic_chan_pull(ch[4], &v_effects))
// CHECK-NEXT: v_rises = (v_rises + 1);
// CHECK: summary(v_rises);
