// RUN: intercore compile %s --explain --cpus 1
// Without named state, stateful functions may share any (C globals, stdout): alarm and
// report stay in program order through the effects pseudo-variable, and that conditional
// chain keeps report out of the capture-level task (state_named.comp is the contrast).
type frame = float[16];
frame capture(int i);
double level(const frame f);
stateful void alarm(int i, const frame f);
stateful void report(int i, double l);
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
// CHECK: not fused: p_capture_level + p_report: a path p_capture_level -> p_alarm -> ... -> p_report would become a cycle
// CHECK: not fused: p_alarm + p_report: conditional edge (effects)
// CHECK: tasks: p_capture_level (capture, level); p_alarm (alarm); p_report (report)
