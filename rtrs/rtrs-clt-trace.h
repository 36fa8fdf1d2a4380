/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RTRS client tracepoints, events/rtrs_clt/ in tracefs: the life of a path
 * (connected, failed to connect, closed, reconnected), the fail-over of its
 * requests, and its errors; and, by the names of Linux's own client, the
 * steps of its recovery.  Each names the session and the path as sysfs
 * does ("<src>@<dst>").  rtrs-clt.c makes them.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rtrs_clt

#if !defined(RTRS_CLT_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define RTRS_CLT_TRACE_H

#include <linux/tracepoint.h>
#include <rtrs-compat.h>

#include "rtrs-clt.h"

TRACE_EVENT(rtrs_clt_path_connected,
	TP_PROTO(const struct rtrs_clt_path *path),
	TP_ARGS(path),
	TP_STRUCT__entry(
		__string(sess, path->s.sessname)
		__string(name, path->name)
		__string(hca, path->hca_name)
		__field(u32, port)
		__field(u32, queue_depth)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, path->s.sessname);
		rtrs_compat_assign_str(name, path->name);
		rtrs_compat_assign_str(hca, path->hca_name);
		__entry->port = path->hca_port;
		__entry->queue_depth = path->queue_depth;
	),
	TP_printk("sess=%s path=%s hca=%s port=%u queue_depth=%u",
		  __get_str(sess), __get_str(name), __get_str(hca),
		  __entry->port, __entry->queue_depth)
);

/* A path and an errno: 0, or why something failed. */
DECLARE_EVENT_CLASS(rtrs_clt_path_err_class,
	TP_PROTO(const struct rtrs_clt_path *path, int err),
	TP_ARGS(path, err),
	TP_STRUCT__entry(
		__string(sess, path->s.sessname)
		__string(name, path->name)
		__field(int, err)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, path->s.sessname);
		rtrs_compat_assign_str(name, path->name);
		__entry->err = err;
	),
	TP_printk("sess=%s path=%s err=%d", __get_str(sess), __get_str(name),
		  __entry->err)
);

/* The connection of a new path failed; the path is torn down. */
DEFINE_EVENT(rtrs_clt_path_err_class, rtrs_clt_path_connect_failed,
	TP_PROTO(const struct rtrs_clt_path *path, int err),
	TP_ARGS(path, err)
);

/* A reconnect attempt ended: err is 0 when the path is up again. */
DEFINE_EVENT(rtrs_clt_path_err_class, rtrs_clt_reconnect_done,
	TP_PROTO(const struct rtrs_clt_path *path, int err),
	TP_ARGS(path, err)
);

/* A connected path went down; @reason says why in a few words. */
TRACE_EVENT(rtrs_clt_path_closed,
	TP_PROTO(const struct rtrs_clt_path *path, const char *reason),
	TP_ARGS(path, reason),
	TP_STRUCT__entry(
		__string(sess, path->s.sessname)
		__string(name, path->name)
		__string(reason, reason)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, path->s.sessname);
		rtrs_compat_assign_str(name, path->name);
		rtrs_compat_assign_str(reason, reason);
	),
	TP_printk("sess=%s path=%s reason=%s", __get_str(sess),
		  __get_str(name), __get_str(reason))
);

/* Reconnect attempt @attempt (from 1) of a path starts in @delay_ms. */
TRACE_EVENT(rtrs_clt_reconnect,
	TP_PROTO(const struct rtrs_clt_path *path, unsigned int attempt,
		 unsigned int delay_ms),
	TP_ARGS(path, attempt, delay_ms),
	TP_STRUCT__entry(
		__string(sess, path->s.sessname)
		__string(name, path->name)
		__field(unsigned int, attempt)
		__field(unsigned int, delay_ms)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, path->s.sessname);
		rtrs_compat_assign_str(name, path->name);
		__entry->attempt = attempt;
		__entry->delay_ms = delay_ms;
	),
	TP_printk("sess=%s path=%s attempt=%u delay_ms=%u", __get_str(sess),
		  __get_str(name), __entry->attempt, __entry->delay_ms)
);

/*
 * The requests in flight on a failed path, @nr of them, went to path @to,
 * or, @to NULL, failed for want of a live path.
 */
