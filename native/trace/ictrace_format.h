/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-or-later
 *
 * The record stream between the Valgrind tool (ictrace.c, GPL like every Valgrind tool) and
 * its reader (ic-trace-stats, Apache-2.0): nothing but this layout is shared, so the two
 * stay separate programs talking through a pipe.
 *
 * Every record is 16 bytes, little-endian: a = an address (instruction, data or marker PC),
 * b = kind in bits 0-7 and a kind-specific value above. */
#ifndef ICTRACE_FORMAT_H
#define ICTRACE_FORMAT_H

enum {
  ICT_INSN = 1,   /* a = PC; b >> 8 = instruction length in bytes */
  ICT_LOAD = 2,   /* a = data address; b >> 8 = bytes read; the access of the last INSN */
  ICT_STORE = 3,  /* as LOAD, bytes written */
  ICT_MODIFY = 4, /* read and written at the same address (x86 read-modify-write) */
  ICT_MARK = 5,   /* a = marker PC; (b >> 8) & 0x7fff = region id; bit 23 of b: region end */
  ICT_EOS = 6,    /* end of stream, written at the client's exit; a = its exit code */
};

#define ICT_KIND(b) ((unsigned)((b) & 0xff))
#define ICT_SIZE(b) ((unsigned)(((b) >> 8) & 0xffffff))
#define ICT_MARK_ID(b) ((unsigned)(((b) >> 8) & 0x7fff))
#define ICT_MARK_END(b) ((unsigned)(((b) >> 23) & 1))

/* The marker instruction on x86-64 (ic_arch.h, IC_ARCH_TRACE_MARK): nopl disp32(%rax),
 * bytes 0f 1f 80 d0 d1 d2 d3, with disp32 = 0x4943'0000 | end << 15 | id. */
#define ICT_MARK_LEN 7
#define ICT_MARK_MAGIC 0x4943u

#endif
