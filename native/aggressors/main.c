/* ic-aggr KIND [options]: dispatches to one aggressor kind (docs/native-contract.md). */
#include <stdio.h>
#include <string.h>

#include "aggressors.h"

static void usage(FILE *f) {
  fprintf(f, "usage: %s KIND [options]    run one memory aggressor until stopped\n"
             "       %s KIND --help      the kind's options, defaults and units\n"
             "       %s --list           every kind and its options as JSON lines\n\n"
             "kinds:\n",
          ic_progname(), ic_progname(), ic_progname());
  for (size_t i = 0; i < ic_aggr_nkinds; i++)
    fprintf(f, "  %-10s %s\n", ic_aggr_kinds[i]->name, ic_aggr_kinds[i]->help);
  fputc('\n', f);
  ic_aggr_common_help(f);
}

int main(int argc, char **argv) {
  char names[256];
  ic_set_progname("ic-aggr");
  if (argc < 2)
    ic_usage_error(NULL, "missing KIND (one of: %s; see ic-aggr --help)",
                   ic_aggr_kind_names(names, sizeof names));
  if (!strcmp(argv[1], "--help")) {
    usage(stdout);
    return IC_EXIT_OK;
  }
  if (!strcmp(argv[1], "--list")) {
    for (size_t i = 0; i < ic_aggr_nkinds; i++)
      ic_aggr_describe(stdout, ic_aggr_kinds[i]);
    return IC_EXIT_OK;
  }
  const ic_aggressor_t *kind = ic_aggr_find(argv[1]);
  if (!kind)
    ic_usage_error(NULL, "unknown kind '%s' (one of: %s)", argv[1],
                   ic_aggr_kind_names(names, sizeof names));
  return ic_aggr_main(kind, argc - 2, argv + 2);
}
