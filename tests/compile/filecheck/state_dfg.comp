// RUN: intercore compile %s --emit dfg
// One pseudo-variable per state object: calls sharing one are chained through it in program
// order, calls with disjoint state are not, and a plain `stateful` call (any state) waits for
// every one of them.
stateful(a) void first(int i);
stateful(b) void second(int i);
stateful(a, b) void both(int i);
stateful void last(int n);
int main() {
  for (int i = 0; i < 10; i++) {
    first(i);
    second(i);
    both(i);
  }
  last(10);
  return 0;
}
// CHECK: dfg.graph @graph
// CHECK-NEXT: %[[A1:[0-9]+]], %[[A2:[0-9]+]] = dfg.channel {{{.*}}var = "effects.a", def = 3
// CHECK-NEXT: %[[B1:[0-9]+]], %[[B2:[0-9]+]] = dfg.channel {{{.*}}var = "effects.b", def = 4
// CHECK-NEXT: %[[C1:[0-9]+]], %[[C2:[0-9]+]] = dfg.channel {{{.*}}var = "effects.a", def = 5
// CHECK-NEXT: %[[D1:[0-9]+]], %[[D2:[0-9]+]] = dfg.channel {{{.*}}var = "effects.b", def = 5
// CHECK-NEXT: %[[E1:[0-9]+]], %[[E2:[0-9]+]] = dfg.channel {{{.*}}var = "effects.a", def = 5
// CHECK-NEXT: %[[F1:[0-9]+]], %[[F2:[0-9]+]] = dfg.channel {{{.*}}var = "effects.b", def = 5
// CHECK-NEXT: dfg.instantiate @p_first inputs(%[[C2]]) outputs(%[[A1]])
// CHECK-NEXT: dfg.instantiate @p_second inputs(%[[D2]]) outputs(%[[B1]])
// CHECK-NEXT: dfg.instantiate @p_both inputs(%[[A2]], %[[B2]]) outputs(%[[C1]], %[[D1]], %[[E1]], %[[F1]])
// CHECK-NEXT: dfg.instantiate @p_last inputs(%[[E2]], %[[F2]]) outputs()
