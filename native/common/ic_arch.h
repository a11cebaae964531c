/* The only place where native code may depend on the architecture or the toolchain.
 * Kernels stay plain C; what they need from below is named here. */
#ifndef IC_ARCH_H
#define IC_ARCH_H

#include <stdint.h>

#if defined(__x86_64__)
#define IC_ARCH_NAME "x86_64"
#elif defined(__aarch64__)
#define IC_ARCH_NAME "aarch64"
#elif defined(__arm__)
#define IC_ARCH_NAME "arm"
#elif defined(__riscv)
#define IC_ARCH_NAME "riscv"
#else
#define IC_ARCH_NAME "unknown"
#endif

#if !defined(__GNUC__)
#error "intercore's kernels rely on GCC/Clang inline asm for compiler barriers"
#endif

/* Keeps the compiler from reordering memory accesses across this point; no fence is
 * emitted, so it costs nothing at run time. */
#define ic_compiler_barrier() __asm__ __volatile__("" ::: "memory")

/* Makes the compiler forget what it knows about x (forcing it into a register), so
 * arithmetic on it can neither be folded nor deleted, and without touching memory. */
#define IC_OPAQUE(x) __asm__ __volatile__("" : "+r"(x))

/* Burns CPU with register-only arithmetic for about `iters` dependent multiply-adds:
 * the "non-memory spinner" that keeps a core busy while generating no memory traffic. */
static inline uint64_t ic_spin(uint64_t x, unsigned iters) {
  for (unsigned i = 0; i < iters; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    IC_OPAQUE(x);
  }
  return x;
}

/* A free-running cycle counter readable from user space without a system call; the
 * observation points pair it with the perf user page to extrapolate thread CPU time. */
#if defined(__x86_64__)
#define IC_ARCH_HAVE_CYCLES 1
static inline uint64_t ic_arch_cycles(void) { return __builtin_ia32_rdtsc(); }
#elif defined(__aarch64__)
#define IC_ARCH_HAVE_CYCLES 1
static inline uint64_t ic_arch_cycles(void) {
  uint64_t v;
  __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
  return v;
}
#endif

/* Waits until every earlier load has completed, so a cycle-counter read after it times
 * those loads rather than their issue (a timed pointer chase). */
static inline void ic_arch_load_fence(void) {
#if defined(__x86_64__)
  __builtin_ia32_lfence();
#elif defined(__aarch64__)
  __asm__ __volatile__("dsb ld; isb" ::: "memory");
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Writes a cache line back (if dirty) and drops it from every cache level, so the next
 * access goes to memory. IC_ARCH_HAVE_FLUSH says whether user space can do that here. */
#if defined(__x86_64__)
#define IC_ARCH_HAVE_FLUSH 1
static inline void ic_arch_flush_line(const void *p) { __builtin_ia32_clflush(p); }
#elif defined(__aarch64__)
#define IC_ARCH_HAVE_FLUSH 1
static inline void ic_arch_flush_line(const void *p) {
  __asm__ __volatile__("dc civac, %0" ::"r"(p) : "memory");
}
#endif

/* A non-temporal store: the line goes to memory without being read first and without
 * being kept in the caches. IC_ARCH_HAVE_NT_STORE says whether the architecture has one;
 * ic_arch_store_fence orders earlier non-temporal stores before later stores. */
#if defined(__x86_64__)
#define IC_ARCH_HAVE_NT_STORE 1
static inline void ic_arch_store_nt(uint64_t *p, uint64_t v) {
  __builtin_ia32_movnti64((long long *)p, (long long)v);
}
static inline void ic_arch_store_fence(void) { __builtin_ia32_sfence(); }
#elif defined(__aarch64__)
#define IC_ARCH_HAVE_NT_STORE 1
/* STNP stores a pair: the word and its neighbour, both in the same line. */
static inline void ic_arch_store_nt(uint64_t *p, uint64_t v) {
  __asm__ __volatile__("stnp %1, %1, [%0]" ::"r"(p), "r"(v) : "memory");
}
static inline void ic_arch_store_fence(void) { __asm__ __volatile__("dmb ishst" ::: "memory"); }
#endif

/* A spin-wait hint: lets a sibling hyperthread run and saves power while busy-waiting. */
static inline void ic_arch_relax(void) {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#else
  ic_compiler_barrier();
#endif
}

/* A trace mark: one no-op instruction whose encoding carries a region id and whether the
 * region begins or ends there, so the tracer (native/trace, ictrace) sees region boundaries
 * with no side table and no run-time cost. `id` must be a compile-time constant below
 * 0x8000. x86-64: nopl disp32(%rax) = 0f 1f 80 + disp32, disp32 = 0x4943'0000 ("IC") |
 * end << 15 | id (native/trace/ictrace_format.h). The "memory" clobber keeps the compiler
 * from moving the region's accesses across it. Elsewhere: a compiler barrier only, and
 * regions are invisible to the tracer. */
#if defined(__x86_64__)
#define IC_ARCH_HAVE_TRACE_MARK 1
#define IC_ARCH_TRACE_MARK(end, id) \
  __asm__ __volatile__("nopl %c0(%%rax)" ::"i"(0x49430000 | ((end) << 15) | (id)) : "memory")
#else
#define IC_ARCH_TRACE_MARK(end, id) ic_compiler_barrier()
#endif

#endif