TRACE_EVENT(rtrs_clt_failover,
	TP_PROTO(const struct rtrs_clt_path *from,
		 const struct rtrs_clt_path *to, unsigned int nr),
	TP_ARGS(from, to, nr),
	TP_STRUCT__entry(
		__string(sess, from->s.sessname)
		__string(from, from->name)
		__string(to, to ? to->name : "none")
		__field(unsigned int, nr)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, from->s.sessname);
		rtrs_compat_assign_str(from, from->name);
		rtrs_compat_assign_str(to, to ? to->name : "none");
		__entry->nr = nr;
	),
	TP_printk("sess=%s from=%s to=%s requests=%u", __get_str(sess),
		  __get_str(from), __get_str(to), __entry->nr)
);

/*
 * Something failed on a path: @what in a few words, @status the work
 * completion's (an enum ib_wc_status) or a negative errno.
 */
TRACE_EVENT(rtrs_clt_path_error,
	TP_PROTO(const struct rtrs_clt_path *path, const char *what,
		 int status),
	TP_ARGS(path, what, status),
	TP_STRUCT__entry(
		__string(sess, path->s.sessname)
		__string(name, path->name)
		__string(what, what)
		__field(int, status)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, path->s.sessname);
		rtrs_compat_assign_str(name, path->name);
		rtrs_compat_assign_str(what, what);
		__entry->status = status;
	),
	TP_printk("sess=%s path=%s what=%s status=%d", __get_str(sess),
		  __get_str(name), __get_str(what), __entry->status)
);

TRACE_DEFINE_ENUM(RTRS_CLT_CONNECTING);
TRACE_DEFINE_ENUM(RTRS_CLT_CONNECTED);
TRACE_DEFINE_ENUM(RTRS_CLT_CLOSING);
TRACE_DEFINE_ENUM(RTRS_CLT_CLOSED);
TRACE_DEFINE_ENUM(RTRS_CLT_STOPPING);
TRACE_DEFINE_ENUM(RTRS_CLT_STOPPED);
TRACE_DEFINE_ENUM(RTRS_CLT_DEAD);

/*
 * A path's recovery, under the names Linux's own client gives these
 * events, so that what traces them works with ours: its state, and its
 * failed reconnects in a row with the session's limit (-1: none).
 */
DECLARE_EVENT_CLASS(rtrs_clt_recovery_class,
	TP_PROTO(const struct rtrs_clt_path *path),
	TP_ARGS(path),
	TP_STRUCT__entry(
		__string(sess, path->s.sessname)
		__string(name, path->name)
		__field(int, state)
		__field(int, attempts)
		__field(int, max_attempts)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, path->s.sessname);
		rtrs_compat_assign_str(name, path->name);
		__entry->state = READ_ONCE(path->state);
		__entry->attempts = path->reconnect_attempts;
		__entry->max_attempts =
			READ_ONCE(path->sess->max_reconnect_attempts);
	),
	TP_printk("sess=%s path=%s state=%s attempts=%d max_attempts=%d",
		  __get_str(sess), __get_str(name),
		  __print_symbolic(__entry->state,
				   { RTRS_CLT_CONNECTING, "CONNECTING" },
				   { RTRS_CLT_CONNECTED, "CONNECTED" },
				   { RTRS_CLT_CLOSING, "CLOSING" },
				   { RTRS_CLT_CLOSED, "CLOSED" },
				   { RTRS_CLT_STOPPING, "STOPPING" },
				   { RTRS_CLT_STOPPED, "STOPPED" },
				   { RTRS_CLT_DEAD, "DEAD" }),
		  __entry->attempts, __entry->max_attempts)
);

/* Something broke on a path: a connected one is to be closed. */
DEFINE_EVENT(rtrs_clt_recovery_class, rtrs_rdma_error_recovery,
	TP_PROTO(const struct rtrs_clt_path *path),
	TP_ARGS(path)
);

/* A failed path's connections are torn down. */
DEFINE_EVENT(rtrs_clt_recovery_class, rtrs_clt_close_conns,
	TP_PROTO(const struct rtrs_clt_path *path),
	TP_ARGS(path)
);

/* A closed path's reconnect attempt starts. */
DEFINE_EVENT(rtrs_clt_recovery_class, rtrs_clt_reconnect_work,
	TP_PROTO(const struct rtrs_clt_path *path),
	TP_ARGS(path)
);

#endif /* RTRS_CLT_TRACE_H */

/* The module's directory is on the include path: see CFLAGS in Kbuild. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE rtrs-clt-trace
#include <trace/define_trace.h>
