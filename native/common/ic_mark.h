/* Trace-only region markers: IC_TRACE_BEGIN(id) / IC_TRACE_END(id) mark a region for the
 * learning stage's tracer (`intercore learn`) in code that is not timed by ic_region.h, e.g.
 * a user's own program. Each is one no-op instruction (ic_arch.h); `id` is a compile-time
 * constant in 0..32767, and a region's END must follow its BEGIN on the same thread. This
 * header needs nothing else from intercore: copy it with ic_arch.h into any C program. */
#ifndef IC_MARK_H
#define IC_MARK_H

#include "ic_arch.h"

#define IC_TRACE_BEGIN(id) IC_ARCH_TRACE_MARK(0, id)
#define IC_TRACE_END(id) IC_ARCH_TRACE_MARK(1, id)

#endif
