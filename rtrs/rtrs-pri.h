/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RTRS private header: the wire format, what the client and the server put
 * on the wire and the limits both agree on (protocol 2.0, compatible with
 * the RTRS of upstream Linux), then what rtrs-core offers both sides.
 *
 * Every multi-byte field on the wire is little endian.  The sizes are
 * pinned: a change there is a change of the protocol.
 */
#ifndef RTRS_PRI_H
#define RTRS_PRI_H

#include <linux/build_bug.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/percpu.h>
#include <linux/types.h>
#include <linux/uuid.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#define RTRS_PROTO_VER_MAJOR	2
#define RTRS_PROTO_VER_MINOR	0
#define RTRS_PROTO_VER		((RTRS_PROTO_VER_MAJOR << 8) | RTRS_PROTO_VER_MINOR)

/* First field of CON_REQ and CON_RSP. */
#define RTRS_MAGIC		0x1BBD

/* Heartbeats go both ways every interval; so many missed close the path. */
#define RTRS_HB_INTERVAL_MS	5000
#define RTRS_HB_MISSED_MAX	5

/* Queue depth of the admin connection (cid 0) of a path. */
#define RTRS_ADMIN_QUEUE_DEPTH	512

/* One IO in so many has its send work requests signaled. */
#define RTRS_SIG_INTERVAL	16

#define RTRS_MAX_SESS_QUEUE_DEPTH	65535
#define RTRS_MIN_CHUNK_SIZE		8192
#define RTRS_MAX_PATHS			128

/*
 * The 32-bit immediate of every RDMA WRITE WITH IMM carries a 4-bit type
 * and a 28-bit payload.
 */
#define RTRS_IMM_TYPE_BITS	4
#define RTRS_IMM_PAYLOAD_BITS	28
#define RTRS_IMM_PAYLOAD_MASK	((1U << RTRS_IMM_PAYLOAD_BITS) - 1)

enum rtrs_imm_type {
	/* client to server: payload is (chunk id << mem_bits) | trailer offset */
	RTRS_IO_REQ_IMM		= 0,
	/* server to client: payload is (errno << 19) | msg id */
	RTRS_IO_RSP_IMM		= 1,
	/* as RTRS_IO_RSP_IMM, and the client must invalidate its MR */
	RTRS_IO_RSP_W_INV_IMM	= 2,
	RTRS_HB_MSG_IMM		= 8,
	RTRS_HB_ACK_IMM		= 9,
};

/* IO_RSP payload: 19 bits of message id under 9 bits of errno. */
#define RTRS_RSP_ID_BITS	19
#define RTRS_RSP_ID_MASK	((1U << RTRS_RSP_ID_BITS) - 1)
#define RTRS_RSP_ERRNO_MASK	0x1ffU

static inline u32 rtrs_imm(enum rtrs_imm_type type, u32 payload)
{
	return (u32)type << RTRS_IMM_PAYLOAD_BITS |
	       (payload & RTRS_IMM_PAYLOAD_MASK);
}

static inline enum rtrs_imm_type rtrs_imm_type(u32 imm)
{
	return imm >> RTRS_IMM_PAYLOAD_BITS;
}

static inline u32 rtrs_imm_payload(u32 imm)
{
	return imm & RTRS_IMM_PAYLOAD_MASK;
}

static inline u32 rtrs_io_rsp_imm(u32 msg_id, int errno, bool w_inval)
{
	u32 payload = (abs(errno) & RTRS_RSP_ERRNO_MASK) << RTRS_RSP_ID_BITS |
		      (msg_id & RTRS_RSP_ID_MASK);

	return rtrs_imm(w_inval ? RTRS_IO_RSP_W_INV_IMM : RTRS_IO_RSP_IMM,
			payload);
}

static inline u32 rtrs_io_rsp_msg_id(u32 payload)
{
	return payload & RTRS_RSP_ID_MASK;
}

static inline int rtrs_io_rsp_errno(u32 payload)
{
	return -(int)(payload >> RTRS_RSP_ID_BITS & RTRS_RSP_ERRNO_MASK);
}

/* Types of the messages sent with IB_WR_SEND or as IO trailers. */
enum rtrs_msg_type {
	RTRS_MSG_INFO_REQ	= 0,
	RTRS_MSG_INFO_RSP	= 1,
	RTRS_MSG_WRITE		= 2,
	RTRS_MSG_READ		= 3,
	RTRS_MSG_RKEY_RSP	= 4,
};

