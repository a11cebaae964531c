// RUN: intercore compile %s --explain --cpus 1
// Two stateful functions with independent state objects are not ordered: no hidden effects
// channel joins alarm to report, so capture, level and report fuse (with a plain `stateful`
// on both, state_shared.comp, the effects chain through the conditional alarm blocks it).
type frame = float[16];
frame capture(int i);
double level(const frame f);
stateful(alarms) void alarm(int i, const frame f);
stateful(log) void report(int i, double l);
int main() {
  for (int i = 0; i < 50; i++) {
    frame f = capture(i);
    double l = level(f);
    if (l > 0.25) {
      alarm(i, f);
    }
    report(i, l);
  }
  return 0;
}
// CHECK: fuse p_capture_level + p_report -> p_capture_level_report
// CHECK: not fused: p_capture_level_report + p_alarm: conditional edge (f, l)
// CHECK-NOT: effects
// CHECK: tasks: p_capture_level_report (capture, level, report); p_alarm (alarm)
