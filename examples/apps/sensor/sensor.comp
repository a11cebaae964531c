// A sensor loop with mixed rates and a conditional edge, neither of which may be fused
// across: the calibration runs once (rate 1) and feeds every reading (rate FRAMES), and the
// alarm only fires when a reading's level crosses the threshold.
//
//   intercore compile build sensor.comp --sources sensor.c -o sensor --explain
type frame = int32_t[256];
const int FRAMES = 300;

frame calibrate(void);
frame read_sensor(int i, const frame offsets);
double level(const frame f);
stateful void alarm(int i, const frame f);
stateful void report(int i, double l);
stateful void summary(int frames);

int main() {
  frame offsets = calibrate();
  for (int i = 0; i < FRAMES; i++) {
    frame f = read_sensor(i, offsets);
    double l = level(f);
    if (l > 0.8) {
      alarm(i, f);
    }
    report(i, l);
  }
  summary(FRAMES);
  return 0;
}