/* rtrs_msg_rdma_read.flags */
#define RTRS_MSG_NEED_INVAL_F	BIT(0)
/* rtrs_msg_conn_rsp.flags: each IO's answer brings the chunk's new rkey */
#define RTRS_MSG_NEW_RKEY_F	BIT(1)

/**
 * struct rtrs_sg_desc - a remote buffer
 * @addr: its address in the owner's DMA space
 * @key: the rkey that lets the peer access it
 * @len: its length in bytes
 */
struct rtrs_sg_desc {
	__le64	addr;
	__le32	key;
	__le32	len;
};

/* rtrs_msg_conn_req.flags */
#define RTRS_CON_REQ_FIRST_CONN	BIT(0)

/**
 * struct rtrs_msg_conn_req - private data of rdma_connect()
 * @__cma_version: left 0: rdma_cm's AF_IB header overlays it
 * @__ip_version: left 0, for the same reason
 * @magic: RTRS_MAGIC
 * @version: RTRS_PROTO_VER
 * @cid: index of this connection in its path (0 is the admin connection)
 * @cid_num: number of connections of the path
 * @recon_cnt: incremented by the client on every reconnect of the path, so
 *	       the server can tell a new incarnation from the old one
 * @sess_uuid: identifies the path (the name is upstream's)
 * @paths_uuid: identifies the session, the set of paths
 * @flags: RTRS_CON_REQ_FIRST_CONN when the server may make the session if
 *	   it does not have it: the client's first path, or any path after
 *	   the server said it lost the session (-ENXIO)
 * @reserved: zero
 */
struct rtrs_msg_conn_req {
	u8	__cma_version;
	u8	__ip_version;
	__le16	magic;
	__le16	version;
	__le16	cid;
	__le16	cid_num;
	__le16	recon_cnt;
	uuid_t	sess_uuid;
	uuid_t	paths_uuid;
	u8	flags;
	u8	reserved[11];
};

/**
 * struct rtrs_msg_conn_rsp - private data of rdma_accept() or rdma_reject()
 * @magic: RTRS_MAGIC
 * @version: RTRS_PROTO_VER
 * @errno: a negative errno on reject, as an s16, else 0 (servers of ours
 *	   before 2026-11 sent it positive: our client takes either)
 * @queue_depth: number of chunks of the session
 * @max_io_size: largest data part of an IO
 * @max_hdr_size: largest user header of an IO
 * @flags: RTRS_MSG_NEW_RKEY_F
 * @reserved: zero
 */
struct rtrs_msg_conn_rsp {
	__le16	magic;
	__le16	version;
	__le16	errno;
	__le16	queue_depth;
	__le32	max_io_size;
	__le32	max_hdr_size;
	__le32	flags;
	u8	reserved[36];
};

/**
 * struct rtrs_msg_info_req - sent by the client once all connections of a
 *			      path are up
 * @type: RTRS_MSG_INFO_REQ
 * @pathname: the session's name (the field's name is upstream's),
 *	      NUL-terminated
 * @reserved: zero
 */
struct rtrs_msg_info_req {
	__le16	type;
	u8	pathname[NAME_MAX];
	u8	reserved[15];
};

/**
 * struct rtrs_msg_info_rsp - the server's chunks, answer to INFO_REQ
 * @type: RTRS_MSG_INFO_RSP
 * @sg_cnt: number of entries of @desc
 * @reserved: zero
 * @desc: the chunks; one may cover several when they are contiguous
 */
struct rtrs_msg_info_rsp {
	__le16	type;
	__le16	sg_cnt;
	u8	reserved[4];
	struct rtrs_sg_desc desc[];
};

/**
 * struct rtrs_msg_rkey_rsp - the new rkey of a chunk re-registered after IO
 * @type: RTRS_MSG_RKEY_RSP
 * @buf_id: the chunk
 * @rkey: its new rkey
 */
struct rtrs_msg_rkey_rsp {
	__le16	type;
	__le16	buf_id;
	__le32	rkey;
};

