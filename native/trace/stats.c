/* ic-trace-stats: reads ictrace's record stream (ictrace_format.h) and summarises each
 * region per static instruction, so that a trace of tens of millions of records becomes a
 * few hundred lines of JSON:
 *
 *   executions, loads, stores, bytes;
 *   which level of the modelled cache hierarchy served each line access (cache.h);
 *   signed log2 buckets of the stride between consecutive accesses of the instruction;
 *   log2 buckets of the exact LRU stack distance of each line access (reuse.h);
 *
 * plus per-region totals, the region's footprint (distinct lines per entry), the PCs of its
 * markers, and optionally one window of consecutive dynamic instructions drawn uniformly
 * from the region (reservoir sampling over fixed-size blocks).
 *
 * The cache model runs over every traced access; statistics count only from the
 * (--skip + 1)-th entry into an outermost region, so `--skip 1` over a two-repetition run
 * describes a repetition that starts with warm caches, as the measured ones do. A program
 * that is one repetition per run (a user's, measured by ic-run) is warmed the same way by
 * tracing it --runs times into one stream: the stream holds each run's records closed by
 * its end record, the modelled caches carry over, and only the last run counts.
 *
 * Output, one JSON object per line: {"event":"region",...} per region, {"event":"insn",...}
 * per (region, static instruction), then {"event":"end",...}. docs/learn.md has the fields. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "ic_common.h"
#include "ic_opts.h"
#include "ictrace_format.h"
#include "reuse.h"

enum { STRIDE_BUCKETS = 33, REUSE_BUCKETS = 27, MAX_DEPTH = 64, MAX_REGION = 0x8000,
       MAX_MARK_PCS = 8 };
/* Reuse bucket b < 26 holds distances in [2^(b-1), 2^b) lines (b = 0: distance 0); bucket 25
 * also holds everything longer; bucket 26 holds first touches. */
enum { REUSE_COLD = REUSE_BUCKETS - 1 };

typedef struct {
  uint64_t pc;
  uint32_t region, len;
  uint64_t execs, loads, stores, bytes, regular;
  uint64_t served[IC_CACHE_MAX_LEVELS + 1];
  uint64_t stride[STRIDE_BUCKETS];
  uint64_t reuse[REUSE_BUCKETS];
  uint64_t prev_addr;
  int64_t prev_stride;
  int seen; /* accesses with a predecessor: 0, 1, 2 = has a previous stride */
} insn_t;

typedef struct {
  uint64_t pc[MAX_MARK_PCS];
  int n;
} pcs_t;

typedef struct {
  int32_t pc_index; /* into the instruction table; -1 for none */
  int8_t level;     /* served the instruction's outermost access; -1: no access */
  int8_t stride;    /* stride bucket of that access, STRIDE_BUCKETS/2 when none */
} win_t;

typedef struct {
  bool used;
  uint64_t entries, counted_entries, insns, loads, stores, bytes, footprint;
  uint64_t served[IC_CACHE_MAX_LEVELS + 1];
  uint64_t reuse[REUSE_BUCKETS];
  uint64_t start_tick; /* reuse tick when the current entry began */
  pcs_t begin, end;
  /* window sampling: the block being filled, the kept one, blocks seen */
  win_t *cur, *kept;
  uint64_t cur_n, kept_n, blocks;
} region_t;

static struct {
  ic_cache_t cache;
  ic_reuse_t reuse;
  region_t *regions[MAX_REGION];
  insn_t *insns;
  uint64_t ninsns, cap_insns;
  int64_t *slots; /* hash of (pc, region) -> index into insns; -1 empty */
  uint64_t nslots;
  int stack[MAX_DEPTH];
  int depth;
  uint64_t outer_entries, skip, run_entries; /* run_entries: outermost, in this run */
  uint64_t run, runs;
  bool counting;
  insn_t *last; /* the instruction the next accesses belong to */
  win_t *last_win;
  uint64_t window;
  ic_rng_t rng;
  uint64_t records, unmatched_ends;
} g;

static void oom(void) { ic_die(IC_EXIT_FAIL, "out of memory"); }

static region_t *region(int id) {
  if (!g.regions[id]) {
    g.regions[id] = calloc(1, sizeof(region_t));
    if (!g.regions[id])
      oom();
    if (g.window) {
      g.regions[id]->cur = calloc(g.window, sizeof(win_t));
      g.regions[id]->kept = calloc(g.window, sizeof(win_t));
      if (!g.regions[id]->cur || !g.regions[id]->kept)
        oom();
    }
  }
  return g.regions[id];
}

