// RUN: intercore compile %s --emit comp
// Rates lowered before the comp IR: a stream becomes an array of one period's tokens
// (`int_x4`), a call fired four times per period becomes one call of its adapter (`gen_x4`,
// weight 4: four firings), a rated parameter or result an array, and the loop steps by a
// whole period (16 iterations, 4 periods). `up` makes two per firing, so `show` fires twice
// per period through `show_x2`, its counter argument counting its own firings: i / 4 * 2.
int gen(int i);
int decimate(const int x[4]);
int[2] up(const int y);
stateful void show(int n, const int z);
int main() {
  for (int i = 0; i < 16; i++) {
    int x = gen(i);
    int z = up(decimate(x));
    show(i, z);
  }
  return 0;
}
// CHECK: comp.decl @decimate {function_type = (!comp.ref<!comp.array<int_x4, 4 x i32>>) -> i32
// CHECK: comp.decl @up {function_type = (i32) -> !comp.array<int_x2, 2 x i32>
// CHECK: comp.decl @gen_x4 {function_type = (i32) -> !comp.array<int_x4, 4 x i32>, mutates = [], weight = 4.0
// CHECK: comp.decl @show_x2 {function_type = (i32, !comp.ref<!comp.array<int_x2, 2 x i32>>) -> (), mutates = [], stateful, weight = 2.0
// CHECK: comp.loop "for" attributes {id = {{[0-9]+}} : i64, trip = 4 : i64}
// CHECK: %[[X:[0-9]+]] = comp.var "x" : !comp.ref<!comp.array<int_x4, 4 x i32>>
// CHECK: comp.call @gen_x4(%{{[0-9]+}}) into %[[X]]
// CHECK: comp.call @decimate(%[[X]]) into %[[D:[0-9]+]]
// CHECK: %[[Z:[0-9]+]] = comp.var "z" : !comp.ref<!comp.array<int_x2, 2 x i32>>
// CHECK: comp.call @up(%{{[0-9]+}}) into %[[Z]]
// CHECK: %[[PERIOD:[0-9]+]] = arith.constant 4 : i32
// CHECK-NEXT: arith.divsi %{{[0-9]+}}, %[[PERIOD]]
// CHECK: comp.call @show_x2(%{{[0-9]+}}, %[[Z]])
// CHECK: %[[STEP:[0-9]+]] = arith.constant 4 : i32
// CHECK-NEXT: arith.addi %{{[0-9]+}}, %[[STEP]]