/**
 * struct rtrs_msg_rdma_read - trailer of a read request, after the user
 *			       header in the chunk
 * @type: RTRS_MSG_READ
 * @usr_len: length of the user header before this trailer
 * @flags: RTRS_MSG_NEED_INVAL_F
 * @sg_cnt: number of entries of @desc
 * @desc: the client's buffers the server writes the data to
 */
struct rtrs_msg_rdma_read {
	__le16	type;
	__le16	usr_len;
	__le16	flags;
	__le16	sg_cnt;
	struct rtrs_sg_desc desc[];
};

/**
 * struct rtrs_msg_rdma_write - trailer of a write request, after the data
 *				and the user header in the chunk
 * @type: RTRS_MSG_WRITE
 * @usr_len: length of the user header before this trailer
 */
struct rtrs_msg_rdma_write {
	__le16	type;
	__le16	usr_len;
};

static_assert(sizeof(struct rtrs_sg_desc) == 16);
static_assert(sizeof(struct rtrs_msg_conn_req) == 56);
static_assert(sizeof(struct rtrs_msg_conn_rsp) == 56);
static_assert(sizeof(struct rtrs_msg_info_req) == 272);
static_assert(sizeof(struct rtrs_msg_info_rsp) == 8);
static_assert(sizeof(struct rtrs_msg_rkey_rsp) == 8);
static_assert(sizeof(struct rtrs_msg_rdma_read) == 8);
static_assert(sizeof(struct rtrs_msg_rdma_write) == 4);

/* What rtrs-core offers both sides. */

