// RUN: intercore compile %s --emit dfg
// Conditions and arguments computed from call results need no node of their own: `d`,
// `prev` and `rises` are computed by each task that needs them from the level it receives
// (a control channel), so the graph has one process per call and nothing else.
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
// CHECK: dfg.process @p_capture {
// CHECK-NEXT: dfg.process @p_level {
// CHECK-NEXT: dfg.process @p_alarm {
// CHECK-NEXT: dfg.process @p_summary {
// CHECK-NEXT: dfg.graph
// CHECK-NOT: dfg.process
// CHECK: dfg.channel {{{.*}}var = "l", def = [[L:[0-9]+]] : i64, conditional, control}
// CHECK: dfg.channel {{{.*}}var = "l", def = [[L]] : i64, control}
// CHECK: dfg.instantiate @p_summary inputs({{.*}}
