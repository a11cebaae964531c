#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ic_common.h"
#include "ic_opts.h"
#include "ic_test.h"

enum { O_SIZE, O_MLP, O_OP, O_NAME, O_FLAG, O_DUR, O_UNSET };
static const char *const ops[] = {"read", "write", NULL};
static const ic_opt_t table[] = {
    [O_SIZE] = {.name = "size", .type = IC_OPT_SIZE, .def = "4M", .min = 4096, .max = 1ULL << 30,
                .help = "bytes"},
    [O_MLP] = {.name = "mlp", .type = IC_OPT_U64, .def = "1", .min = 1, .max = 16, .help = "n"},
    [O_OP] = {.name = "op", .type = IC_OPT_ENUM, .def = "read", .choices = ops, .help = "op"},
    [O_NAME] = {.name = "name", .type = IC_OPT_STRING, .help = "name"},
    [O_FLAG] = {.name = "flag", .type = IC_OPT_FLAG, .help = "flag"},
    [O_DUR] = {.name = "dur", .type = IC_OPT_DURATION, .def = "0", .help = "time"},
    [O_UNSET] = {.name = "unset", .type = IC_OPT_U64, .help = "no default"},
};

static void parse(ic_optval_t *vals, int argc, char **argv) {
  ic_optset_t set = {table, IC_NOPTS(table), vals};
  ic_opts_parse(&set, 1, argc, argv, "test");
}

static void test_values(void) {
  ic_optval_t v[IC_NOPTS(table)];
  char *args[] = {"--size=8K", "--mlp", "0x10", "--op", "write", "--name", "a b", "--flag",
                  "--dur", "500ms"};
  parse(v, 10, args);
  CHECK(v[O_SIZE].u == 8192);
  CHECK(v[O_MLP].u == 16);
  CHECK(v[O_OP].u == 1 && !strcmp(v[O_OP].s, "write"));
  CHECK(!strcmp(v[O_NAME].s, "a b"));
  CHECK(v[O_FLAG].set && v[O_FLAG].u == 1);
  CHECK(v[O_DUR].d == 0.5);
  CHECK(!v[O_UNSET].set);

  parse(v, 0, NULL);
  CHECK(v[O_SIZE].set && v[O_SIZE].u == 4U << 20);
  CHECK(v[O_OP].u == 0 && !strcmp(v[O_OP].s, "read"));
  CHECK(!v[O_FLAG].set && !v[O_NAME].set);
}

/* Runs the parse in a child: it must exit 2 with exactly the message want. */
static void usage_error(int argc, char **argv, const char *want) {
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    ic_optval_t v[IC_NOPTS(table)];
    parse(v, argc, argv);
    _exit(0);
  }
  close(fds[1]);
  char err[512] = {0};
  size_t n = 0;
  ssize_t got;
  while (n < sizeof err - 1 && (got = read(fds[0], err + n, sizeof err - 1 - n)) > 0)
    n += (size_t)got;
  close(fds[0]);
  int status;
  waitpid(pid, &status, 0);
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == IC_EXIT_USAGE && !strcmp(err, want);
  if (!ok)
    fprintf(stderr, "status %d, stderr '%s', want '%s'\n", status, err, want);
  CHECK(ok);
}

static void test_errors(void) {
  ic_set_progname("ic-test");
  usage_error(2, (char *[]){"--size", "12XB"}, "ic-test: --size: cannot parse '12XB'\n");
  usage_error(1, (char *[]){"--size=1K"}, "ic-test: --size: 1K is out of range 4K..1G\n");
  usage_error(2, (char *[]){"--mlp", "0"}, "ic-test: --mlp: 0 is out of range 1..16\n");
  usage_error(2, (char *[]){"--op", "rmw"}, "ic-test: --op: 'rmw' is not one of read, write\n");
  usage_error(1, (char *[]){"--mlp"}, "ic-test: --mlp: missing value\n");
  usage_error(1, (char *[]){"--flag=1"}, "ic-test: --flag: takes no value\n");
  usage_error(1, (char *[]){"--bogus=1"}, "ic-test: --bogus: unknown option for test (see test --help)\n");
  usage_error(1, (char *[]){"stray"},
              "ic-test: stray: unexpected argument (options start with --; see test --help)\n");
  usage_error(2, (char *[]){"--dur", "5parsecs"},
              "ic-test: --dur: cannot parse '5parsecs' (use 10, 10s, 500ms, 2m, 1h)\n");
}

static void test_help_and_json(void) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  ic_opts_help(f, table, IC_NOPTS(table));
  fclose(f);
  CHECK(strstr(out, "--size SIZE") && strstr(out, "[default 4M] [4K..1G]"));
  CHECK(strstr(out, "--op read|write"));
  free(out);
  f = open_memstream(&out, &len);
  ic_json_t j;
  ic_json_begin(&j, f);
  ic_opts_json(&j, "options", table, 3);
  ic_json_close(&j);
  fclose(f);
  const char *want = "{\"options\":[{\"name\":\"size\",\"type\":\"size\",\"default\":4194304,"
                     "\"min\":4096,\"max\":1073741824,\"help\":\"bytes\"},{\"name\":\"mlp\","
                     "\"type\":\"u64\",\"default\":1,\"min\":1,\"max\":16,\"help\":\"n\"},"
                     "{\"name\":\"op\",\"type\":\"enum\",\"default\":\"read\",\"min\":null,"
                     "\"max\":null,\"choices\":[\"read\",\"write\"],\"help\":\"op\"}]}";
  if (strcmp(out, want))
    fprintf(stderr, "got  %s\nwant %s\n", out, want);
  CHECK(!strcmp(out, want));
  free(out);
}

int main(void) {
  test_values();
  test_errors();
  test_help_and_json();
  return TEST_RESULT();
}