#define rtrs_path_err(path, fmt, ...)					\
	pr_err("%s: " fmt, (path)->sessname, ##__VA_ARGS__)
#define rtrs_path_err_rl(path, fmt, ...)				\
	pr_err_ratelimited("%s: " fmt, (path)->sessname, ##__VA_ARGS__)
#define rtrs_path_info(path, fmt, ...)					\
	pr_info("%s: " fmt, (path)->sessname, ##__VA_ARGS__)

/**
 * struct rtrs_ib_dev - an RDMA device and our protection domain on it,
 *			shared by the paths of one side that use the device
 * @ib_dev: the device
 * @pd: the protection domain
 * @ref: one per path using it; the last put frees it
 * @entry: in its pool's list
 * @pool: the pool it belongs to
 */
struct rtrs_ib_dev {
	struct ib_device *ib_dev;
	struct ib_pd *pd;
	struct kref ref;
	struct list_head entry;
	struct rtrs_ib_dev_pool *pool;
};

/**
 * struct rtrs_ib_dev_pool - the devices in use by one side
 * @mutex: protects @list and the refcounts' transitions from and to zero
 * @list: of struct rtrs_ib_dev
 */
struct rtrs_ib_dev_pool {
	struct mutex mutex;	/* protects list, and kref 0 <-> 1 */
	struct list_head list;
};

void rtrs_ib_dev_pool_init(struct rtrs_ib_dev_pool *pool);
void rtrs_ib_dev_pool_destroy(struct rtrs_ib_dev_pool *pool);
struct rtrs_ib_dev *rtrs_ib_dev_get(struct rtrs_ib_dev_pool *pool,
				    struct ib_device *ib_dev);
void rtrs_ib_dev_put(struct rtrs_ib_dev *dev);

/**
 * struct rtrs_iu - an information unit: a DMA-mapped buffer for one
 *		    message sent or received with IB_WR_SEND
 * @cqe: its completion
 * @buf: the message
 * @size: the size of @buf
 * @dma_addr: @buf mapped for the device
 * @dir: DMA_TO_DEVICE to send, DMA_FROM_DEVICE to receive
 */
struct rtrs_iu {
	struct ib_cqe cqe;
	void *buf;
	size_t size;
	dma_addr_t dma_addr;
	enum dma_data_direction dir;
};

struct rtrs_path;

/**
 * struct rtrs_con - one RDMA connection of a path
 * @path: the path it belongs to
 * @cm_id: its rdma_cm id
 * @qp: its queue pair
 * @cq: the completion queue of both its send and receive queues
 * @cid: its index in the path; 0 is the admin connection
 * @nr_cqe: the size of @cq
 * @sig_cnt: IO work requests posted that may go unsignaled
 * @poll_waker: with @poll_wake, the wake-up of the context that polled @cq
 *		last (rtrs_wc_reaped()); written only by that context, which
 *		ib_core runs for one CQ at a time
 * @poll_wake: see @poll_waker
 * @poll_len: completions reaped in that wake-up so far
 */
struct rtrs_con {
	struct rtrs_path *path;
	struct rdma_cm_id *cm_id;
	struct ib_qp *qp;
	struct ib_cq *cq;
	unsigned int cid;
	unsigned int nr_cqe;
	atomic_t sig_cnt;
	const void *poll_waker;
	unsigned long poll_wake;
	unsigned int poll_len;
};

/**
 * rtrs_con_sig_flags() - the send flags of an IO's last work request
 * @con: the connection it is posted on
 *
 * Only one in RTRS_SIG_INTERVAL is signaled: each completion costs the
 * device and the poller, and for an IO's work requests nothing but an
 * error is news.  A signaled one frees the entries of the unsignaled ones
 * before it; the send queue has room for RTRS_SIG_INTERVAL IOs beyond the
 * queue depth.
 *
 * Return: IB_SEND_SIGNALED or 0.
 */
static inline enum ib_send_flags rtrs_con_sig_flags(struct rtrs_con *con)
{
	return atomic_inc_return(&con->sig_cnt) % RTRS_SIG_INTERVAL ?
	       0 : IB_SEND_SIGNALED;
}

/**
 * struct rtrs_path - what both sides keep of a path
 * @sessname: the session's name
 * @src_addr: local address
 * @dst_addr: peer's address
 * @uuid: the path's uuid (paths_uuid on the wire)
 * @con: the connections, @con_num of them
 * @con_num: admin connection plus IO connections
 * @dev: the RDMA device of the path
 * @hb_cqe: completion of heartbeat messages
 * @hb_err_handler: called, in @hb_wq, when @hb_missed_max heartbeats in a
 *		    row went unanswered
 * @hb_wq: runs @hb_dwork
 * @hb_dwork: sends a heartbeat every @hb_interval_ms
 * @hb_interval_ms: heartbeat period; may change while heartbeats run
 *		    (rtrs_hb_set())
 * @hb_missed_cnt: heartbeats sent since the peer was last heard from
 * @hb_missed_max: tolerated unanswered heartbeats; as @hb_interval_ms
 * @hb_last_sent: when the last heartbeat was sent
 * @hb_cur_latency: round trip of the last answered heartbeat
 * @wr_stats: the verbs work of the path, per CPU (stats/wr_counts)
 */
struct rtrs_path {
	char sessname[NAME_MAX];
	struct sockaddr_storage src_addr;
	struct sockaddr_storage dst_addr;
	uuid_t uuid;
	struct rtrs_con **con;
	unsigned int con_num;
	struct rtrs_ib_dev *dev;
	struct ib_cqe *hb_cqe;
	void (*hb_err_handler)(struct rtrs_path *path);
	struct workqueue_struct *hb_wq;
	struct delayed_work hb_dwork;
	unsigned int hb_interval_ms;
	unsigned int hb_missed_cnt;
	unsigned int hb_missed_max;
	ktime_t hb_last_sent;
	ktime_t hb_cur_latency;
	struct rtrs_wr_stats __percpu *wr_stats;
};

/**
 * struct rtrs_wc_stats - what one CPU counted of the polls of a path's CQs
 * @polls: polls that reaped a completion: wake-ups of the softirq or task
 *	   that polls a CQ, or calls of rtrs_clt_poll() on a polled one
 * @reaped: the completions they reaped
 * @max: the most one of them reaped
 */
struct rtrs_wc_stats {
	u64 polls;
	u64 reaped;
	u32 max;
};

/**
 * struct rtrs_wr_stats - what one CPU counted of a path's verbs work
 * @posted: work requests posted on the path's QPs, each of a chain,
 *	    receives too
 * @reaped: completions handed to the path's handlers, flushed ones too
 * @wc: the same completions by the poll that reaped them (wc_completion)
 *
 * Written only by the CPU it belongs to, so that counting an IO's work
 * touches no line another CPU writes.  What the path costs the HCA and its
 * CQs per IO, for the bench; statistics, not accounting.
 */
struct rtrs_wr_stats {
	u64 posted;
	u64 reaped;
	struct rtrs_wc_stats wc;
};

/*
 * A fast registration of @mr, as mapped, under its rkey, for the peer to
 * write; its completion, where signaled, goes to @cqe.
 */
static inline void rtrs_init_reg_wr(struct ib_reg_wr *wr, struct ib_mr *mr,
				    struct ib_cqe *cqe)
{
	*wr = (struct ib_reg_wr) {
		.wr = {
			.opcode = IB_WR_REG_MR,
			.wr_cqe = cqe,
		},
		.mr = mr,
		.key = mr->rkey,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE,
	};
}

/* ib_post_send() of the chain @wr on @con's QP, counted if posted. */
static inline int rtrs_post_send(struct rtrs_con *con,
				 const struct ib_send_wr *wr)
{
	const struct ib_send_wr *w;
	unsigned int n = 0;
	int err;

	for (w = wr; w; w = w->next)
		n++;
	err = ib_post_send(con->qp, wr, NULL);
	if (!err)
		this_cpu_add(con->path->wr_stats->posted, n);
	return err;
}

/* ib_post_recv() of the one receive @wr on @con's QP, counted if posted. */
static inline int rtrs_post_recv(struct rtrs_con *con,
				 const struct ib_recv_wr *wr)
{
	int err = ib_post_recv(con->qp, wr, NULL);

	if (!err)
		this_cpu_inc(con->path->wr_stats->posted);
	return err;
}

void rtrs_wc_reaped(struct rtrs_con *con, struct rtrs_wr_stats *s);

/* Count a completion reaped from @cq, a connection's (its context). */
static inline void rtrs_wr_reaped(struct ib_cq *cq)
{
	struct rtrs_con *con = cq->cq_context;
	struct rtrs_wr_stats *s = get_cpu_ptr(con->path->wr_stats);

	s->reaped++;
	/* rtrs_clt_poll() counts the polls of a polled CQ itself. */
	if (cq->poll_ctx != IB_POLL_DIRECT)
		rtrs_wc_reaped(con, s);
	put_cpu_ptr(con->path->wr_stats);
}

struct rtrs_iu *rtrs_iu_alloc(struct ib_device *dev, size_t size,
			      enum dma_data_direction dir, gfp_t gfp,
			      void (*done)(struct ib_cq *cq, struct ib_wc *wc));
void rtrs_iu_free(struct rtrs_iu *iu, struct ib_device *dev);
int rtrs_iu_post_recv(struct rtrs_con *con, struct rtrs_iu *iu);
int rtrs_iu_post_send(struct rtrs_con *con, struct rtrs_iu *iu, size_t len,
		      struct ib_send_wr *head);
int rtrs_post_recv_empty(struct rtrs_con *con, struct ib_cqe *cqe);
int rtrs_post_write_imm_empty(struct rtrs_con *con, struct ib_cqe *cqe,
			      u32 imm, enum ib_send_flags flags,
			      struct ib_send_wr *head);

int rtrs_con_create_qp(struct rtrs_con *con, struct ib_pd *pd,
		       u32 max_send_wr, u32 max_recv_wr, u32 max_send_sge,
		       enum ib_poll_context poll_ctx);
void rtrs_con_destroy_qp(struct rtrs_con *con);
void rtrs_path_disconnect(struct rtrs_path *path);
int rtrs_sysfs_write_one(const struct rtrs_path *path, const char *pathname,
			 const char *file, const char *buf);
int rtrs_wr_stats_alloc(struct rtrs_path *path);
void rtrs_wr_stats_free(struct rtrs_path *path);
ssize_t rtrs_wr_stats_show(const struct rtrs_path *path, char *buf);
void rtrs_wr_stats_reset(struct rtrs_path *path);
void rtrs_wc_stats_sum(const struct rtrs_path *path,
		       struct rtrs_wc_stats *sum);
void rtrs_wc_stats_reset(struct rtrs_path *path);

void rtrs_hb_init(struct rtrs_path *path, struct ib_cqe *cqe,
		  void (*err_handler)(struct rtrs_path *path),
		  struct workqueue_struct *wq);
void rtrs_hb_set(struct rtrs_path *path, unsigned int interval_ms,
		 unsigned int missed_max);
void rtrs_hb_start(struct rtrs_path *path);
void rtrs_hb_stop(struct rtrs_path *path);
void rtrs_hb_send_ack(struct rtrs_path *path);
void rtrs_hb_heard(struct rtrs_path *path);
void rtrs_hb_ack_received(struct rtrs_path *path);

#endif /* RTRS_PRI_H */
