// RUN: not intercore compile %s
// Two @weight on one function: the first would be dropped without a word, so it is refused
// at the second.
@weight(2) @weight(3) int f(int i);
stateful void s(int v);
int main() { s(f(1)); return 0; }
// CHECK: error: {{.*}}weight_twice.comp:4:12: @weight given twice: one weight per function
// CHECK-NEXT: @weight(2) @weight(3) int f(int i);
// CHECK-NEXT: {{^ +}}^
