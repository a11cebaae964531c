// RUN: intercore compile %s --cpus 2 --no-fuse --explain
// Six tasks on two CPUs: the default is the static schedule (the cost model estimates it
// faster than six threads), two partitions cut where the chain's weight halves, each fired
// in program order, one channel between them.
type blk = float[8];
blk src(int i);
blk a(const blk x);
blk b(const blk x);
blk c(const blk x);
blk d(const blk x);
stateful void sink(int i, const blk x);
int main() {
  for (int i = 0; i < 50; i++) {
    sink(i, d(c(b(a(src(i))))));
  }
  return 0;
}
// CHECK: schedule: static (6 tasks > 2 CPU(s); estimate {{[0-9.e+]+}} split over the CPUs against {{[0-9.e+]+}} as a thread per task): 2 thread(s), 1 channel(s); one thread per partition
// CHECK-NEXT: {{  }}[[P:p_[a-z_]+]]: src@14 -> a@14 -> b@14
// CHECK-NEXT: {{  }}[[Q:p_[a-z_]+]]: c@14 -> d@14 -> sink@14
