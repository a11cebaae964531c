/* The block ic-run shares with the user's program it runs (docs/native-contract.md, "User
 * programs"): a memfd inherited by the program, named by IC_RUN_FD. ic-run resets it before
 * every run of the program; the program's markers (ic_user.h) write its regions' samples
 * into it; ic-run reads it once the program has exited. Same machine, same ABI: the layout
 * is the C struct. */
#ifndef IC_RUN_BLOCK_H
#define IC_RUN_BLOCK_H

#include <stdint.h>

#include "ic_region.h"

#define IC_RUN_MAGIC 0x31525449u /* "ITR1" */
#define IC_RUN_VERSION 1u
#define IC_RUN_FD_ENV "IC_RUN_FD"
/* "wall": the markers keep raw counter ticks (ic-run converts them); "cpu": thread CPU time. */
#define IC_RUN_CLOCK_ENV "IC_RUN_CLOCK"

enum { IC_RUN_MAX_REGIONS = 15, IC_RUN_NAME_LEN = 48 };

typedef struct {
  uint32_t magic;
  uint32_t version;
  uint32_t nregions; /* declared by the program; 0: it declared none (or is not marked) */
  uint32_t reserved;
  uint64_t dropped;  /* marker calls outside the declared regions, published at exit */
  char names[IC_RUN_MAX_REGIONS][IC_RUN_NAME_LEN];
  ic_sample_t samples[IC_RUN_MAX_REGIONS];
} ic_run_block_t;

#endif
