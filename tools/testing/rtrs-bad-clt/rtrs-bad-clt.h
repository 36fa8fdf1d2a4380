/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rtrs-bad-clt: a test client that speaks raw RTRS to a server and sends it
 * malformed messages.  What the two files of the module share: a path of
 * our own (connections, INFO exchange, requests and their responses), on
 * the core's connection and IU helpers.
 */
#ifndef RTRS_BAD_CLT_H
#define RTRS_BAD_CLT_H

#include <linux/atomic.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/wait.h>

#include "rtrs-pri.h"
#include "rtrs.h"

/* An admin connection and one IO connection. */
#define BAD_CLT_CONS		2
/* Receives kept posted per connection: responses and heartbeats. */
#define BAD_CLT_RX		32
/* Big enough for an RKEY_RSP; a bigger SEND from the server is an error. */
#define BAD_CLT_RX_SIZE		64

/**
 * struct bad_target - where the server is
 * @addr: source (AF_UNSPEC for the route's choice) and destination
 * @src: storage of @addr.src
 * @dst: storage of @addr.dst
 * @timeout_ms: how long to wait for any answer of the server
 */
struct bad_target {
	struct rtrs_addr addr;
	struct sockaddr_storage src;
	struct sockaddr_storage dst;
	unsigned int timeout_ms;
};

/**
 * struct bad_con - one connection of a bad path
 * @c: what the core knows of it
 * @req: the CON_REQ it sends, set before it connects
 * @cm_done: completed when the connection is up or failed
 * @cm_finished: @cm_done was completed; later events only mark the path
 * @cm_err: 0 when established, else why not
 * @reject_errno: the errno of the server's reject, made positive; 0 if
 *		  none came, negative if the server sent a positive one
 * @established: ESTABLISHED was seen
 * @closed: an event after @cm_done took it down; under the path's lock
 * @rx: receives for the server's IMMs and RKEY_RSPs
 */
struct bad_con {
	struct rtrs_con c;
	struct rtrs_msg_conn_req req;
	struct completion cm_done;
	bool cm_finished;
	int cm_err;
	int reject_errno;
	bool established;
	bool closed;
	struct rtrs_iu *rx[BAD_CLT_RX];
};

/**
 * struct bad_chunk - a chunk of the server, as INFO_RSP and RKEY_RSP say
 * @addr: its address
 * @rkey: its current rkey
 * @rsp_seq: the path's @rsp_cnt that its last response made, 0 if none
 * @rsp_errno: the errno of that response
 */
struct bad_chunk {
	u64 addr;
	u32 rkey;
	unsigned int rsp_seq;
	int rsp_errno;
};

/**
 * struct bad_path - a path to the server that the cases drive by hand
 * @s: what the core knows of it; @s.dev is @dev
 * @dev: the device of the path and a protection domain with an unsafe
 *	 global rkey, which lets the server write READ data anywhere in
 *	 @rbuf without a registration per request
 * @t: the server
 * @sess_uuid: the session's uuid (paths_uuid on the wire)
 * @bad_cons: the connections
 * @con_ptrs: @s.con, pointing into @bad_cons
 * @wq: woken on a response, an INFO_RSP and when the path breaks
 * @lock: protects @rsp_cnt, @rsp_id, @rsp_errno, @chunks' rkeys and
 *	  responses, @info_done, @info_err, @tx_busy, @closed, @wc_err,
 *	  @unexpected and @next_chunk
 * @rsp_cnt: responses received
 * @rsp_id: chunk of the last response
 * @rsp_errno: errno of the last response
 * @info_done: INFO_RSP came
 * @info_err: it was not one this client can use
 * @tx_busy: @tx is in a work request not completed yet
 * @closed: a connection of the path went down after it was established
 * @wc_err: status of a failed work request (not a flush), else 0
 * @unexpected: what the server sent that this client does not expect
 * @imm_inflight: bare IMMs posted and not completed yet
 * @queue_depth: chunks of the session (CON_RSP)
 * @chunk_size: their size (CON_RSP max_io_size + max_hdr_size)
 * @max_hdr_size: largest user header (CON_RSP)
 * @mem_bits: low bits of an IO_REQ's payload that hold the offset
 * @new_rkey: the server re-registers each chunk after use (RKEY_RSP)
 * @chunks: the chunks, from INFO_RSP
 * @next_chunk: the chunk the next request goes to; they rotate so that
 *		the server has long released a chunk when it is used again
 * @info_iu: receives INFO_RSP
 * @tx: what the client RDMA-writes into a chunk or SENDs
 * @rbuf: where the server writes the data of a READ
 */
