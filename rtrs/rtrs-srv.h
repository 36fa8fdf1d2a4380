/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RTRS server: what the server side's files share.
 */
#ifndef RTRS_SRV_H
#define RTRS_SRV_H

#include <linux/device.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/percpu-refcount.h>
#include <linux/refcount.h>
#include <linux/scatterlist.h>

#include "rtrs-pri.h"
#include "rtrs.h"

/* Largest user header of a request; the rest of a chunk is data. */
#define RTRS_SRV_MAX_HDR_SIZE	PAGE_SIZE
/*
 * Connections of a path at most, whatever max_cons_per_path says: an admin
 * connection, one per CPU and one per poll queue of the client; Linux's
 * own server takes as many.
 */
#define RTRS_SRV_MAX_CONS	4096

extern unsigned int rtrs_srv_queue_depth;
extern unsigned int rtrs_srv_chunk_size;
extern bool rtrs_srv_always_invalidate;

/**
 * struct rtrs_srv_ctx - a listener opened by a ULP
 * @ops: the ULP's callbacks
 * @port: the port listened on
 * @cm_id_ip: listens on the IPv4 and IPv6 any address
 * @cm_id_ib: listens on AF_IB
 * @mutex: protects @sess_list, the membership of each session's paths and
 *	   @chunk_bytes
 * @sess_list: of struct rtrs_srv_sess
 * @chunk_bytes: the chunks of the sessions in @sess_list, reserved
 */
struct rtrs_srv_ctx {
	const struct rtrs_srv_ops *ops;
	u16 port;
	struct rdma_cm_id *cm_id_ip;
	struct rdma_cm_id *cm_id_ib;
	struct mutex mutex;	/* protects sess_list, sessions' paths */
	struct list_head sess_list;
	u64 chunk_bytes;
};

/**
 * struct rtrs_srv_sess - a client's session: its paths and its chunks
 * @entry: in the context's @sess_list
 * @ctx: the context it came in through
 * @uuid: the client's session uuid
 * @sessname: the session's name, from the first path's INFO_REQ
 * @paths: of struct rtrs_srv_path, under @ctx->mutex
 * @dying: its last path left; no path joins it, and it keeps its name
 *	   until its sysfs directory and the ULP's are gone; under
 *	   @ctx->mutex
 * @announced: the ULP was told CONNECTED, under @ctx->mutex
 * @priv: the ULP's, set with rtrs_srv_set_sess_priv()
 * @chunks_mutex: protects @chunks while the first path to go up makes them
 * @chunks: @queue_depth buffers the client writes IO into, made when the
 *	    first path goes up, not by the connection requests before
 * @queue_depth: number of @chunks
 * @dev: /sys/class/rtrs-server/<sessname>; holds the session's refcount:
 *	 one for the context's list, one per path; its release frees it
 * @paths_kobj: the paths/ directory
 * @dev_added: @dev is registered
 */
struct rtrs_srv_sess {
	struct list_head entry;
	struct rtrs_srv_ctx *ctx;
	uuid_t uuid;
	char sessname[NAME_MAX];
	struct list_head paths;
	bool dying;
	bool announced;
	void *priv;
	struct mutex chunks_mutex;	/* protects chunks while made */
	struct page **chunks;
	unsigned int queue_depth;
	struct device dev;
	struct kobject *paths_kobj;
	bool dev_added;
};

enum rtrs_srv_state {
	RTRS_SRV_CONNECTING,
	RTRS_SRV_CONNECTED,
	RTRS_SRV_CLOSING,
	RTRS_SRV_CLOSED,
};

/**
 * struct rtrs_srv_con - a connection of a server path
 * @c: what the core knows of it
 */
struct rtrs_srv_con {
	struct rtrs_con c;
};

/**
 * struct rtrs_srv_mr - a chunk as this path's device sees it
 * @mr: registers the chunk for the client's RDMA writes
 * @sgt: the chunk's DMA mapping
 * @inv_cqe: completion of its local invalidation (always_invalidate)
 */
struct rtrs_srv_mr {
	struct ib_mr *mr;
	struct sg_table sgt;
	struct ib_cqe inv_cqe;
};

/**
 * struct rtrs_srv_op - an IO of the client, from its IMM to our response
 * @path: the path it came on
 * @con: the connection it came on, which carries the response
 * @msg_id: the chunk it uses, also its id on the wire
 * @dir: READ or WRITE
 * @busy: between the request and the posting of the response
 * @remote: where a READ's data goes (READ only)
 * @need_inval: a READ whose client MR we invalidate with the response
 * @usr_len: user header length
 * @data_len: data length
 * @off: offset of the trailer in the chunk
 * @work: hands the request to the ULP in process context
 */
