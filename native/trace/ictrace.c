/* SPDX-License-Identifier: GPL-2.0-or-later
 *
 * ictrace: a Valgrind tool that records, inside the regions a program marks with
 * IC_REGION_BEGIN/END (ic_region.h) or IC_TRACE_BEGIN/END (ic_mark.h), every executed
 * instruction (PC, length) and every data access (address, size, load/store/modify), as the
 * 16-byte records of ictrace_format.h, written to a file or an inherited descriptor.
 *
 * Markers need no side table and cost nothing natively: each is one no-op instruction whose
 * encoding carries the region id, recognised here when its block is translated. Outside
 * every region the instrumentation is guarded off by one load per block (and one after each
 * marker), so a program's set-up runs at Valgrind's base speed.
 *
 * The analysis (cache model, strides, reuse distances) lives in ic-trace-stats, a separate
 * program reading the stream through a pipe: this file is linked with Valgrind's core and
 * therefore GPL, like every Valgrind tool; nothing else in intercore is.
 *
 * valgrind --tool=ictrace [--out=FILE | --out-fd=N] [--maps=FILE] PROGRAM [ARGS]
 */
#include "pub_tool_basics.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_machine.h"
#include "pub_tool_options.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_vki.h"

#include "ictrace_format.h"

typedef struct {
  ULong a, b;
} Rec;

/* --- options ------------------------------------------------------------------------ */

static const HChar *clo_out = NULL;
static const HChar *clo_maps = NULL;
static Long clo_out_fd = -1;

static Bool ict_process_cmd_line_option(const HChar *arg) {
  if VG_STR_CLO (arg, "--out", clo_out) {
  } else if VG_INT_CLO (arg, "--out-fd", clo_out_fd) {
  } else if VG_STR_CLO (arg, "--maps", clo_maps) {
  } else
    return False;
  return True;
}

static void ict_print_usage(void) {
  VG_(printf)("    --out=FILE     write the record stream to FILE\n"
              "    --out-fd=N     write it to the inherited descriptor N instead\n"
              "    --maps=FILE    at exit, write one line per loaded object:\n"
              "                   text_avma text_size text_bias path\n");
}

static void ict_print_debug_usage(void) { VG_(printf)("    (none)\n"); }

/* --- the record buffer -------------------------------------------------------------- */

#define NBUF 8192
static Rec buf[NBUF];
static Int nbuf = 0;
static Int out_fd = -1;

/* 1 while at least one region is open: the guard every traced event tests. */
static UInt tracing = 0;
static Int depth = 0;

static void flush(void) {
  const UChar *p = (const UChar *)buf;
  Int left = nbuf * (Int)sizeof(Rec);
  while (left > 0) {
    Int w = VG_(write)(out_fd, p, left);
    if (w <= 0) {
      VG_(umsg)("ictrace: writing the trace failed; is the reader gone?\n");
      VG_(exit)(1);
    }
    p += w;
    left -= w;
  }
  nbuf = 0;
}

static inline void put(ULong a, ULong b) {
  buf[nbuf].a = a;
  buf[nbuf].b = b;
  if (++nbuf == NBUF)
    flush();
}

/* --- helpers called from the instrumented code ------------------------------------------ */

static VG_REGPARM(2) void ict_insn(Addr pc, UWord len) { put(pc, ICT_INSN | (len << 8)); }

static VG_REGPARM(2) void ict_load(Addr a, UWord size) { put(a, ICT_LOAD | (size << 8)); }

static VG_REGPARM(2) void ict_store(Addr a, UWord size) { put(a, ICT_STORE | (size << 8)); }

static VG_REGPARM(2) void ict_modify(Addr a, UWord size) { put(a, ICT_MODIFY | (size << 8)); }

/* Guarded accesses (LoadG/StoreG, guarded dirty helpers): `on` is the guest's guard. */
static VG_REGPARM(3) void ict_load_if(Addr a, UWord size, UWord on) {
  if (on)
    put(a, ICT_LOAD | (size << 8));
}

