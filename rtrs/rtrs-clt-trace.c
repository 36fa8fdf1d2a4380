// SPDX-License-Identifier: GPL-2.0-only
/*
 * RTRS client tracepoints: made here, declared in rtrs-clt-trace.h.
 */
#define CREATE_TRACE_POINTS
#include "rtrs-clt-trace.h"
