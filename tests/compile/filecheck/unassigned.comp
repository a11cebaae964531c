// RUN: not intercore compile %s --emit mlir
// `level` has a value only when the first reading is high: the read in report() is refused
// at its line, with the path that leaves it empty, and no stage is printed.
int read(int i);
stateful void report(int v);
int main() {
  int level;
  if (read(0) > 3) {
    level = read(1);
  }
  report(level);
  return 0;
}
// CHECK: error: {{.*}}unassigned.comp:11:10: 'level' may be read before it has a value: the if at line 8 assigns it only when its condition is true
// CHECK-NEXT: report(level);
// CHECK-NEXT: ^
