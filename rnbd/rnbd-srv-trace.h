/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RNBD server tracepoints, events/rnbd_srv/ in tracefs: sessions made and
 * gone and the messages of clients, by the names Linux's own server gives
 * them, so that what traces that server works with ours.
 * rnbd-srv.c makes them.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rnbd_srv

#if !defined(RNBD_SRV_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define RNBD_SRV_TRACE_H

#include <linux/tracepoint.h>
#include <rtrs-compat.h>

#include "rnbd-proto.h"
#include "rnbd-srv.h"

/* A session of a client came, or went with its last path. */
DECLARE_EVENT_CLASS(rnbd_srv_sess_class,
	TP_PROTO(const struct rnbd_srv_session *sess),
	TP_ARGS(sess),
	TP_STRUCT__entry(
		__string(sess, sess->sessname)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, sess->sessname);
	),
	TP_printk("sess=%s", __get_str(sess))
);

DEFINE_EVENT(rnbd_srv_sess_class, create_sess,
	TP_PROTO(const struct rnbd_srv_session *sess),
	TP_ARGS(sess)
);

DEFINE_EVENT(rnbd_srv_sess_class, destroy_sess,
	TP_PROTO(const struct rnbd_srv_session *sess),
	TP_ARGS(sess)
);

TRACE_DEFINE_ENUM(RNBD_OP_READ);
TRACE_DEFINE_ENUM(RNBD_OP_WRITE);
TRACE_DEFINE_ENUM(RNBD_OP_FLUSH);
TRACE_DEFINE_ENUM(RNBD_OP_DISCARD);
TRACE_DEFINE_ENUM(RNBD_OP_SECURE_ERASE);
TRACE_DEFINE_ENUM(RNBD_OP_WRITE_ZEROES);

/*
 * An IO request, as the client sent it, before it is checked: @msg's
 * fields, with the lengths of the client's header (@usrlen) and of the
 * data in the chunk (@datalen).
 */
TRACE_EVENT(process_rdma,
	TP_PROTO(const struct rnbd_srv_session *sess,
		 const struct rnbd_msg_io *msg, size_t datalen, size_t usrlen),
	TP_ARGS(sess, msg, datalen, usrlen),
	TP_STRUCT__entry(
		__string(sess, sess->sessname)
		__field(u32, device_id)
		__field(u64, sector)
		__field(u32, rw)
		__field(u32, bi_size)
		__field(u16, prio)
		__field(size_t, datalen)
		__field(size_t, usrlen)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, sess->sessname);
		__entry->device_id = le32_to_cpu(msg->device_id);
		__entry->sector = le64_to_cpu(msg->sector);
		__entry->rw = le32_to_cpu(msg->rw);
		__entry->bi_size = le32_to_cpu(msg->bi_size);
		__entry->prio = le16_to_cpu(msg->prio);
		__entry->datalen = datalen;
		__entry->usrlen = usrlen;
	),
	TP_printk("sess=%s device_id=%u op=%s flags=%s sector=%llu bi_size=%u prio=%u datalen=%zu usrlen=%zu",
		  __get_str(sess), __entry->device_id,
		  __print_symbolic(__entry->rw & RNBD_OP_MASK,
				   { RNBD_OP_READ, "READ" },
				   { RNBD_OP_WRITE, "WRITE" },
				   { RNBD_OP_FLUSH, "FLUSH" },
				   { RNBD_OP_DISCARD, "DISCARD" },
				   { RNBD_OP_SECURE_ERASE, "SECURE_ERASE" },
				   { RNBD_OP_WRITE_ZEROES, "WRITE_ZEROES" }),
		  __print_flags(__entry->rw & ~RNBD_OP_MASK, "|",
				{ RNBD_F_SYNC, "SYNC" },
				{ RNBD_F_FUA, "FUA" },
				{ RNBD_F_PREFLUSH, "PREFLUSH" },
				{ RNBD_F_NOUNMAP, "NOUNMAP" }),
		  __entry->sector, __entry->bi_size, __entry->prio,
		  __entry->datalen, __entry->usrlen)
);

/* SESS_INFO: the client's protocol version, and the one agreed on. */
TRACE_EVENT(process_msg_sess_info,
	TP_PROTO(const struct rnbd_srv_session *sess,
		 const struct rnbd_msg_sess_info *msg),
	TP_ARGS(sess, msg),
	TP_STRUCT__entry(
		__string(sess, sess->sessname)
		__field(u8, clt_ver)
		__field(u8, ver)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, sess->sessname);
		__entry->clt_ver = msg->ver;
		__entry->ver = sess->ver;
	),
	TP_printk("sess=%s clt_ver=%u ver=%u", __get_str(sess),
		  __entry->clt_ver, __entry->ver)
);

/* OPEN, before it is checked: the device's path is cut at NAME_MAX. */
TRACE_EVENT(process_msg_open,
	TP_PROTO(const struct rnbd_srv_session *sess,
		 const struct rnbd_msg_open *msg),
	TP_ARGS(sess, msg),
	TP_STRUCT__entry(
		__string(sess, sess->sessname)
		__array(char, dev_name, NAME_MAX)
		__field(u8, access_mode)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, sess->sessname);
		strscpy(__entry->dev_name, (const char *)msg->dev_name,
			NAME_MAX);
		__entry->access_mode = msg->access_mode;
	),
	TP_printk("sess=%s dev_name=%s access_mode=%s", __get_str(sess),
		  __entry->dev_name,
		  __print_symbolic(__entry->access_mode,
				   { RNBD_ACCESS_RO, "ro" },
				   { RNBD_ACCESS_RW, "rw" },
				   { RNBD_ACCESS_MIGRATION, "migration" }))
);

/* CLOSE of the device the client knows as @device_id. */
TRACE_EVENT(process_msg_close,
	TP_PROTO(const struct rnbd_srv_session *sess,
		 const struct rnbd_msg_close *msg),
	TP_ARGS(sess, msg),
	TP_STRUCT__entry(
		__string(sess, sess->sessname)
		__field(u32, device_id)
	),
	TP_fast_assign(
		rtrs_compat_assign_str(sess, sess->sessname);
		__entry->device_id = le32_to_cpu(msg->device_id);
	),
	TP_printk("sess=%s device_id=%u", __get_str(sess),
		  __entry->device_id)
);

#endif /* RNBD_SRV_TRACE_H */

/* The module's directory is on the include path: see CFLAGS in Kbuild. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE rnbd-srv-trace
#include <trace/define_trace.h>
