/* Options as data (stress-ng's opts[]): one typed table per tool or kind drives parsing,
 * range checks, --help and the machine-readable listing, so they cannot disagree. */
#ifndef IC_OPTS_H
#define IC_OPTS_H

#include <sched.h> /* CPU_SETSIZE, for IC_OPT_ENTRY_CPU */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ic_common.h" /* ic_json_t */

typedef enum {
  IC_OPT_FLAG,     /* --mlock: no value */
  IC_OPT_U64,      /* decimal or 0x hex */
  IC_OPT_SIZE,     /* bytes: 512, 4K, 2M, 1G */
  IC_OPT_DURATION, /* seconds: 10, 10s, 500ms, 2m */
  IC_OPT_ENUM,     /* one of choices[] */
  IC_OPT_STRING,
} ic_opt_type_t;

typedef struct {
  const char *name;           /* "size" for --size */
  ic_opt_type_t type;
  const char *def;            /* default, spelt as a user would; NULL: unset unless given */
  uint64_t min, max;          /* inclusive bounds for u64 and size; max 0: unbounded */
  const char *const *choices; /* enum: NULL-terminated */
  const char *metavar;        /* --help placeholder; NULL: derived from the type */
  const char *help;           /* what it does, its unit, what unset means */
} ic_opt_t;

typedef struct {
  bool set;      /* given, or defaulted */
  uint64_t u;    /* u64, size, flag (1), enum (index into choices) */
  double d;      /* duration in seconds */
  const char *s; /* string, or the chosen enum name */
} ic_optval_t;

/* One table with the values it fills, indexed alike. */
typedef struct {
  const ic_opt_t *opts;
  size_t n;
  ic_optval_t *vals;
} ic_optset_t;

#define IC_NOPTS(table) (sizeof(table) / sizeof((table)[0]))

/* Entries every native tool takes, spelt once so ic-aggr and ic-victim cannot drift. */
#define IC_OPT_ENTRY_CPU                                                                   \
  {.name = "cpu", .type = IC_OPT_U64, .max = CPU_SETSIZE - 1,                              \
   .help = "pin to CPU N (sched_setaffinity); an offline CPU is an error; unset: not pinned"}
#define IC_OPT_ENTRY_RT_PRIORITY                                                           \
  {.name = "rt-priority", .type = IC_OPT_U64, .min = 1, .max = 99, .metavar = "P",         \
   .help = "run SCHED_FIFO at priority P; if refused: a warning and \"rt\":false; "        \
           "unset: SCHED_OTHER"}
#define IC_OPT_ENTRY_MLOCK                                                                 \
  {.name = "mlock", .type = IC_OPT_FLAG,                                                    \
   .help = "mlockall after initialisation, so no page is reclaimed mid-run"}
#define IC_OPT_ENTRY_HELP {.name = "help", .type = IC_OPT_FLAG, .help = "print this help and exit"}

/* Applies defaults, then parses argv (`--name value` or `--name=value`) against the sets
 * in order. Any error is a usage error naming the option; `context` names the tool in
 * the "unknown option" message ("ic-aggr bw"). */
void ic_opts_parse(const ic_optset_t *sets, size_t nsets, int argc, char **argv,
                   const char *context);
/* The start of a tool's main: parses argv[1…] into one table (ic_opts_parse, in the name
 * of ic_progname()) and, when the table's --help entry (index `help`) is given, prints
 * usage to stdout and exits 0. */
void ic_opts_main(const ic_optset_t *set, int argc, char **argv, size_t help,
                  void (*usage)(FILE *f));
/* Aligned "  --name METAVAR  help [default X; range]" lines. */
void ic_opts_help(FILE *f, const ic_opt_t *opts, size_t n);
/* The table as the next value of j (under key): a JSON array of
 * {name, type, default, min, max, choices?, help}. */
void ic_opts_json(ic_json_t *j, const char *key, const ic_opt_t *opts, size_t n);
/* Legend for the SIZE and DURATION placeholders used by ic_opts_help. */
void ic_opts_units_help(FILE *f);

#endif
