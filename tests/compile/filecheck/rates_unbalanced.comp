// RUN: not intercore compile %s
// Rates that no firing counts balance: `both` takes one of each, but one path decimates
// four to one and the other passes every token.
int gen(int i);
int decimate(const int x[4]);
int pass(const int x);
stateful void both(const int a, const int b);
int main() {
  for (int i = 0; i < 16; i++) {
    int x = gen(i);
    both(decimate(x), pass(x));
  }
  return 0;
}
// CHECK: error: {{.*}}rates_unbalanced.comp:11:10: rates do not balance: 'both' takes 1 of what 'decimate' returns per firing and 'decimate' makes 1, but the other streams between them fire 'decimate' 1 time(s) for 4 of 'both'
