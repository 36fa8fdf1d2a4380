// SPDX-License-Identifier: GPL-2.0-only
/*
 * RNBD server tracepoints: made here, declared in rnbd-srv-trace.h.
 */
#define CREATE_TRACE_POINTS
#include "rnbd-srv-trace.h"
