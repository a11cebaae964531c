// A signal-processing pipeline: six stages over blocks of samples.
//
//   intercore compile build signal.comp --sources signal.c -o signal && ./signal
//
// Every stage is a C function in signal.c; the composition says how blocks flow between
// them. `fft` transforms its block in place (a mutable parameter), `sink` keeps a running
// checksum (stateful), so neither may be duplicated.
type block = float[1024];
const int BLOCKS = 400;

block source(int i);
block window(const block x);
block fir(const block x);
void fft(block x);
block magnitude(const block x);
stateful void sink(int i, int last, const block x);

int main() {
  for (int i = 0; i < BLOCKS; i++) {
    block s = fir(window(source(i)));
    fft(s);
    sink(i, BLOCKS - 1, magnitude(s));
  }
  return 0;
}