struct rtrs_srv_op {
	struct rtrs_srv_path *path;
	struct rtrs_srv_con *con;
	u32 msg_id;
	int dir;
	atomic_t busy;
	struct rtrs_sg_desc remote;
	bool need_inval;
	u32 usr_len;
	u32 data_len;
	u32 off;
	struct work_struct work;
};

/**
 * struct rtrs_srv_path - one path of a session, as the server keeps it
 * @s: what both sides keep
 * @srv: the session
 * @entry: in the session's @paths, under the context's mutex
 * @state: an enum rtrs_srv_state, changed with cmpxchg
 * @recon_cnt: the client's incarnation of this path
 * @hca_port: the port of the RDMA device it came in through
 * @dev: its RDMA device and a protection domain of its own; @s.dev
 *	 points here once the first connection came
 * @mem_bits: low bits of an IO_REQ payload that hold the offset
 * @mrs: a registration per chunk
 * @ops: an op per chunk
 * @info_iu: receives INFO_REQ
 * @info_iu_rsp: carries INFO_RSP; freed with the path
 * @info_work: answers INFO_REQ in process context
 * @close_work: tears the path down
 * @setup_dwork: closes the path if it is still connecting after
 *		 RTRS_SRV_SETUP_TIMEOUT_MS: a client that vanished mid-setup
 * @ids_inflight: one per op between request and response posted; killed
 *		  on close
 * @ids_done: completed when @ids_inflight reached zero after its kill
 * @kobj: /sys/class/rtrs-server/<sess>/paths/<path>; holds the path's
 *	  refcount, its release frees the path
 * @kobj_added: @kobj is registered
 * @stats_read_cnt: READ requests served
 * @stats_read_bytes: their bytes of user header and data
 * @stats_write_cnt: WRITE requests served
 * @stats_write_bytes: their bytes of user header and data
 */
struct rtrs_srv_path {
	struct rtrs_path s;
	struct rtrs_srv_sess *srv;
	struct list_head entry;
	atomic_t state;
	u16 recon_cnt;
	u32 hca_port;
	struct rtrs_ib_dev dev;
	unsigned int mem_bits;
	struct rtrs_srv_mr *mrs;
	struct rtrs_srv_op *ops;
	struct rtrs_iu *info_iu;
	struct rtrs_iu *info_iu_rsp;
	struct work_struct info_work;
	struct work_struct close_work;
	struct delayed_work setup_dwork;
	struct percpu_ref ids_inflight;
	struct completion ids_done;
	struct kobject kobj;
	bool kobj_added;
	atomic64_t stats_read_cnt;
	atomic64_t stats_read_bytes;
	atomic64_t stats_write_cnt;
	atomic64_t stats_write_bytes;
};

static inline struct rtrs_srv_path *to_srv_path(struct rtrs_path *s)
{
	return container_of(s, struct rtrs_srv_path, s);
}

static inline struct rtrs_srv_con *to_srv_con(struct rtrs_con *c)
{
	return container_of(c, struct rtrs_srv_con, c);
}

void rtrs_srv_close_path(struct rtrs_srv_path *path);
void rtrs_srv_path_free(struct rtrs_srv_path *path);

/* rtrs-srv-sysfs.c */
/* "<client address>@<server address>", each as rtrs_sockaddr_to_str() */
#define RTRS_SRV_PATH_NAME_MAX	128

extern struct class rtrs_srv_class;
int rtrs_srv_path_name(const struct sockaddr_storage *clt,
		       const struct sockaddr_storage *srv, char *buf,
		       size_t len);
int rtrs_srv_sess_sysfs_add(struct rtrs_srv_sess *srv);
void rtrs_srv_sess_sysfs_del(struct rtrs_srv_sess *srv);
int rtrs_srv_path_sysfs_add(struct rtrs_srv_path *path);
void rtrs_srv_path_sysfs_del(struct rtrs_srv_path *path);
extern const struct kobj_type rtrs_srv_path_ktype;

/* rtrs-srv-limits.c */
void rtrs_srv_limits_init(void);
unsigned long rtrs_srv_half_open_timeout(void);
int rtrs_srv_admit_cons(unsigned int cid_num);
int rtrs_srv_admit_sess(struct rtrs_srv_ctx *ctx, struct rdma_cm_id *cm_id);
void rtrs_srv_release_sess(struct rtrs_srv_ctx *ctx);
int rtrs_srv_admit_path(struct rtrs_srv_sess *srv, struct rdma_cm_id *cm_id);

#endif /* RTRS_SRV_H */
