// A sample-rate converter with rates (synchronous dataflow): `decimate` takes four samples
// per firing and makes one value, `interpolate` takes one and makes two, and beside them
// `pack` gathers eight samples into one frame. The compiler balances the rates per loop
// (repetition vector sample 8, decimate 2, interpolate 2, emit 4, pack 1, energy 1,
// report 1), checks that the loop runs whole periods, and fires each call its count per
// period; `--explain` prints the vector.
//
//   intercore compile build rates.comp --sources rates.c -o rates --explain
type frame = int32_t[8];
const int SAMPLES = 1600;

int32_t sample(int i);                          // one sample per firing, i its number
int32_t decimate(const int32_t x[4]);           // four samples in, one value out
int32_t[2] interpolate(const int32_t y);        // one value in, two out
frame pack(const int32_t x[8]);                 // eight samples in, one frame out
int64_t energy(const frame f);
stateful void emit(int n, const int32_t z);   // n counts emit's own firings
stateful void report(int n, int64_t e);
stateful void summary(void);

int main() {
  for (int i = 0; i < SAMPLES; i++) {
    int32_t x = sample(i);
    int32_t d = decimate(x);
    int32_t z = interpolate(d);
    emit(i, z);
    report(i, energy(pack(x)));
  }
  summary();
  return 0;
}