static VG_REGPARM(3) void ict_store_if(Addr a, UWord size, UWord on) {
  if (on)
    put(a, ICT_STORE | (size << 8));
}

static VG_REGPARM(3) void ict_modify_if(Addr a, UWord size, UWord on) {
  if (on)
    put(a, ICT_MODIFY | (size << 8));
}

/* A begin is recorded after tracing starts and an end before it stops, so the stream of a
 * region is enclosed by its own two marks. */
static VG_REGPARM(2) void ict_mark(Addr pc, UWord word) {
  UWord id = word & 0x7fff;
  Bool end = (word >> 15) & 1;
  ULong b = ICT_MARK | ((ULong)id << 8) | ((ULong)end << 23);
  if (!end) {
    depth++;
    tracing = 1;
    put(pc, b);
  } else {
    if (depth > 0)
      put(pc, b);
    depth = depth > 0 ? depth - 1 : 0;
    tracing = depth > 0;
  }
}

/* --- instrumentation ------------------------------------------------------------------ */

/* The marker's encoding (ictrace_format.h): nopl disp32(%rax) with disp32's high half 'IC'. */
static Bool is_marker(Addr pc, UInt len, UWord *word) {
#if defined(VGA_amd64)
  const UChar *p = (const UChar *)pc;
  if (len != ICT_MARK_LEN || p[0] != 0x0f || p[1] != 0x1f || p[2] != 0x80)
    return False;
  UInt disp = (UInt)p[3] | ((UInt)p[4] << 8) | ((UInt)p[5] << 16) | ((UInt)p[6] << 24);
  if ((disp >> 16) != ICT_MARK_MAGIC)
    return False;
  *word = disp & 0xffff;
  return True;
#else
  (void)pc;
  (void)len;
  (void)word;
  return False;
#endif
}

typedef struct {
  IRSB *sb;
  IRExpr *guard; /* 1-bit atom: tracing != 0, reloaded after every marker */
} Out;

static void load_guard(Out *o) {
  IRTemp flag = newIRTemp(o->sb->tyenv, Ity_I32);
  addStmtToIRSB(o->sb, IRStmt_WrTmp(flag, IRExpr_Load(Iend_LE, Ity_I32,
                                                      mkIRExpr_HWord((HWord)&tracing))));
  IRTemp g = newIRTemp(o->sb->tyenv, Ity_I1);
  addStmtToIRSB(o->sb, IRStmt_WrTmp(g, IRExpr_Binop(Iop_CmpNE32, IRExpr_RdTmp(flag),
                                                    IRExpr_Const(IRConst_U32(0)))));
  o->guard = IRExpr_RdTmp(g);
}

static void call(Out *o, const HChar *name, void *fn, IRExpr **args, Bool guarded) {
  Int nargs = 0;
  while (args[nargs])
    nargs++;
  IRDirty *d = unsafeIRDirty_0_N(nargs, name, VG_(fnptr_to_fnentry)(fn), args);
  if (guarded)
    d->guard = o->guard;
  addStmtToIRSB(o->sb, IRStmt_Dirty(d));
}

/* A guest guard (Ity_I1) widened to a word, as a helper argument. */
static IRExpr *widen(Out *o, IRExpr *guard) {
  IRTemp t = newIRTemp(o->sb->tyenv, Ity_I64);
  addStmtToIRSB(o->sb, IRStmt_WrTmp(t, IRExpr_Unop(Iop_1Uto64, guard)));
  return IRExpr_RdTmp(t);
}

