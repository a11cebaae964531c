// RUN: not intercore compile %s
// A state object named twice in one list is a slip (what was the second meant to be?).
stateful(log, log) void report(int i);
int main() {
  report(1);
  return 0;
}
// CHECK: error: {{.*}}state_twice.comp:3:15: state 'log' named twice
