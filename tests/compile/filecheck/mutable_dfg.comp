// RUN: intercore compile %s --emit dfg
// bump redefines b, so total reads bump's b, not make's: the chain is make -> bump -> total.
type block = int32_t[16];
block make(int i);
void bump(block x);
long total(const block x);
stateful void report(long t);
int main() {
  for (int i = 0; i < 4; i++) {
    block b = make(i);
    bump(b);
    report(total(b));
  }
  return 0;
}
// CHECK: dfg.channel {capacity = 8 : i64, var = "b", def = [[MAKE:[0-9]+]] : i64}
// CHECK-NEXT: dfg.channel {capacity = 8 : i64, var = "b", def = [[BUMP:[0-9]+]] : i64}
// CHECK-NEXT: dfg.channel {capacity = 8 : i64, var = "total.r"
// CHECK-NOT: def = [[MAKE]] : i64
