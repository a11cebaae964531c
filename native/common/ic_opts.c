#include "ic_opts.h"

#include <stdlib.h>
#include <string.h>

#include "ic_common.h"

static const char *const type_names[] = {
    [IC_OPT_FLAG] = "flag",         [IC_OPT_U64] = "u64",   [IC_OPT_SIZE] = "size",
    [IC_OPT_DURATION] = "duration", [IC_OPT_ENUM] = "enum", [IC_OPT_STRING] = "string",
};

static bool numeric(const ic_opt_t *o) { return o->type == IC_OPT_U64 || o->type == IC_OPT_SIZE; }

static void format_bound(const ic_opt_t *o, uint64_t v, char *buf, size_t cap) {
  if (o->type == IC_OPT_SIZE)
    ic_format_size(v, buf, cap);
  else
    snprintf(buf, cap, "%llu", (unsigned long long)v);
}

static bool in_range(const ic_opt_t *o, uint64_t v, char *why, size_t cap) {
  char lo[32], hi[32], got[32];
  if (v >= o->min && (!o->max || v <= o->max))
    return true;
  format_bound(o, o->min, lo, sizeof lo);
  format_bound(o, o->max, hi, sizeof hi);
  format_bound(o, v, got, sizeof got);
  if (o->max)
    snprintf(why, cap, "%s is out of range %s..%s", got, lo, hi);
  else
    snprintf(why, cap, "%s is below the minimum %s", got, lo);
  return false;
}

static bool parse_enum(const ic_opt_t *o, const char *text, ic_optval_t *v, char *why,
                       size_t cap) {
  size_t n = 0;
  for (; o->choices[n]; n++)
    if (!strcmp(text, o->choices[n])) {
      v->u = n;
      v->s = o->choices[n];
      return true;
    }
  char list[256] = "";
  for (size_t i = 0; i < n; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
             o->choices[i]);
  snprintf(why, cap, "'%s' is not one of %s", text, list);
  return false;
}

/* Text to typed value; false with a reason in why. */
static bool parse_value(const ic_opt_t *o, const char *text, ic_optval_t *v, char *why,
                        size_t cap) {
  switch (o->type) {
  case IC_OPT_FLAG:
    v->u = 1;
    break;
  case IC_OPT_U64:
  case IC_OPT_SIZE:
    if (!(o->type == IC_OPT_SIZE ? ic_parse_size(text, &v->u) : ic_parse_u64(text, &v->u))) {
      snprintf(why, cap, "cannot parse '%s'", text);
      return false;
    }
    if (!in_range(o, v->u, why, cap))
      return false;
    break;
  case IC_OPT_DURATION:
    if (!ic_parse_duration(text, &v->d)) {
      snprintf(why, cap, "cannot parse '%s' (use 10, 10s, 500ms, 2m, 1h)", text);
      return false;
    }
    break;
  case IC_OPT_ENUM:
    if (!parse_enum(o, text, v, why, cap))
      return false;
    break;
  case IC_OPT_STRING:
    v->s = text;
    break;
  }
  v->set = true;
  return true;
}

static void apply_defaults(const ic_optset_t *set) {
  char why[256];
  for (size_t i = 0; i < set->n; i++) {
    const ic_opt_t *o = &set->opts[i];
    set->vals[i] = (ic_optval_t){0};
    if (o->def && !parse_value(o, o->def, &set->vals[i], why, sizeof why))
      ic_die(IC_EXIT_FAIL, "built-in default of --%s: %s", o->name, why);
  }
}

/* The option named by arg ("--size" or "--size=4M"), with its value slot; NULL if none. */
static const ic_opt_t *lookup(const ic_optset_t *sets, size_t nsets, const char *name,
                              size_t len, ic_optval_t **val) {
  for (size_t s = 0; s < nsets; s++)
    for (size_t i = 0; i < sets[s].n; i++)
      if (strlen(sets[s].opts[i].name) == len && !strncmp(sets[s].opts[i].name, name, len)) {
        *val = &sets[s].vals[i];
        return &sets[s].opts[i];
      }
  return NULL;
}

void ic_opts_parse(const ic_optset_t *sets, size_t nsets, int argc, char **argv,
                   const char *context) {
  char why[256];
  for (size_t s = 0; s < nsets; s++)
    apply_defaults(&sets[s]);
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (strncmp(arg, "--", 2))
      ic_usage_error(arg, "unexpected argument (options start with --; see %s --help)", context);
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    ic_optval_t *val;
    const ic_opt_t *o = lookup(sets, nsets, name, len, &val);
    char optname[128];
    snprintf(optname, sizeof optname, "--%.*s", (int)len, name);
    if (!o)
      ic_usage_error(optname, "unknown option for %s (see %s --help)", context, context);
    const char *text = eq ? eq + 1 : NULL;
    if (o->type == IC_OPT_FLAG && text)
      ic_usage_error(optname, "takes no value");
    if (o->type != IC_OPT_FLAG && !text) {
      if (i + 1 >= argc)
        ic_usage_error(optname, "missing value");
      text = argv[++i];
    }
    if (!parse_value(o, text, val, why, sizeof why))
      ic_usage_error(optname, "%s", why);
  }
}

