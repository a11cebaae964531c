// RUN: intercore compile %s --emit fused --cpus 1
// The edge into the branch is conditional and the rates differ across the loop: even on one
// CPU, where fusing everything else pays, neither is fused across.
type frame = float[32];
frame background(void);
frame capture(int i, const frame bg);
double level(const frame f);
stateful void store(int i, const frame f);
stateful void summary(int n);
int main() {
  frame bg = background();
  for (int i = 0; i < 50; i++) {
    frame f = capture(i, bg);
    if (level(f) > 0.25) {
      store(i, f);
    }
  }
  summary(50);
  return 0;
}
// CHECK: dfg.process @p_background {{.*}}rate = "1"
// CHECK: dfg.process @p_capture_level {{.*}}callees = ["capture", "level"]
// CHECK: dfg.process @p_store {{.*}}rate = "50"
// CHECK: dfg.process @p_summary {{.*}}rate = "1"
// CHECK: conditional