struct bad_path {
	struct rtrs_path s;
	struct rtrs_ib_dev dev;
	const struct bad_target *t;
	uuid_t sess_uuid;
	struct bad_con bad_cons[BAD_CLT_CONS];
	struct rtrs_con *con_ptrs[BAD_CLT_CONS];
	wait_queue_head_t wq;
	spinlock_t lock;	/* protects the fields it lists above */
	unsigned int rsp_cnt;
	u32 rsp_id;
	int rsp_errno;
	bool info_done;
	int info_err;
	bool tx_busy;
	bool closed;
	int wc_err;
	unsigned int unexpected;
	atomic_t imm_inflight;
	unsigned int queue_depth;
	unsigned int chunk_size;
	unsigned int max_hdr_size;
	unsigned int mem_bits;
	bool new_rkey;
	struct bad_chunk *chunks;
	unsigned int next_chunk;
	struct rtrs_iu *info_iu;
	struct rtrs_iu *tx;
	struct rtrs_iu *rbuf;
};

/**
 * struct bad_rsp - what came back for a request
 * @errno: the response's errno
 * @id: the response's chunk id
 */
struct bad_rsp {
	int errno;
	u32 id;
};

/**
 * struct bad_fuzz_cfg - what a fuzz run does
 * @seed: makes every message
 * @count: messages to send at most
 * @time_ms: time to take at most
 * @device: the device its sessions open, read-only
 * @check: whether the server still serves another session: 0, else why
 *	   not; called every few hundred messages and at the end
 * @arg: for @check
 */
struct bad_fuzz_cfg {
	u64 seed;
	unsigned long count;
	unsigned int time_ms;
	const char *device;
	int (*check)(void *arg);
	void *arg;
};

/**
 * struct bad_fuzz_stats - what a fuzz run did
 * @msgs: messages sent
 * @answered: requests the server answered
 * @refused: connections it rejected
 * @paths: paths opened
 * @closed: paths up that it closed
 * @ms: time taken
 */
struct bad_fuzz_stats {
	unsigned long msgs;
	unsigned long answered;
	unsigned long refused;
	unsigned long paths;
	unsigned long closed;
	unsigned int ms;
};

struct bad_path *bad_path_alloc(const struct bad_target *t,
				const char *sessname);
void bad_path_free(struct bad_path *p);
void bad_conn_req_init(struct bad_path *p, struct rtrs_msg_conn_req *req,
		       unsigned int cid);
int bad_con_connect(struct bad_path *p, unsigned int cid,
		    const struct rtrs_msg_conn_req *req);
int bad_con_connect_start(struct bad_path *p, unsigned int cid,
			  const struct rtrs_msg_conn_req *req);
int bad_con_connect_wait(struct bad_path *p, unsigned int cid);
int bad_path_connect(struct bad_path *p);
int bad_path_send(struct bad_path *p, unsigned int cid, const void *msg,
		  size_t len);
int bad_path_info(struct bad_path *p);
struct bad_path *bad_path_up(const struct bad_target *t, const char *sessname);
bool bad_path_broken(struct bad_path *p);
int bad_path_wait_closed(struct bad_path *p);
int bad_con_wait_closed(struct bad_path *p, unsigned int cid);
u32 bad_path_take_chunk(struct bad_path *p);
int bad_path_post_io(struct bad_path *p, u32 chunk, const void *buf,
		     size_t len, u32 imm);
int bad_con_post_imm(struct bad_path *p, unsigned int cid, u32 imm);
int bad_path_wait_sent(struct bad_path *p);
int bad_con_post_io(struct bad_path *p, unsigned int cid, u32 chunk,
		    const void *buf, size_t len, u32 imm);
int bad_path_post_raw(struct bad_path *p, u64 addr, u32 rkey,
		      const void *buf, size_t len);
int bad_path_wait_rsp(struct bad_path *p, unsigned int seen,
		      struct bad_rsp *rsp);
bool bad_path_chunk_answered(struct bad_path *p, u32 chunk, unsigned int seen);
int bad_path_wait_chunk(struct bad_path *p, u32 chunk, unsigned int seen,
			int *errno);
unsigned int bad_path_rsp_cnt(struct bad_path *p);
u32 bad_io_imm(struct bad_path *p, u32 chunk, u32 off);

/* rtrs-bad-clt-fuzz.c */
int bad_fuzz(const struct bad_target *t, const struct bad_fuzz_cfg *cfg,
	     struct bad_fuzz_stats *st, char *why, size_t why_len);

#endif /* RTRS_BAD_CLT_H */
