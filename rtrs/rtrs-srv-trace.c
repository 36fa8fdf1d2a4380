// SPDX-License-Identifier: GPL-2.0-only
/*
 * RTRS server tracepoints: made here, declared in rtrs-srv-trace.h.
 */
#define CREATE_TRACE_POINTS
#include "rtrs-srv-trace.h"
