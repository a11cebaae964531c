/* Region markers for a user's own program, measured as it is by `intercore measure run -- ./prog`
 * (docs/user-programs.md). No hooks and no rewrite: declare the regions' names once, then
 * mark code with the same IC_REGION_BEGIN(id) / IC_REGION_END(id) as intercore's victims.
 *
 *   #include <ic_user.h>
 *   enum { FIR, PID };
 *   static const char *const regions[] = {"fir", "pid"};
 *   int main(void) {
 *     ic_user_regions(regions, 2);
 *     ...
 *     IC_REGION_BEGIN(FIR); fir_step(...); IC_REGION_END(FIR);
 *   }
 *
 *   cc -std=c11 $(pkg-config --cflags intercore) prog.c $(pkg-config --libs intercore)
 *
 * Under `intercore measure run` (ic-run sets IC_RUN_FD), every run of the program is one
 * repetition: a region entered several times in a run adds up, and the markers write into
 * memory shared with ic-run, which reads it once the program has exited (exit code 0; a
 * program that fails is not measured). Run any other way, the markers record nothing.
 * Region ids are compile-time constants 0..14 on the thread that called ic_user_regions();
 * "total" is the name of the whole run, which ic-run times itself. */
#ifndef IC_USER_H
#define IC_USER_H

#include <stdbool.h>

#include "ic_region.h"

/* Declares regions 0..nregions-1, names[id] naming region id (the array must outlive the
 * program's run). Returns false, with a message on stderr, when the names cannot be taken
 * (too many, too long, "total") or the block ic-run handed over is unusable; the markers
 * then record nothing. */
bool ic_user_regions(const char *const *names, int nregions);

#endif