static uint64_t hash2(uint64_t pc, uint32_t region_id) {
  uint64_t x = pc * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)region_id << 48);
  x ^= x >> 31;
  return x * 0xbf58476d1ce4e5b9ULL;
}

static void rehash(void) {
  free(g.slots);
  g.nslots = g.nslots ? 2 * g.nslots : 4096;
  g.slots = malloc(g.nslots * sizeof *g.slots);
  if (!g.slots)
    oom();
  memset(g.slots, 0xff, g.nslots * sizeof *g.slots);
  for (uint64_t i = 0; i < g.ninsns; i++) {
    uint64_t s = hash2(g.insns[i].pc, g.insns[i].region) & (g.nslots - 1);
    while (g.slots[s] >= 0)
      s = (s + 1) & (g.nslots - 1);
    g.slots[s] = (int64_t)i;
  }
}

static insn_t *insn(uint64_t pc, uint32_t region_id, uint32_t len) {
  uint64_t s = hash2(pc, region_id) & (g.nslots - 1);
  for (; g.slots[s] >= 0; s = (s + 1) & (g.nslots - 1)) {
    insn_t *x = &g.insns[g.slots[s]];
    if (x->pc == pc && x->region == region_id)
      return x;
  }
  if (g.ninsns == g.cap_insns) {
    g.cap_insns = g.cap_insns ? 2 * g.cap_insns : 1024;
    g.insns = realloc(g.insns, g.cap_insns * sizeof *g.insns);
    if (!g.insns)
      oom();
  }
  insn_t *x = &g.insns[g.ninsns];
  memset(x, 0, sizeof *x);
  x->pc = pc;
  x->region = region_id;
  x->len = len;
  g.slots[s] = (int64_t)g.ninsns++;
  if (2 * g.ninsns > g.nslots)
    rehash();
  return insn(pc, region_id, len); /* the table may have moved */
}

static int stride_bucket(int64_t s) {
  if (s == 0)
    return STRIDE_BUCKETS / 2;
  uint64_t m = s < 0 ? (uint64_t)(-(s + 1)) + 1 : (uint64_t)s;
  int b = 64 - __builtin_clzll(m); /* 1 for |s| = 1, 2 for 2-3, ... */
  if (b > STRIDE_BUCKETS / 2)
    b = STRIDE_BUCKETS / 2;
  return STRIDE_BUCKETS / 2 + (s < 0 ? -b : b);
}

static int reuse_bucket(uint64_t d) {
  if (d == IC_REUSE_COLD)
    return REUSE_COLD;
  int b = d ? 64 - __builtin_clzll(d) : 0;
  return b < REUSE_COLD - 1 ? b : REUSE_COLD - 1;
}

static void add_pc(pcs_t *p, uint64_t pc) {
  for (int i = 0; i < p->n; i++)
    if (p->pc[i] == pc)
      return;
  if (p->n < MAX_MARK_PCS)
    p->pc[p->n++] = pc;
}

/* --- events --------------------------------------------------------------------------- */

static void window_push(region_t *r, int32_t index) {
  if (r->cur_n == g.window) { /* a block is complete: keep it with probability 1/blocks */
    r->blocks++;
    if (ic_rng_next(&g.rng) % r->blocks == 0) {
      win_t *t = r->kept;
      r->kept = r->cur;
      r->cur = t;
      r->kept_n = g.window;
    }
    r->cur_n = 0;
  }
  g.last_win = &r->cur[r->cur_n++];
  *g.last_win = (win_t){index, -1, STRIDE_BUCKETS / 2};
}

static void on_insn(uint64_t pc, uint32_t len) {
  g.last = NULL;
  g.last_win = NULL;
  if (!g.depth || !g.counting)
    return;
  int id = g.stack[g.depth - 1];
  insn_t *x = insn(pc, (uint32_t)id, len);
  x->execs++;
  region_t *r = region(id);
  r->insns++;
  g.last = x;
  if (g.window)
    window_push(r, (int32_t)(x - g.insns));
}