static void trace_access(Out *o, Int kind, IRExpr *addr, Int size, IRExpr *guest_guard) {
  IRExpr *sz = mkIRExpr_HWord((HWord)size);
  if (guest_guard) {
    IRExpr *on = widen(o, guest_guard);
    if (kind == ICT_LOAD)
      call(o, "ict_load_if", ict_load_if, mkIRExprVec_3(addr, sz, on), True);
    else if (kind == ICT_STORE)
      call(o, "ict_store_if", ict_store_if, mkIRExprVec_3(addr, sz, on), True);
    else
      call(o, "ict_modify_if", ict_modify_if, mkIRExprVec_3(addr, sz, on), True);
    return;
  }
  if (kind == ICT_LOAD)
    call(o, "ict_load", ict_load, mkIRExprVec_2(addr, sz), True);
  else if (kind == ICT_STORE)
    call(o, "ict_store", ict_store, mkIRExprVec_2(addr, sz), True);
  else
    call(o, "ict_modify", ict_modify, mkIRExprVec_2(addr, sz), True);
}

static Bool is_true(IRExpr *e) {
  return e->tag == Iex_Const && e->Iex.Const.con->tag == Ico_U1 && e->Iex.Const.con->Ico.U1;
}

static IRSB *ict_instrument(VgCallbackClosure *closure, IRSB *in, const VexGuestLayout *layout,
                            const VexGuestExtents *vge, const VexArchInfo *archinfo_host,
                            IRType gWordTy, IRType hWordTy) {
  (void)closure;
  (void)layout;
  (void)vge;
  (void)archinfo_host;
  if (gWordTy != hWordTy)
    VG_(tool_panic)("host/guest word size mismatch");
  Out o = {deepCopyIRSBExceptStmts(in), NULL};
  IRTypeEnv *tyenv = in->tyenv;
  Int i = 0;
  /* Statements before the first instruction mark set up the block; they stay first. */
  for (; i < in->stmts_used && in->stmts[i]->tag != Ist_IMark; i++)
    addStmtToIRSB(o.sb, in->stmts[i]);
  load_guard(&o);
  for (; i < in->stmts_used; i++) {
    IRStmt *st = in->stmts[i];
    if (!st || st->tag == Ist_NoOp)
      continue;
    switch (st->tag) {
    case Ist_IMark: {
      addStmtToIRSB(o.sb, st);
      Addr pc = (Addr)st->Ist.IMark.addr;
      UInt len = st->Ist.IMark.len;
      UWord word;
      Bool marker = is_marker(pc, len, &word);
      if (marker && !(word & 0x8000)) { /* begin: open, then count the marker itself */
        call(&o, "ict_mark", ict_mark,
             mkIRExprVec_2(mkIRExpr_HWord((HWord)pc), mkIRExpr_HWord(word)), False);
        load_guard(&o);
      }
      call(&o, "ict_insn", ict_insn,
           mkIRExprVec_2(mkIRExpr_HWord((HWord)pc), mkIRExpr_HWord((HWord)len)), True);
      if (marker && (word & 0x8000)) {
        call(&o, "ict_mark", ict_mark,
             mkIRExprVec_2(mkIRExpr_HWord((HWord)pc), mkIRExpr_HWord(word)), False);
        load_guard(&o);
      }
      continue;
    }
    case Ist_WrTmp: {
      IRExpr *e = st->Ist.WrTmp.data;
      if (e->tag == Iex_Load)
        trace_access(&o, ICT_LOAD, e->Iex.Load.addr, sizeofIRType(e->Iex.Load.ty), NULL);
      break;
    }
    case Ist_Store: {
      IRExpr *data = st->Ist.Store.data;
      trace_access(&o, ICT_STORE, st->Ist.Store.addr, sizeofIRType(typeOfIRExpr(tyenv, data)),
             NULL);
      break;
    }
    case Ist_StoreG: {
      IRStoreG *sg = st->Ist.StoreG.details;
      trace_access(&o, ICT_STORE, sg->addr, sizeofIRType(typeOfIRExpr(tyenv, sg->data)),
             sg->guard);
      break;
    }
    case Ist_LoadG: {
      IRLoadG *lg = st->Ist.LoadG.details;
      IRType res = Ity_INVALID, arg = Ity_INVALID;
      typeOfIRLoadGOp(lg->cvt, &res, &arg);
      trace_access(&o, ICT_LOAD, lg->addr, sizeofIRType(arg), lg->guard);
      break;
    }
    case Ist_Dirty: {
      IRDirty *d = st->Ist.Dirty.details;
      if (d->mFx != Ifx_None) {
        Int kind = d->mFx == Ifx_Read ? ICT_LOAD : d->mFx == Ifx_Write ? ICT_STORE : ICT_MODIFY;
        trace_access(&o, kind, d->mAddr, d->mSize, is_true(d->guard) ? NULL : d->guard);
      }
      break;
    }
    case Ist_CAS: {
      IRCAS *cas = st->Ist.CAS.details;
      Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo)) * (cas->dataHi ? 2 : 1);
      trace_access(&o, ICT_MODIFY, cas->addr, size, NULL);
      break;
    }
    case Ist_LLSC: {
      if (st->Ist.LLSC.storedata == NULL)
        trace_access(&o, ICT_LOAD, st->Ist.LLSC.addr,
               sizeofIRType(typeOfIRTemp(tyenv, st->Ist.LLSC.result)), NULL);
      else
        trace_access(&o, ICT_STORE, st->Ist.LLSC.addr,
               sizeofIRType(typeOfIRExpr(tyenv, st->Ist.LLSC.storedata)), NULL);
      break;
    }
    default:
      break;
    }
    addStmtToIRSB(o.sb, st);
  }
  return o.sb;
}

