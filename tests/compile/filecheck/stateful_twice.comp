// RUN: not intercore compile %s
// Two state lists on one function would leave one of them unread: one `stateful(...)` each.
stateful(log) stateful(hist) void report(int i);
int main() {
  report(1);
  return 0;
}
// CHECK: error: {{.*}}stateful_twice.comp:3:35: 'stateful' given twice: list every state object in one 'stateful(...)'
