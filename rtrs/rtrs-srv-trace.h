/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RTRS server tracepoints, events/rtrs_srv/ in tracefs: sessions made and
 * gone, paths up and closed, connection requests refused, malformed
 * messages of clients, and the answers to requests.  A path is named as
 * its sysfs directory is ("<client address>@<server address>").
 * rtrs-srv.c makes them.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rtrs_srv

#if !defined(RTRS_SRV_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define RTRS_SRV_TRACE_H

#include <linux/tracepoint.h>
#include <rtrs-compat.h>

#include "rtrs-srv.h"

#ifndef RTRS_SRV_TRACE_HELPERS
#define RTRS_SRV_TRACE_HELPERS
/* The name of the path between @clt and @srv, or "unknown". */
static inline void rtrs_srv_trace_name(char *buf,
				       const struct sockaddr_storage *clt,
				       const struct sockaddr_storage *srv)
{
	if (rtrs_srv_path_name(clt, srv, buf, RTRS_SRV_PATH_NAME_MAX))
		strscpy(buf, "unknown", RTRS_SRV_PATH_NAME_MAX);
}
#endif

/* A session got its name and its sysfs directory, or lost them. */
DECLARE_EVENT_CLASS(rtrs_srv_sess_class,
	TP_PROTO(const struct rtrs_srv_sess *srv),
	TP_ARGS(srv),
	TP_STRUCT__entry(
		__string(sess, srv->sessname)
		__array(u8, uuid, UUID_SIZE)
		__field(unsigned int, queue_depth)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, srv->sessname);
		memcpy(__entry->uuid, &srv->uuid, UUID_SIZE);
		__entry->queue_depth = srv->queue_depth;
	),
	TP_printk("sess=%s uuid=%pUb queue_depth=%u", __get_str(sess),
		  __entry->uuid, __entry->queue_depth)
);

DEFINE_EVENT(rtrs_srv_sess_class, rtrs_srv_sess_created,
	TP_PROTO(const struct rtrs_srv_sess *srv),
	TP_ARGS(srv)
);

DEFINE_EVENT(rtrs_srv_sess_class, rtrs_srv_sess_destroyed,
	TP_PROTO(const struct rtrs_srv_sess *srv),
	TP_ARGS(srv)
);

/* A path answered INFO_REQ: it carries IO. */
TRACE_EVENT(rtrs_srv_path_connected,
	TP_PROTO(const struct rtrs_srv_path *path),
	TP_ARGS(path),
	TP_STRUCT__entry(
		__string(sess, path->s.sessname)
		__array(char, name, RTRS_SRV_PATH_NAME_MAX)
		__string(hca, dev_name(&path->s.dev->ib_dev->dev))
		__field(unsigned int, con_num)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, path->s.sessname);
		rtrs_srv_trace_name(__entry->name, &path->s.dst_addr,
				    &path->s.src_addr);
		rtrs_compat_assign_str(hca, dev_name(&path->s.dev->ib_dev->dev));
		__entry->con_num = path->s.con_num;
	),
	TP_printk("sess=%s path=%s hca=%s connections=%u", __get_str(sess),
		  __entry->name, __get_str(hca), __entry->con_num)
);

/* A path, up or still connecting, is gone. */
TRACE_EVENT(rtrs_srv_path_closed,
	TP_PROTO(const struct rtrs_srv_path *path),
	TP_ARGS(path),
	TP_STRUCT__entry(
		__string(sess, path->s.sessname)
		__array(char, name, RTRS_SRV_PATH_NAME_MAX)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, path->s.sessname);
		rtrs_srv_trace_name(__entry->name, &path->s.dst_addr,
				    &path->s.src_addr);
	),
	TP_printk("sess=%s path=%s", __get_str(sess), __entry->name)
);

/* A client sent on @path what the protocol does not allow: @what. */
TRACE_EVENT(rtrs_srv_bad_msg,
	TP_PROTO(const struct rtrs_srv_path *path, const char *what),
	TP_ARGS(path, what),
	TP_STRUCT__entry(
		__string(sess, path->s.sessname)
		__array(char, name, RTRS_SRV_PATH_NAME_MAX)
		__string(what, what)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, path->s.sessname);
		rtrs_srv_trace_name(__entry->name, &path->s.dst_addr,
				    &path->s.src_addr);
		rtrs_compat_assign_str(what, what);
	),
	TP_printk("sess=%s path=%s what=%s", __get_str(sess), __entry->name,
		  __get_str(what))
);

/* A connection request refused with @err, a negative errno. */
TRACE_EVENT(rtrs_srv_conn_rejected,
	TP_PROTO(const struct rdma_cm_id *cm_id, int err),
	TP_ARGS(cm_id, err),
	TP_STRUCT__entry(
		__array(char, name, RTRS_SRV_PATH_NAME_MAX)
		__field(int, err)
	),
	TP_fast_assign(
		rtrs_srv_trace_name(__entry->name, &cm_id->route.addr.dst_addr,
				    &cm_id->route.addr.src_addr);
		__entry->err = err;
	),
	TP_printk("path=%s err=%d", __entry->name, __entry->err)
);

/*
 * The answer to request @op goes out with @errno: named as Linux's own
 * server names it, so that what traces it works with ours.  @rereg: the
 * chunk is registered again with it (always_invalidate); need_inval: the
 * client asked for its buffer's rkey to be invalidated.
 */
TRACE_EVENT(send_io_resp_imm,
	TP_PROTO(const struct rtrs_srv_op *op, int errno, bool rereg),
	TP_ARGS(op, errno, rereg),
	TP_STRUCT__entry(
		__string(sess, op->path->s.sessname)
		__field(u32, msg_id)
		__field(int, dir)
		__field(int, errno)
		__field(bool, need_inval)
		__field(bool, rereg)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, op->path->s.sessname);
		__entry->msg_id = op->msg_id;
		__entry->dir = op->dir;
		__entry->errno = errno;
		__entry->need_inval = op->need_inval;
		__entry->rereg = rereg;
	),
	TP_printk("sess=%s msg_id=%u dir=%s errno=%d need_inval=%d rereg=%d",
		  __get_str(sess), __entry->msg_id,
		  __entry->dir == READ ? "READ" : "WRITE", __entry->errno,
		  __entry->need_inval, __entry->rereg)
);

#endif /* RTRS_SRV_TRACE_H */

/* The module's directory is on the include path: see CFLAGS in Kbuild. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE rtrs-srv-trace
#include <trace/define_trace.h>
