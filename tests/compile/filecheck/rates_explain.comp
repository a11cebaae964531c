// RUN: intercore compile %s --cpus 2 --explain
// --explain prints each loop's repetition vector (firings per period) and its periods.
type frame = float[4];
float gen(int i);
float decimate(const float x[4]);
float[2] up(const float y);
frame pack(const float x[8]);
stateful void show(int n, const float z);
stateful void keep(const frame f);
int main() {
  for (int i = 0; i < 64; i++) {
    float x = gen(i);
    show(i, up(decimate(x)));
    keep(pack(x));
  }
  return 0;
}
// CHECK: rates: loop at line 11: 64 iterations = 8 period(s) of repetition vector gen@12 8, decimate@13 2, up@13 2, show@13 4, pack@14 1, keep@14 1
