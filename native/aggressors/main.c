/* ic-aggr KIND [options]: dispatches to one aggressor kind (docs/native-contract.md). */
#include <stdio.h>
#include <string.h>

#include "aggressors.h"

#define IC_AGGR_ENTRY(name) &ic_aggr_##name,
static const ic_aggressor_t *const kinds[] = {IC_AGGRESSORS(IC_AGGR_ENTRY)};
#undef IC_AGGR_ENTRY
#define NKINDS (sizeof kinds / sizeof kinds[0])

static const char *kind_names(char *buf, size_t cap) {
  buf[0] = '\0';
  for (size_t i = 0; i < NKINDS; i++)
    snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", i ? ", " : "", kinds[i]->name);
  return buf;
}

static void usage(FILE *f) {
  fprintf(f, "usage: %s KIND [options]    run one memory aggressor until stopped\n"
             "       %s KIND --help      the kind's options, defaults and units\n"
             "       %s --list           every kind and its options as JSON lines\n\n"
             "kinds:\n",
          ic_progname(), ic_progname(), ic_progname());
  for (size_t i = 0; i < NKINDS; i++)
    fprintf(f, "  %-10s %s\n", kinds[i]->name, kinds[i]->help);
  fputc('\n', f);
  ic_aggr_common_help(f);
}

int main(int argc, char **argv) {
  char names[256];
  ic_set_progname("ic-aggr");
  if (argc < 2)
    ic_usage_error(NULL, "missing KIND (one of: %s; see ic-aggr --help)",
                   kind_names(names, sizeof names));
  if (!strcmp(argv[1], "--help")) {
    usage(stdout);
    return IC_EXIT_OK;
  }
  if (!strcmp(argv[1], "--list")) {
    for (size_t i = 0; i < NKINDS; i++)
      ic_aggr_describe(stdout, kinds[i]);
    return IC_EXIT_OK;
  }
  for (size_t i = 0; i < NKINDS; i++)
    if (!strcmp(argv[1], kinds[i]->name))
      return ic_aggr_main(kinds[i], argc - 2, argv + 2);
  ic_usage_error(NULL, "unknown kind '%s' (one of: %s)", argv[1], kind_names(names, sizeof names));
}
