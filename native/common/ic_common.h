/* Shared helpers for every native tool: parsing, pinning, scheduling, clocks, JSON output.
 * One vocabulary for all tools, as rt-tests' rt-utils gives its tools. */
#ifndef IC_COMMON_H
#define IC_COMMON_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes shared by every tool (docs/native-contract.md). */
enum { IC_EXIT_OK = 0, IC_EXIT_FAIL = 1, IC_EXIT_USAGE = 2, IC_EXIT_UNSUPPORTED = 3 };

/* Program name used in messages ("ic-aggr", "ic-victim"). */
void ic_set_progname(const char *name);
const char *ic_progname(void);

/* Print "PROG: --opt: message" on stderr and exit with IC_EXIT_USAGE. */
_Noreturn void ic_usage_error(const char *opt, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Print "PROG: message" on stderr and exit with the given code. */
_Noreturn void ic_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ic_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "512", "4K", "4KiB", "2M", "1G" (binary units). Returns false on garbage or overflow. */
bool ic_parse_size(const char *s, uint64_t *out);
/* "10", "10s", "500ms", "2m", "1h" -> seconds. */
bool ic_parse_duration(const char *s, double *out_seconds);
/* Decimal or 0x-prefixed unsigned integer. */
bool ic_parse_u64(const char *s, uint64_t *out);
/* Shortest exact binary-unit spelling ("4K", "2M", "1536") into buf; returns buf. */
char *ic_format_size(uint64_t bytes, char *buf, size_t cap);

/* Writes all n bytes, resuming after signals and short writes; false on an error. */
bool ic_write_all(int fd, const void *buf, size_t n);
/* Set by SIGINT and SIGTERM once ic_catch_stop_signals has run: a daemon's loop ends when
 * it is. flags are sigaction's (SA_RESTART for a tool whose reads should resume). */
extern volatile sig_atomic_t ic_stop_requested;
void ic_catch_stop_signals(int flags);

/* CLOCK_MONOTONIC in ns. */
uint64_t ic_now_ns(void);
/* Calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID). */
uint64_t ic_thread_cpu_ns(void);
/* This process's CPU time in ns, every thread (CLOCK_PROCESS_CPUTIME_ID): what a daemon
 * costs. */
uint64_t ic_process_cpu_ns(void);

/* Pin the calling thread to one CPU; exits with a usage error if the CPU is absent/offline. */
void ic_pin_cpu_or_die(int cpu);
/* SCHED_FIFO at prio; returns false (with a warning) when refused. */
bool ic_set_rt_priority(int prio);
/* mlockall; returns false (with a warning) when refused. */
bool ic_lock_memory(void);
/* Cache line size of this CPU (64 when unknown). */
size_t ic_line_size(void);

/* Small xorshift64* PRNG so list layouts are reproducible from a seed. */
typedef struct { uint64_t s; } ic_rng_t;
void ic_rng_seed(ic_rng_t *r, uint64_t seed);
uint64_t ic_rng_next(ic_rng_t *r);
/* Sattolo shuffle: a random single cycle over idx[0..n). */
void ic_sattolo(size_t *idx, size_t n, ic_rng_t *r);

/* A minimal escaping JSON writer for one-line outputs: one object, whose values may be
 * objects and arrays in turn. A value's key is NULL inside an array. */
enum { IC_JSON_DEPTH = 8 };
typedef struct {
  FILE *f;
  int depth;                 /* 0: the outermost object */
  int n[IC_JSON_DEPTH];      /* values written at each level, for the commas */
  char end[IC_JSON_DEPTH];   /* '}' or ']' closing each level */
} ic_json_t;
void ic_json_begin(ic_json_t *j, FILE *f);
void ic_json_str(ic_json_t *j, const char *key, const char *val);
void ic_json_u64(ic_json_t *j, const char *key, uint64_t val);
void ic_json_i64(ic_json_t *j, const char *key, int64_t val);
void ic_json_f64(ic_json_t *j, const char *key, double val);
void ic_json_bool(ic_json_t *j, const char *key, bool val);
void ic_json_null(ic_json_t *j, const char *key);
/* Open a nested object or array as the next value; ic_json_pop closes the innermost one.
 * Nesting deeper than IC_JSON_DEPTH is a bug of the caller: it exits (IC_EXIT_FAIL). */
void ic_json_object(ic_json_t *j, const char *key);
void ic_json_array(ic_json_t *j, const char *key);
void ic_json_pop(ic_json_t *j);
/* Writes "}\n" and flushes. */
void ic_json_end(ic_json_t *j);
/* Writes "}" only, with no newline or flush: for a caller that writes many lines and
 * flushes once. */
void ic_json_close(ic_json_t *j);
/* Escape s into buf as a JSON string body (no quotes); returns buf. */
char *ic_json_escape(const char *s, char *buf, size_t cap);

/* Memory for kernels: mmap'd, prefaulted, 2 MiB pages when the host gives them
 * (MAP_HUGETLB, then transparent huge pages via madvise), 4 KiB otherwise. */
typedef struct {
  void *ptr;
  size_t size;     /* bytes mapped */
  size_t page;     /* page size actually obtained (4096 or 2 MiB) */
  bool hugetlb;    /* true when MAP_HUGETLB succeeded */
} ic_mem_t;
bool ic_mem_alloc(ic_mem_t *m, size_t size, bool want_huge);
void ic_mem_free(ic_mem_t *m);
/* Physical address via /proc/self/pagemap; returns false when the PFN is not readable
 * (not root, or the kernel hides PFNs). The page must be faulted in. */
bool ic_virt_to_phys(const void *va, uint64_t *pa);
/* Read PFNs from path instead of /proc/self/pagemap (bankpll --pagemap): lets a test drive
 * the "pagemap unreadable" path through the real code. */
void ic_set_pagemap_path(const char *path);
/* Why the last ic_virt_to_phys failed, e.g. "/proc/self/pagemap: PFNs hidden (needs CAP_SYS_ADMIN)". */
const char *ic_pagemap_error(void);

#endif
