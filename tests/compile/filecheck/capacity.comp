// RUN: intercore compile %s --emit dfg --capacity 3
// --capacity sets every channel's ring size, in tokens.
type blk = float[8];
blk src(int i);
blk a(const blk x);
@weight(4) blk b(const blk x);
blk c(const blk x);
stateful void sink(int i, const blk x);
int main() {
  for (int i = 0; i < 50; i++) {
    sink(i, c(b(a(src(i)))));
  }
  return 0;
}
// CHECK-COUNT-4: dfg.channel {capacity = 3 : i64
// CHECK-NOT: capacity = 8
