// RUN: not intercore compile %s
// A loop must run whole periods: 4 samples per decimated value, 18 is not a multiple of 4.
int gen(int i);
int decimate(const int x[4]);
stateful void show(int n, const int y);
int main() {
  for (int i = 0; i < 18; i++) {
    int x = gen(i);
    show(i, decimate(x));
  }
  return 0;
}
// CHECK: error: {{.*}}rates_trip.comp:7:3: the loop runs 18 times, but its rates repeat every 4 firings of gen (repetition vector gen 4, decimate 1, show 1): make the trip count a multiple of 4