static void on_access(unsigned kind, uint64_t addr, unsigned size) {
  if (!g.depth)
    return;
  if (!size)
    size = 1;
  uint64_t first = addr >> g.cache.line_shift;
  uint64_t lastl = (addr + size - 1) >> g.cache.line_shift;
  region_t *r = g.counting ? region(g.stack[g.depth - 1]) : NULL;
  int worst = -1, rb = 0;
  for (uint64_t line = first; line <= lastl; line++) {
    int level = ic_cache_access(&g.cache, line);
    uint64_t prev;
    uint64_t d = ic_reuse_access(&g.reuse, line, &prev);
    if (!r)
      continue;
    r->served[level]++;
    rb = reuse_bucket(d);
    r->reuse[rb]++;
    if (prev < r->start_tick)
      r->footprint++;
    if (g.last) {
      g.last->served[level]++;
      g.last->reuse[rb]++;
    }
    if (level > worst)
      worst = level;
  }
  if (!r || !g.last)
    return;
  insn_t *x = g.last;
  bool load = kind == ICT_LOAD || kind == ICT_MODIFY;
  bool store = kind == ICT_STORE || kind == ICT_MODIFY;
  x->loads += load;
  x->stores += store;
  x->bytes += size;
  r->loads += load;
  r->stores += store;
  r->bytes += size;
  int sb = STRIDE_BUCKETS / 2;
  if (x->seen) {
    int64_t s = (int64_t)(addr - x->prev_addr);
    sb = stride_bucket(s);
    x->stride[sb]++;
    if (x->seen > 1 && s == x->prev_stride)
      x->regular++;
    x->prev_stride = s;
    x->seen = 2;
  } else {
    x->seen = 1;
  }
  x->prev_addr = addr;
  if (g.last_win && worst > g.last_win->level) {
    g.last_win->level = (int8_t)worst;
    g.last_win->stride = (int8_t)sb;
  }
}

static void on_mark(uint64_t pc, unsigned id, bool end) {
  if (!end) {
    if (g.depth == 0) {
      g.outer_entries++;
      g.counting = g.run + 1 == g.runs && g.run_entries++ >= g.skip;
    }
    if (g.depth == MAX_DEPTH)
      ic_die(IC_EXIT_FAIL, "regions nest deeper than %d", MAX_DEPTH);
    g.stack[g.depth++] = (int)id;
    region_t *r = region((int)id);
    r->used = true;
    r->entries++;
    add_pc(&r->begin, pc);
    if (g.counting) {
      r->counted_entries++;
      r->start_tick = g.reuse.ticks + 1;
    }
    return;
  }
  /* An end closes the innermost open region with its id; an end that matches none (a
   * marker reached by a jump, a region closed twice) is counted and ignored. */
  for (int d = g.depth - 1; d >= 0; d--)
    if (g.stack[d] == (int)id) {
      add_pc(&region((int)id)->end, pc);
      g.depth = d;
      return;
    }
  g.unmatched_ends++;
}

/* --- output --------------------------------------------------------------------------- */

static void array(ic_json_t *j, const char *key, const uint64_t *v, int n) {
  ic_json_array(j, key);
  for (int i = 0; i < n; i++)
    ic_json_u64(j, NULL, v[i]);
  ic_json_pop(j);
}

static void print_window(ic_json_t *j, const region_t *r) {
  const win_t *w = r->kept_n ? r->kept : r->cur;
  uint64_t n = r->kept_n ? r->kept_n : r->cur_n;
  ic_json_object(j, "window");
  ic_json_array(j, "pc");
  for (uint64_t i = 0; i < n; i++)
    ic_json_u64(j, NULL, g.insns[w[i].pc_index].pc);
  ic_json_pop(j);
  ic_json_array(j, "level");
  for (uint64_t i = 0; i < n; i++)
    ic_json_i64(j, NULL, w[i].level);
  ic_json_pop(j);
  ic_json_array(j, "stride");
  for (uint64_t i = 0; i < n; i++)
    ic_json_i64(j, NULL, w[i].stride - STRIDE_BUCKETS / 2);
  ic_json_pop(j);
  ic_json_pop(j);
}

/* One line per record, flushed once at the end: a trace has thousands of instructions. */
static void end_line(ic_json_t *j) {
  ic_json_close(j);
  fputc('\n', j->f);
}

