// Recursive composition functions (each call one sequential node), in a pipeline with
// ordinary nodes: scalar recursion, mutual recursion returning bool, an array result built
// recursively through a declared function, and a loop inside a recursive function.
type block = int32_t[64];
const int FRAMES = 12;

block seed(int i);
block blur(const block x);
long total(const block x);
bool odd_sum(const block x);
stateful void report(int i, long fib, bool even, long sum, long tri, bool odd);

long fib(long n) {
  if (n < 2) { return n; } else { return fib(n - 1) + fib(n - 2); }
}

bool is_even(int n) {
  if (n == 0) { return true; } else { return is_odd(n - 1); }
}

bool is_odd(int n) {
  if (n == 0) { return false; } else { return is_even(n - 1); }
}

block smooth(const block x, int times) {
  if (times == 0) { return x; } else { return blur(smooth(x, times - 1)); }
}

long triangle(int n) {
  long here = 0;
  for (int k = 0; k < n; k++) { here += 1; }
  if (n == 0) { return 0; } else { return here + triangle(n - 1); }
}

int main() {
  for (int i = 0; i < FRAMES; i++) {
    block b = smooth(seed(i), i % 4);
    report(i, fib(i + 10), is_even(i), total(b), triangle(i), odd_sum(b));
  }
  return 0;
}
