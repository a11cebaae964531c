/* A control task of the kind intercore's users run (controller.h: FIR, calibration map, PID).
 * It is nobody's victim: an ordinary program that marks its three stages with ic_user.h, so
 * `intercore measure run -- ./control` reports each stage's slowdown (docs/user-programs.md).
 * Strict C11: it builds with -std=c11 and no feature macro.
 *
 *   ./control [--steps N] [--map ROWS]    prints the plant's final state
 */
#include <stdio.h>

#include "args.h"
#include "controller.h"

int main(int argc, char **argv) {
  long steps = arg_long(argc, argv, "--steps", 20000, 1, 100000000);
  int rows = (int)arg_long(argc, argv, "--map", 512, 2, 8192);
  controller c;
  if (!controller_init(&c, rows))
    return 1;
  for (long s = 0; s < steps; s++)
    controller_step(&c);
  printf("control: %ld steps, plant %.6f, last command %.6f\n", steps, c.plant, c.u);
  controller_free(&c);
  return 0;
}