static void print_all(FILE *f, bool complete, int64_t exit_code) {
  int nserved = g.cache.nlevels + 1;
  ic_json_t j;
  for (int id = 0; id < MAX_REGION; id++) {
    region_t *r = g.regions[id];
    if (!r || !r->used)
      continue;
    ic_json_begin(&j, f);
    ic_json_str(&j, "event", "region");
    ic_json_i64(&j, "region", id);
    ic_json_u64(&j, "entries", r->entries);
    ic_json_u64(&j, "counted_entries", r->counted_entries);
    ic_json_u64(&j, "insns", r->insns);
    ic_json_u64(&j, "loads", r->loads);
    ic_json_u64(&j, "stores", r->stores);
    ic_json_u64(&j, "bytes", r->bytes);
    ic_json_u64(&j, "footprint_lines", r->footprint);
    array(&j, "served", r->served, nserved);
    array(&j, "reuse", r->reuse, REUSE_BUCKETS);
    array(&j, "begin_pcs", r->begin.pc, r->begin.n);
    array(&j, "end_pcs", r->end.pc, r->end.n);
    if (g.window)
      print_window(&j, r);
    end_line(&j);
  }
  for (uint64_t i = 0; i < g.ninsns; i++) {
    const insn_t *x = &g.insns[i];
    ic_json_begin(&j, f);
    ic_json_str(&j, "event", "insn");
    ic_json_u64(&j, "region", x->region);
    ic_json_u64(&j, "pc", x->pc);
    ic_json_u64(&j, "len", x->len);
    ic_json_u64(&j, "execs", x->execs);
    ic_json_u64(&j, "loads", x->loads);
    ic_json_u64(&j, "stores", x->stores);
    ic_json_u64(&j, "bytes", x->bytes);
    ic_json_u64(&j, "regular", x->regular);
    array(&j, "served", x->served, nserved);
    array(&j, "stride", x->stride, STRIDE_BUCKETS);
    array(&j, "reuse", x->reuse, REUSE_BUCKETS);
    end_line(&j);
  }
  ic_json_begin(&j, f);
  ic_json_str(&j, "event", "end");
  ic_json_bool(&j, "complete", complete);
  ic_json_i64(&j, "exit_code", exit_code);
  ic_json_u64(&j, "records", g.records);
  ic_json_u64(&j, "runs", g.run);
  ic_json_u64(&j, "outer_entries", g.outer_entries);
  ic_json_u64(&j, "skipped", g.run_entries < g.skip ? g.run_entries : g.skip);
  ic_json_u64(&j, "unmatched_ends", g.unmatched_ends);
  ic_json_i64(&j, "open_at_end", g.depth);
  ic_json_u64(&j, "line", 1u << g.cache.line_shift);
  ic_json_array(&j, "levels");
  for (int i = 0; i < g.cache.nlevels; i++) {
    ic_json_object(&j, NULL);
    ic_json_u64(&j, "size", g.cache.level[i].size);
    ic_json_u64(&j, "ways", g.cache.level[i].ways);
    ic_json_u64(&j, "sets", g.cache.level[i].sets);
    ic_json_pop(&j);
  }
  ic_json_pop(&j);
  ic_json_end(&j);
}

/* --- options and main ----------------------------------------------------------------- */

enum { O_CACHE, O_LINE, O_SKIP, O_RUNS, O_WINDOW, O_SEED, O_INPUT, O_HELP };

static const ic_opt_t opts[] = {
    [O_CACHE] = {.name = "cache", .type = IC_OPT_STRING, .metavar = "SIZE:WAYS,...",
                 .help = "the modelled hierarchy from L1 data outwards, e.g. "
                         "48K:12,1M:16,32M:16 (at most 4 levels)"},
    [O_LINE] = {.name = "line", .type = IC_OPT_SIZE, .def = "64", .min = 8, .max = 4096,
                .help = "cache line size in bytes (a power of two)"},
    [O_SKIP] = {.name = "skip", .type = IC_OPT_U64, .def = "0",
                .help = "entries into an outermost region to simulate but not count "
                        "(warm-up repetitions), in the last run"},
    [O_RUNS] = {.name = "runs", .type = IC_OPT_U64, .def = "1", .min = 1, .max = 1000,
                .help = "runs of the program in the stream, each closed by its end record; "
                        "the ones before the last only warm the modelled caches"},
    [O_WINDOW] = {.name = "window", .type = IC_OPT_U64, .def = "0", .max = 65536,
                  .help = "also keep one window of this many consecutive dynamic "
                          "instructions per region, drawn uniformly; 0: none"},
    [O_SEED] = {.name = "seed", .type = IC_OPT_U64, .def = "1",
                .help = "seed of the window draw"},
    [O_INPUT] = {.name = "input", .type = IC_OPT_STRING, .metavar = "FILE",
                 .help = "read the records from FILE; unset: standard input"},
    [O_HELP] = IC_OPT_ENTRY_HELP,
};

