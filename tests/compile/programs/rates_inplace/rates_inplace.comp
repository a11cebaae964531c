// Rates with array tokens, a function that modifies its tokens in place, and a loop that
// counts down: `sum` takes three blocks per firing, so `gen` and `scale` fire three times
// per period, and gen's k-th firing sees 20 - 2k. show counts its own firings: 20, 18.
type blk = int[2];
blk gen(int i);
void scale(blk x);
int sum(const blk x[3]);
stateful void show(int n, const int y);
int main() {
  for (int i = 20; i > 8; i -= 2) {
    blk x = gen(i);
    scale(x);
    show(i, sum(x));
  }
  return 0;
}