/* --- start and end ------------------------------------------------------------------ */

static void ict_post_clo_init(void) {
  if (clo_out && clo_out_fd >= 0) {
    VG_(fmsg_bad_option)("--out", "give either --out or --out-fd, not both\n");
  }
  if (clo_out) {
    out_fd = VG_(fd_open)(clo_out, VKI_O_CREAT | VKI_O_WRONLY | VKI_O_TRUNC, 0644);
    if (out_fd < 0)
      VG_(fmsg_bad_option)("--out", "cannot create %s\n", clo_out);
  } else if (clo_out_fd >= 0) {
    out_fd = (Int)clo_out_fd;
  } else {
    VG_(fmsg_bad_option)("--out", "give --out=FILE or --out-fd=N\n");
  }
}

static void write_maps(void) {
  if (!clo_maps)
    return;
  Int fd = VG_(fd_open)(clo_maps, VKI_O_CREAT | VKI_O_WRONLY | VKI_O_TRUNC, 0644);
  if (fd < 0) {
    VG_(umsg)("ictrace: cannot create %s\n", clo_maps);
    return;
  }
  for (const DebugInfo *di = VG_(next_DebugInfo)(NULL); di; di = VG_(next_DebugInfo)(di)) {
    const HChar *path = VG_(DebugInfo_get_filename)(di);
    SizeT size = VG_(DebugInfo_get_text_size)(di);
    if (!path || !size)
      continue;
    HChar line[4200];
    Int n = VG_(snprintf)(line, sizeof line, "0x%lx %lu %ld %s\n",
                          (UWord)VG_(DebugInfo_get_text_avma)(di), (UWord)size,
                          (Word)VG_(DebugInfo_get_text_bias)(di), path);
    if (n > 0)
      VG_(write)(fd, line, n < (Int)sizeof line ? n : (Int)sizeof line - 1);
  }
  VG_(close)(fd);
}

static void ict_fini(Int exitcode) {
  put((ULong)(Long)exitcode, ICT_EOS);
  flush();
  write_maps();
}

static void ict_pre_clo_init(void) {
  VG_(details_name)("ictrace");
  VG_(details_version)("1");
  VG_(details_description)("intercore's region tracer");
  VG_(details_copyright_author)("intercore authors; GPL-2.0-or-later");
  VG_(details_bug_reports_to)("the intercore issue tracker");
  VG_(details_avg_translation_sizeB)(400);
  VG_(basic_tool_funcs)(ict_post_clo_init, ict_instrument, ict_fini);
  VG_(needs_command_line_options)(ict_process_cmd_line_option, ict_print_usage,
                                  ict_print_debug_usage);
}

VG_DETERMINE_INTERFACE_VERSION(ict_pre_clo_init)