static int parse_cache(const char *text, uint64_t *size, uint64_t *ways) {
  char buf[256];
  if (strlen(text) >= sizeof buf)
    ic_usage_error("--cache", "too long: '%s'", text);
  strcpy(buf, text);
  int n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(tok, ':');
    if (n == IC_CACHE_MAX_LEVELS)
      ic_usage_error("--cache", "at most %d levels", IC_CACHE_MAX_LEVELS);
    if (!colon)
      ic_usage_error("--cache", "'%s' is not SIZE:WAYS", tok);
    *colon = '\0';
    if (!ic_parse_size(tok, &size[n]) || !ic_parse_u64(colon + 1, &ways[n]) || !ways[n])
      ic_usage_error("--cache", "cannot parse '%s:%s' as SIZE:WAYS", tok, colon + 1);
    n++;
  }
  if (!n)
    ic_usage_error("--cache", "no level given");
  return n;
}

static void usage(FILE *f) {
  fputs("usage: ic-trace-stats --cache SIZE:WAYS,... [options] < TRACE\n\n"
        "Summarises an ictrace record stream per region and static instruction.\n\n", f);
  ic_opts_help(f, opts, IC_NOPTS(opts));
  ic_opts_units_help(f);
}

int main(int argc, char **argv) {
  ic_set_progname("ic-trace-stats");
  ic_optval_t v[IC_NOPTS(opts)];
  ic_opts_main(&(ic_optset_t){opts, IC_NOPTS(opts), v}, argc, argv, O_HELP, usage);
  if (!v[O_CACHE].set)
    ic_usage_error("--cache", "required (e.g. --cache 48K:12,1M:16,32M:16)");
  uint64_t size[IC_CACHE_MAX_LEVELS], ways[IC_CACHE_MAX_LEVELS];
  int nlevels = parse_cache(v[O_CACHE].s, size, ways);
  char err[160];
  if (!ic_cache_init(&g.cache, nlevels, size, ways, v[O_LINE].u, err, sizeof err))
    ic_usage_error("--cache", "%s", err);
  if (!ic_reuse_init(&g.reuse))
    oom();
  g.skip = v[O_SKIP].u;
  g.runs = v[O_RUNS].u;
  g.window = v[O_WINDOW].u;
  ic_rng_seed(&g.rng, v[O_SEED].u);
  rehash();
  FILE *in = stdin;
  if (v[O_INPUT].set && !(in = fopen(v[O_INPUT].s, "rb")))
    ic_usage_error("--input", "cannot open %s: %s", v[O_INPUT].s, strerror(errno));

  static uint64_t rec[2 * 8192];
  bool complete = false;
  int64_t exit_code = -1;
  size_t n;
  while (!complete && (n = fread(rec, 16, 8192, in)) > 0) {
    for (size_t i = 0; i < n; i++) {
      uint64_t a = rec[2 * i], b = rec[2 * i + 1];
      g.records++;
      switch (ICT_KIND(b)) {
      case ICT_INSN:
        on_insn(a, ICT_SIZE(b));
        break;
      case ICT_LOAD:
      case ICT_STORE:
      case ICT_MODIFY:
        on_access(ICT_KIND(b), a, ICT_SIZE(b));
        break;
      case ICT_MARK:
        on_mark(a, ICT_MARK_ID(b), ICT_MARK_END(b));
        break;
      case ICT_EOS:
        exit_code = (int64_t)a;
        complete = ++g.run == g.runs;
        if (!complete) { /* a region the run left open ends with it */
          g.depth = 0;
          g.run_entries = 0;
          g.counting = false;
          g.last = NULL;
          g.last_win = NULL;
        }
        break;
      default:
        ic_die(IC_EXIT_FAIL, "record %" PRIu64 ": unknown kind %u (not an ictrace stream?)",
               g.records, ICT_KIND(b));
      }
      if (complete)
        break;
    }
  }
  print_all(stdout, complete, exit_code);
  if (!complete)
    ic_die(IC_EXIT_FAIL, "the trace ended without its end record: the traced program was "
                         "killed or the tracer failed");
  return IC_EXIT_OK;
}
