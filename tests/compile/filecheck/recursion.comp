// RUN: intercore compile %s --emit dfg
// A recursive composition function is one sequential node, ordered as stateful (any
// state: what its callees touch is not tracked through it).
long fib(long n) {
  if (n < 2) { return n; } else { return fib(n - 1) + fib(n - 2); }
}
long square(long x);
stateful void show(int i, long v);
int main() {
  for (int i = 0; i < 20; i++) {
    show(i, square(fib(i)));
  }
  return 0;
}
// CHECK: dfg.process @p_fib {{.*}}callees = ["fib"]{{.*}}stateful}
// CHECK-NEXT: dfg.process @p_square {{.*}}replicable}
// CHECK-NEXT: dfg.process @p_show {{.*}}stateful}
// CHECK: dfg.channel {{{.*}}var = "fib.r", def = [[FIB:[0-9]+]]
// CHECK-NEXT: dfg.channel {{{.*}}var = "effects", def = [[FIB]]