static void metavar(const ic_opt_t *o, char *buf, size_t cap) {
  static const char *const by_type[] = {
      [IC_OPT_FLAG] = "", [IC_OPT_U64] = "N", [IC_OPT_SIZE] = "SIZE",
      [IC_OPT_DURATION] = "DURATION", [IC_OPT_ENUM] = "", [IC_OPT_STRING] = "TEXT",
  };
  buf[0] = '\0';
  if (o->metavar) {
    snprintf(buf, cap, "%s", o->metavar);
  } else if (o->type == IC_OPT_ENUM) {
    for (size_t i = 0; o->choices[i]; i++)
      snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", i ? "|" : "", o->choices[i]);
  } else {
    snprintf(buf, cap, "%s", by_type[o->type]);
  }
}

#define HELP_INDENT 31
#define HELP_WIDTH 100

/* Prints text word-wrapped into the help column; the cursor is at column `col`. */
static void wrap(FILE *f, const char *text, int col) {
  bool first = true;
  for (const char *p = text + strspn(text, " "); *p; p += strspn(p, " ")) {
    int word = (int)strcspn(p, " ");
    if (!first && col + 1 + word > HELP_WIDTH) {
      col = fprintf(f, "\n%*s", HELP_INDENT, "") - 1;
    } else if (!first) {
      col += fprintf(f, " ");
    }
    col += fprintf(f, "%.*s", word, p);
    p += word;
    first = false;
  }
  fputc('\n', f);
}

void ic_opts_main(const ic_optset_t *set, int argc, char **argv, size_t help,
                  void (*usage)(FILE *f)) {
  ic_opts_parse(set, 1, argc - 1, argv + 1, ic_progname());
  if (set->vals[help].set) {
    usage(stdout);
    exit(IC_EXIT_OK);
  }
}

void ic_opts_help(FILE *f, const ic_opt_t *opts, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const ic_opt_t *o = &opts[i];
    char mv[128], left[192], lo[32], hi[32], text[1024];
    metavar(o, mv, sizeof mv);
    snprintf(left, sizeof left, "--%s%s%s", o->name, mv[0] ? " " : "", mv);
    size_t len = (size_t)snprintf(text, sizeof text, "%s", o->help);
    if (o->def && o->type != IC_OPT_FLAG && len < sizeof text)
      len += (size_t)snprintf(text + len, sizeof text - len, " [default %s]", o->def);
    if (numeric(o) && o->max && len < sizeof text) {
      format_bound(o, o->min, lo, sizeof lo);
      format_bound(o, o->max, hi, sizeof hi);
      snprintf(text + len, sizeof text - len, " [%s..%s]", lo, hi);
    }
    int col = fprintf(f, "  %-*s ", HELP_INDENT - 3, left);
    if (col > HELP_INDENT) /* a long option name pushes its help onto the next line */
      col = fprintf(f, "\n%*s", HELP_INDENT, "") - 1;
    wrap(f, text, col);
  }
}

void ic_opts_units_help(FILE *f) {
  fputs("SIZE is bytes with binary units: 512, 4K (= 4KiB = 4096), 2M, 1G.\n"
        "DURATION is seconds unless suffixed: 10, 10s, 500ms, 2m, 1h.\n"
        "N is decimal or 0x-prefixed hexadecimal.\n",
        f);
}

/* The default as JSON: numbers for numbers, null when unset. */
static void json_default(ic_json_t *j, const ic_opt_t *o) {
  char esc[512];
  ic_optval_t v = {0};
  if (o->type == IC_OPT_FLAG)
    ic_json_bool(j, "default", false);
  else if (!o->def || !parse_value(o, o->def, &v, esc, sizeof esc))
    ic_json_null(j, "default");
  else if (numeric(o))
    ic_json_u64(j, "default", v.u);
  else if (o->type == IC_OPT_DURATION)
    ic_json_f64(j, "default", v.d);
  else
    ic_json_str(j, "default", o->def);
}

static void json_bound(ic_json_t *j, const char *key, const ic_opt_t *o, uint64_t v,
                       bool present) {
  if (numeric(o) && present)
    ic_json_u64(j, key, v);
  else
    ic_json_null(j, key);
}

void ic_opts_json(ic_json_t *j, const char *key, const ic_opt_t *opts, size_t n) {
  ic_json_array(j, key);
  for (size_t i = 0; i < n; i++) {
    const ic_opt_t *o = &opts[i];
    ic_json_object(j, NULL);
    ic_json_str(j, "name", o->name);
    ic_json_str(j, "type", type_names[o->type]);
    json_default(j, o);
    json_bound(j, "min", o, o->min, true);
    json_bound(j, "max", o, o->max, o->max != 0);
    if (o->type == IC_OPT_ENUM) {
      ic_json_array(j, "choices");
      for (size_t c = 0; o->choices[c]; c++)
        ic_json_str(j, NULL, o->choices[c]);
      ic_json_pop(j);
    }
    ic_json_str(j, "help", o->help);
    ic_json_pop(j);
  }
  ic_json_pop(j);
}
