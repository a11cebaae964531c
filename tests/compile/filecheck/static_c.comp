// RUN: intercore compile %s --cpus 2 --no-fuse --schedule static --emit c
// The static schedule's first variant: two threads; inside each, a value passes to the next
// call in a local variable, and only the cut between them is a channel.
type blk = float[8];
blk src(int i);
blk a(const blk x);
blk b(const blk x);
stateful void sink(int i, const blk x);
int main() {
  for (int i = 0; i < 50; i++) {
    sink(i, b(a(src(i))));
  }
  return 0;
}
// CHECK-LABEL: variant 0, task 0
// CHECK: src(v_i, v_src_r);
// CHECK-NOT: ic_chan_{{push|pull}}
// CHECK: a(v_src_r, v_a_r);
// CHECK-NEXT: ic_chan_push(ch[0], v_a_r)
// CHECK-LABEL: variant 0, task 1
// CHECK: ic_chan_pull(ch[0], v_a_r)
// CHECK-NOT: ic_chan_{{push|pull}}
// CHECK: b(v_a_r, v_b_r);
// CHECK-NOT: ic_chan_{{push|pull}}
// CHECK: sink(v_i, v_b_r);
// CHECK-NOT: ic_chan_{{push|pull}}
// CHECK-LABEL: variant 1, task 0
// CHECK-LABEL: int main(void)
