// A composition of the shape issue 23's user wrote: eleven nodes, two rates (frames and
// bands), a conditional edge into a stateful alarm, a second stateful function. Theirs had
// `float sum;` with no value and was accepted (its MLIR build printed `sum -nan`);
// tests/compile/test_definite.py compiles this one that way and must see it refused.
type frame = float[64];
const int FRAMES = 200;
const int BANDS = 4;

frame capture(int i);
frame denoise(const frame x);
void normalize(frame x);
float energy(const frame x);
float peak(const frame x);
float band(const frame x, int k);
stateful void alarm(int i, float level);
stateful void summary(float sum, int alarms);

int main() {
  float sum = 0.0;
  int alarms = 0;
  for (int i = 0; i < FRAMES; i++) {
    frame raw = capture(i);
    frame clean = denoise(raw);
    normalize(clean);
    float e = energy(clean);
    float p = peak(clean);
    float bands = 0.0;
    for (int k = 0; k < BANDS; k++) {
      bands += band(clean, k);
    }
    sum += e;
    float level = p * bands / (1.0 + sum / (i + 1));
    if (level > 1.62) {
      alarm(i, level);
      alarms += 1;
    }
  }
  summary(sum, alarms);
  return 0;
}
