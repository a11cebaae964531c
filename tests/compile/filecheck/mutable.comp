// RUN: intercore compile %s --emit comp
// A mutable array parameter redefines its argument; a const one only reads it.
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
// CHECK: comp.decl @bump {function_type = (!comp.ref<!comp.array<block, 16 x i32>>) -> (), mutates = [0 : i64]}
// CHECK: comp.decl @total {function_type = (!comp.ref<!comp.array<block, 16 x i32>>) -> i64, mutates = []}
// CHECK: comp.loop "for" attributes {id = {{[0-9]+}} : i64, trip = 4 : i64}
// CHECK: %[[B:[0-9]+]] = comp.var "b"
// CHECK: comp.call @make({{.*}}) into %[[B]]
// CHECK: comp.call @bump(%[[B]])
// CHECK: comp.call @total(%[[B]]) into
