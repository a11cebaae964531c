// Two stateful functions with independent state objects (stateful(hist), stateful(peak)),
// which may run in parallel, and a plain `stateful` report that may read any state and so
// waits for both; conditions and an argument computed from call results (d, v * 2, rises)
// with no node of their own. states.expected comes from a model of states.c written in
// Python apart from it.
const int N = 60;

int sample(int i);
stateful(hist) void histogram(int v);
stateful(peak) void track(int v);
stateful void report(int rises);

int main() {
  int prev = 0;
  int rises = 0;
  for (int i = 0; i < N; i++) {
    int v = sample(i);
    int d = v - prev;
    prev = v;
    if (d > 3) {
      histogram(v);
    }
    if (v * 2 > 12) {
      track(v);
      rises += 1;
    }
  }
  report(rises);
  return 0;
}
