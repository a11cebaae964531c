// RUN: intercore compile %s --explain --cpus 2
// A @weight on one stage of four is relative to the default call (1): that stage weighs 4
// and keeps a task of its own, where four unweighted stages pair up.
type blk = float[8];
blk a(int i);
@weight(4) blk b(const blk x);
blk c(const blk x);
stateful void d(const blk x);
int main() { for (int i = 0; i < 100; i++) { d(c(b(a(i)))); } return 0; }
// CHECK: weights from @weight
// CHECK-NEXT: weights: @weight(N) is N firings of a call without @weight, which weighs 1 (the default); an array copy weighs 0.05
// CHECK: line 9: a rate 100, weight/firing 1, delta 1 (default)
// CHECK-NEXT: line 9: b rate 100, weight/firing 4, delta 1 (@weight(4))
// CHECK-NEXT: line 9: c rate 100, weight/firing 1, delta 1 (default)
// CHECK: tasks: {{.*}}p_b (b);
