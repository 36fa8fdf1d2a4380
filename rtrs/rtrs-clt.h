/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RTRS client: what the client's files share (rtrs-clt.c, rtrs-clt-con.c,
 * rtrs-clt-sysfs.c, rtrs-clt-stats.c).
 * Not for ULPs: they include rtrs.h only.
 */
#ifndef RTRS_CLT_H
#define RTRS_CLT_H

#include <linux/device.h>
#include <linux/kobject.h>
#include <linux/percpu-refcount.h>
#include <linux/wait.h>

#include "rtrs-pri.h"
#include "rtrs.h"

struct rtrs_clt_stats;

#define rtrs_clt_err(sess, fmt, ...)					\
	pr_err("%s: " fmt, (sess)->sessname, ##__VA_ARGS__)
#define rtrs_clt_info(sess, fmt, ...)					\
	pr_info("%s: " fmt, (sess)->sessname, ##__VA_ARGS__)

/*
 * A path's state, changed by rtrs_clt_change_state() alone, which takes
 * these transitions and refuses the others:
 *
 *	to CONNECTING	from CLOSED (the reconnect work) or STOPPED (its
 *			reconnect in sysfs); a new path starts there
 *	to CONNECTED	from CONNECTING
 *	to CLOSING	from CONNECTED: it failed, its close work runs
 *	to CLOSED	from CONNECTING or CLOSING, torn down: the reconnect
 *			work connects it again after a delay
 *	to STOPPING	from CONNECTING, CONNECTED, CLOSING or CLOSED: taken
 *			down to stay down (disconnect, remove_path, close);
 *			a connect in progress gives up
 *	to STOPPED	from STOPPING, torn down
 *	to DEAD		from CLOSED or STOPPED: off its session's list
 */
enum rtrs_clt_state {
	RTRS_CLT_CONNECTING,
	RTRS_CLT_CONNECTED,
	RTRS_CLT_CLOSING,
	RTRS_CLT_CLOSED,
	RTRS_CLT_STOPPING,
	RTRS_CLT_STOPPED,
	RTRS_CLT_DEAD,
};

/*
 * A session's state, changed by rtrs_clt_sess_change_state() alone:
 *
 *	OPENING ---> UP <---> DOWN
 *	   |         |         |
 *	   +---------+---------+---> CLOSING
 *
 * OPENING: rtrs_clt_open() connects the first paths: each may lower the
 *	    session's limits, and the ULP hears of no link event yet.
 * UP:	    the ULP knows the session (its open returned) and was last told
 *	    that a path is connected; a path that comes must carry the limits.
 * DOWN:    the ULP was last told that no path is connected.
 * CLOSING: rtrs_clt_close() runs: paths going down are no news, none
 *	    reconnects, and the sysfs controls leave them alone.
 */
enum rtrs_clt_sess_state {
	RTRS_CLT_SESS_OPENING,
	RTRS_CLT_SESS_UP,
	RTRS_CLT_SESS_DOWN,
	RTRS_CLT_SESS_CLOSING,
};

/* How rtrs_clt_request() picks a path; the numbers are the sysfs ABI. */
enum rtrs_clt_mp_policy {
	RTRS_CLT_MP_ROUND_ROBIN,
	RTRS_CLT_MP_MIN_INFLIGHT,
	RTRS_CLT_MP_MIN_LATENCY,
};

/* How long rdma_cm and the INFO exchange may take to connect a path. */
#define RTRS_CLT_CONNECT_TIMEOUT_MS	20000
/* Receives per IO: the response and the SEND_WITH_INV before it. */
#define RTRS_CLT_RECV_PER_IO		2
/*
 * A READ of this many bytes at most lands in a buffer of its request,
 * registered once, and is copied from there: it costs no registration of
 * the ULP's pages and no invalidation, a work request and a completion
 * each, for the copy of a page.  The server can write that buffer only.
 */
#define RTRS_CLT_BOUNCE_SIZE		SZ_4K

/* max_reconnect_attempts: -1 is for ever. */
#define RTRS_CLT_RECONNECT_FOREVER	(-1)
#define RTRS_CLT_MAX_RECONNECT_ATTEMPTS	9999

/* What a session's sysfs takes for its heartbeats. */
#define RTRS_CLT_HB_INTERVAL_MIN_MS	100
#define RTRS_CLT_HB_INTERVAL_MAX_MS	60000
#define RTRS_CLT_HB_MISSED_MAX		100

/**
 * struct rtrs_permit - the right to one IO in flight, and its chunk on the
 *			server
 * @mem_id: index of the permit, and of its chunk on every path
 * @cpu: CPU it was taken on: picks the IO connection
 * @con_type: RTRS_ADMIN_CON or RTRS_IO_CON
 * @poll_queue: the polled connection its requests go on, or -1 for the
 *		IO connection of @cpu; also keeps the pdu 8-byte aligned
 *
 * The ULP's pdu follows, see rtrs_permit_to_pdu().
 */
struct rtrs_permit {
	u32 mem_id;
	u32 cpu;
	enum rtrs_clt_con_type con_type;
	s32 poll_queue;
};

/**
 * struct rtrs_clt_sess - a client session: paths to one server
 * @dev: /sys/class/rtrs-client/<sessname>; its release frees the session
 * @sessname: the session's name
 * @uuid: identifies the session on the server (paths_uuid on the wire)
 * @ops: the ULP's callbacks
 * @port: the server's port
 * @pdu_sz: bytes of ULP data after each permit
 * @nr_poll_queues: polled connections of each path, after the IO ones
 * @ctl_mutex: serialises the changes of the session's set of paths: its
 *	       opening, add_path, the paths' sysfs controls and its close;
 *	       a new path waits without it while the server refuses it with
 *	       EAGAIN
 * @state_lock: protects @state
 * @state: an enum rtrs_clt_sess_state; read without the lock by
 *	   rtrs_clt_sess_state()
 * @link_work: tells the ULP when the session lost its last path or got
 *	       one back
 * @reconnect_delay_ms: base delay before a closed path reconnects
 * @max_reconnect_attempts: failed attempts in a row after which a path
 *			    stays closed; RTRS_CLT_RECONNECT_FOREVER
 * @hb_interval_ms: heartbeat period of the session's paths
 * @hb_missed_max: unanswered heartbeats in a row that close a path; each
 *		   path keeps a copy of both, set under @paths_mutex
 * @paths_mutex: serialises changes of @paths and @nr_paths, and of the
 *		 heartbeat settings with their copies in the paths
 * @paths: the paths, RCU list; readers pick one for each IO
 * @nr_paths: entries of @paths
 * @paths_kobj: /sys/class/rtrs-client/<sessname>/paths
 * @mp_policy: an enum rtrs_clt_mp_policy
 * @rr_turn: round-robin cursor of each CPU
 * @queue_depth: number of permits, the server's chunks
 * @io_depth: the first permits, which IO takes: all but
 *	      RTRS_CLT_ADMIN_PERMITS when there are more
 * @max_io_size: largest data part of a request over every path
 * @max_segments: largest sg count of a request over every path
 * @permit_size: bytes of one permit with its pdu
 * @permits: @queue_depth permits of @permit_size bytes
 * @permits_map: bit set while a permit is taken
 * @permits_wait: where rtrs_clt_get_permit() waits for a free one
 */
struct rtrs_clt_sess {
	struct device dev;
	char sessname[NAME_MAX];
	uuid_t uuid;
	struct rtrs_clt_ops ops;
	u16 port;
	size_t pdu_sz;
	u32 nr_poll_queues;
	struct mutex ctl_mutex;	/* serialises path add, remove, close */
	spinlock_t state_lock;	/* protects state */
	enum rtrs_clt_sess_state state;
	struct work_struct link_work;
	unsigned int reconnect_delay_ms;
	int max_reconnect_attempts;
	unsigned int hb_interval_ms;
	unsigned int hb_missed_max;
	struct mutex paths_mutex;	/* protects paths, nr_paths, hb_* */
	struct list_head paths;
	unsigned int nr_paths;
	struct kobject *paths_kobj;
	int mp_policy;
	unsigned int __percpu *rr_turn;
	u32 queue_depth;
	u32 io_depth;
	u32 max_io_size;
	u32 max_segments;
	size_t permit_size;
	void *permits;
	unsigned long *permits_map;
	wait_queue_head_t permits_wait;
};

/**
 * struct rtrs_clt_con - a connection of a client path
 * @c: what the core knows of it
 * @rx_ius: receive buffers, @rx_num of them, reposted as they complete
 * @rx_num: number of @rx_ius
 * @cm_err: 0 once established, else why it failed
 * @cm_finished: the connection is up or failed (the path's @setup_wq is
 *		 woken): later CM errors fail the path.  The CM calls the
 *		 handler of one connection one event at a time.
 * @established: the connection got to RTS: its queue pair can be drained
 * @abandoned: its setup was given up on: the CM handler ignores its
 *	       events.  Set and read under the cm_id's handler lock.
 */
struct rtrs_clt_con {
	struct rtrs_con c;
	struct rtrs_iu **rx_ius;
	unsigned int rx_num;
	int cm_err;
	bool cm_finished;
	bool established;
	bool abandoned;
};

/**
 * struct rtrs_clt_rbuf - a chunk of the server, where requests go
 * @addr: its address in the server's DMA space
 * @rkey: the rkey to write it; changes after each IO with RTRS_MSG_NEW_RKEY_F
 */
struct rtrs_clt_rbuf {
	u64 addr;
	u32 rkey;
};

/**
 * struct rtrs_clt_req - an IO of a permit on a path
 * @path: the path it was sent on
 * @con: the connection it was sent on
 * @permit: its permit
 * @iu: user header and RTRS trailer, written into the server's chunk
 * @mr: registers a READ's buffers for the server to write
 * @inv_cqe: completion of the local invalidation of @mr
 * @bounce: where the server writes a READ of RTRS_CLT_BOUNCE_SIZE bytes
 *	    at most, copied into @sg once answered
 * @bounce_mr: registers @bounce, once for the life of the request
 * @bounce_reg: @bounce_mr is registered
 * @sge: the send's sg entries: data then @iu
 * @sg: the ULP's data
 * @sg_cnt: entries of @sg
 * @dma_cnt: entries of @sg after DMA mapping, 0 when not mapped
 * @dir: READ or WRITE
 * @usr_len: bytes of the user header at the start of @iu
 * @data_len: bytes of data in @sg
 * @conf: the ULP's completion
 * @priv: passed to @conf
 * @errno: the server's answer, kept while @mr is invalidated
 * @start_ns: when it was posted on @path, for rtrs_clt_overdue() and the
 *	      latency statistics
 * @need_inv: @mr is still valid and must be invalidated before completion
 * @counted: counts in the path's @inflight
 * @in_use: set while in flight; whoever clears it completes the request
 */
struct rtrs_clt_req {
	struct rtrs_clt_path *path;
	struct rtrs_clt_con *con;
	struct rtrs_permit *permit;
	struct rtrs_iu *iu;
	struct ib_mr *mr;
	struct ib_cqe inv_cqe;
	struct rtrs_iu *bounce;
	struct ib_mr *bounce_mr;
	bool bounce_reg;
	struct ib_sge *sge;
	struct scatterlist *sg;
	unsigned int sg_cnt;
	int dma_cnt;
	int dir;
	size_t usr_len;
	size_t data_len;
	void (*conf)(void *priv, int errno);
	void *priv;
	int errno;
	u64 start_ns;
	bool need_inv;
	bool counted;
	atomic_t in_use;
};

/**
 * struct rtrs_clt_path - a client path to one address of the server: the
 *			  admin connection, one per CPU, then the polled ones
 * @s: what the core knows of it
 * @sess: the session it belongs to
 * @entry: in @sess's paths
 * @kobj: /sys/class/rtrs-client/<sessname>/paths/<src@dst>; its release
 *	  frees the path
 * @name: "<src>@<dst>", the name of @kobj
 * @state_lock: protects @state
 * @state: an enum rtrs_clt_state
 * @setup_mutex: serialises connecting the path and tearing it down: the
 *		 close and reconnect works and the sysfs controls
 * @setup_wq: where a connect in progress waits for the CM handler, and
 *	      a new path for its first connect
 * @recon_cnt: incarnation of the path, in CON_REQ: the server tells a
 *	       reconnect from a stale connection of the previous one by it
 * @reconnect_attempts: failed reconnects since the path was last up
 * @add_tries: tries left of the first connect, which the server refused
 *	       with EAGAIN: the reconnect work makes them (@setup_mutex)
 * @add_err: how the first connect ended, -EINPROGRESS while @add_tries
 *	     are made; rtrs_clt_first_connect() waits for it on @setup_wq
 * @io_ref: held by each rtrs_clt_request() while it posts on the path
 * @io_ref_done: completed when @io_ref is killed and drained
 * @close_work: takes a CONNECTED path down once it failed or is stopped
 * @reconnect_dwork: connects a CLOSED path again
 * @info_done: completed when the server's INFO_RSP is processed
 * @info_err: its result
 * @setup_err: set, under @state_lock, when a connection fails or the path
 *	       is stopped while it connects
 * @hb_cqe: completion of our heartbeats
 * @queue_depth: the server's number of chunks
 * @max_io_size: the server's largest data part of an IO
 * @max_hdr_size: the server's largest user header plus trailer
 * @chunk_size: @max_io_size + @max_hdr_size
 * @flags: the server's RTRS_MSG_* flags of CON_RSP
 * @max_pages_per_mr: page entries of a READ's memory registration
 * @max_send_sge: sg entries of a send on this device
 * @rbufs: the server's chunks
 * @reqs: one request per permit
 * @inflight: requests in flight that min-inflight sent, for that policy;
 *	      zeroed by a reset of the statistics, as upstream's
 * @hca_name: the RDMA device's name
 * @hca_port: its port
 * @stats: its statistics, see rtrs-clt-stats.c
 */
struct rtrs_clt_path {
	struct rtrs_path s;
	struct rtrs_clt_sess *sess;
	struct list_head entry;
	struct kobject kobj;
	char name[NAME_MAX];
	spinlock_t state_lock;		/* protects state */
	enum rtrs_clt_state state;
	struct mutex setup_mutex;	/* serialises connect and teardown */
	wait_queue_head_t setup_wq;
	u16 recon_cnt;
	int reconnect_attempts;
	unsigned int add_tries;
	int add_err;
	struct percpu_ref io_ref;
	struct completion io_ref_done;
	struct work_struct close_work;
	struct delayed_work reconnect_dwork;
	struct completion info_done;
	int info_err;
	int setup_err;
	struct ib_cqe hb_cqe;
	u32 queue_depth;
	u32 max_io_size;
	u32 max_hdr_size;
	u32 chunk_size;
	u32 flags;
	u32 max_pages_per_mr;
	u32 max_send_sge;
	struct rtrs_clt_rbuf *rbufs;
	struct rtrs_clt_req *reqs;
	atomic_t inflight;
	char hca_name[IB_DEVICE_NAME_MAX];
	u32 hca_port;
	struct rtrs_clt_stats *stats;
};

static inline struct rtrs_clt_path *to_clt_path(struct rtrs_path *s)
{
	return container_of(s, struct rtrs_clt_path, s);
}

static inline struct rtrs_clt_con *to_clt_con(struct rtrs_con *c)
{
	return container_of(c, struct rtrs_clt_con, c);
}

/* IO requests of a connection for @cid: the admin's or the session's. */
static inline u32 rtrs_clt_con_depth(const struct rtrs_clt_path *path,
				     unsigned int cid)
{
	return cid ? path->queue_depth : RTRS_ADMIN_QUEUE_DEPTH;
}

/* The polled connections come last, after the admin and IO ones. */
static inline unsigned int
rtrs_clt_first_poll_cid(const struct rtrs_clt_path *path)
{
	return path->s.con_num - path->sess->nr_poll_queues;
}

/*
 * Whether a READ sent on connection @cid of @path has its MR invalidated
 * by the client, on connection 0, rather than by the server's
 * SEND_WITH_INV, a message more per read.  Connection 0's send queue is
 * sized for RTRS_ADMIN_QUEUE_DEPTH requests, of which the admin messages
 * take few: it has room for an invalidation of each request of a path no
 * deeper.  A polled request is left to the server: the completion of an
 * invalidation on connection 0 would take the interrupt polling avoids.
 */
static inline bool rtrs_clt_inv_locally(const struct rtrs_clt_path *path,
					unsigned int cid)
{
	return cid < rtrs_clt_first_poll_cid(path) &&
	       path->queue_depth <= RTRS_ADMIN_QUEUE_DEPTH;
}

enum rtrs_clt_state rtrs_clt_path_state(struct rtrs_clt_path *path);
void rtrs_clt_path_fail(struct rtrs_clt_path *path);
void rtrs_clt_free_rx(struct rtrs_clt_con *con);
void rtrs_clt_free_path(struct rtrs_clt_path *path);
int rtrs_clt_add_path_sysfs(struct rtrs_clt_sess *sess,
			    const struct rtrs_addr *addr);
void rtrs_clt_set_hb(struct rtrs_clt_sess *sess, unsigned int interval_ms,
		     unsigned int missed_max);
int rtrs_clt_disconnect_path(struct rtrs_clt_path *path);
int rtrs_clt_reconnect_path(struct rtrs_clt_path *path);
int rtrs_clt_remove_path(struct rtrs_clt_path *path,
			 const struct attribute *self);

/* rtrs-clt-con.c */
extern struct rtrs_ib_dev_pool rtrs_clt_dev_pool;
int rtrs_clt_con_open(struct rtrs_clt_path *path, unsigned int cid);
void rtrs_clt_drain_cons(struct rtrs_clt_path *path);
void rtrs_clt_destroy_qps(struct rtrs_clt_path *path);
void rtrs_clt_destroy_cons(struct rtrs_clt_path *path);

/* rtrs-clt-sysfs.c */
extern const struct attribute_group *rtrs_clt_sess_groups[];
int rtrs_clt_sysfs_add_sess(struct rtrs_clt_sess *sess);
void rtrs_clt_sysfs_del_sess(struct rtrs_clt_sess *sess);
int rtrs_clt_sysfs_add_path(struct rtrs_clt_path *path);
void rtrs_clt_sysfs_init_path(struct rtrs_clt_path *path);
void rtrs_clt_sysfs_put_path(struct rtrs_clt_path *path);

/* rtrs-clt-stats.c */
extern const struct attribute_group rtrs_clt_stats_group;
struct rtrs_clt_stats *rtrs_clt_stats_alloc(void);
void rtrs_clt_stats_free(struct rtrs_clt_stats *stats);
void rtrs_clt_stats_rdma(struct rtrs_clt_stats *stats, int dir, size_t bytes,
			 unsigned int sg_cnt);
void rtrs_clt_stats_latency(struct rtrs_clt_stats *stats, int dir, u64 ns);
void rtrs_clt_stats_completion(struct rtrs_clt_stats *stats,
			       unsigned int submit_cpu);
void rtrs_clt_stats_failover(struct rtrs_clt_stats *stats);
void rtrs_clt_stats_reconnect(struct rtrs_clt_stats *stats, bool ok);

#endif /* RTRS_CLT_H */
