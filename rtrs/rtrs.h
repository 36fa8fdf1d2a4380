/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RTRS: RDMA transport, the API offered to its users (ULPs such as RNBD).
 *
 * This header is all a ULP may include from RTRS.
 *
 * A client session is a set of paths to one server; each IO is a request
 * of the ULP: a user header (at most max_hdr_size bytes, delivered to the
 * server's ULP as is) and data, written to the server (WRITE) or read from
 * it (READ).  The server's ULP answers each request with an errno.
 */
#ifndef RTRS_H
#define RTRS_H

#include <linux/scatterlist.h>
#include <linux/socket.h>
#include <linux/types.h>

/**
 * struct rtrs_addr - the two ends of one path
 * @src: local address to bind to; its family is AF_UNSPEC when the route
 *	 to @dst should choose it
 * @dst: the peer's address
 */
struct rtrs_addr {
	struct sockaddr_storage *src;
	struct sockaddr_storage *dst;
};

int rtrs_addr_to_sockaddr(const char *str, size_t len, u16 port,
			  struct rtrs_addr *addr);
int rtrs_sockaddr_to_str(const struct sockaddr *addr, char *buf, size_t len);

/* Client side */

struct rtrs_clt_sess;
struct rtrs_permit;

enum rtrs_clt_link_ev {
	RTRS_CLT_LINK_EV_RECONNECTED,
	RTRS_CLT_LINK_EV_DISCONNECTED,
};

/**
 * struct rtrs_clt_ops - what the ULP gives a client session
 * @priv: passed back to @link_ev
 * @link_ev: called when the session lost its last path (DISCONNECTED) or
 *	     got one back (RECONNECTED), from the session's work in process
 *	     context; it may sleep, but not wait for anything held around
 *	     rtrs_clt_close(), which waits for it.  After a DISCONNECTED, no
 *	     path connects again before an RCU grace period has passed: a
 *	     ULP that records the loss in @link_ev, and checks that record
 *	     and calls rtrs_clt_request() in one RCU read section, sends no
 *	     request of before the loss over a path of after it.
 */
struct rtrs_clt_ops {
	void *priv;
	void (*link_ev)(void *priv, enum rtrs_clt_link_ev ev);
};

/**
 * struct rtrs_clt_open_args - parameters of rtrs_clt_open()
 * @sessname: the session's name, also its name on the server
 * @paths: the paths to open
 * @path_cnt: number of @paths
 * @port: the server's port
 * @pdu_sz: bytes of ULP private data in each permit
 * @reconnect_delay_sec: base delay between reconnect attempts
 * @max_reconnect_attempts: -1 for ever, else at most this many
 * @nr_poll_queues: connections per path, besides one per CPU, whose
 *		    completions the ULP reaps with rtrs_clt_poll() rather
 *		    than interrupts; at most nr_cpu_ids
 */
struct rtrs_clt_open_args {
	const char *sessname;
	const struct rtrs_addr *paths;
	size_t path_cnt;
	u16 port;
	size_t pdu_sz;
	u8 reconnect_delay_sec;
	s16 max_reconnect_attempts;
	u32 nr_poll_queues;
};

struct rtrs_clt_sess *rtrs_clt_open(const struct rtrs_clt_ops *ops,
				    const struct rtrs_clt_open_args *args);
void rtrs_clt_close(struct rtrs_clt_sess *sess);

enum rtrs_clt_con_type {
	RTRS_ADMIN_CON,
	RTRS_IO_CON,
};

/* May rtrs_clt_get_permit() sleep until a permit is free? */
enum rtrs_permit_wait {
	RTRS_PERMIT_NOWAIT,
	RTRS_PERMIT_WAIT,
};

struct rtrs_permit *rtrs_clt_get_permit(struct rtrs_clt_sess *sess,
					enum rtrs_clt_con_type con_type,
					enum rtrs_permit_wait wait);
void rtrs_clt_put_permit(struct rtrs_clt_sess *sess,
			 struct rtrs_permit *permit);
void *rtrs_permit_to_pdu(struct rtrs_permit *permit);
void rtrs_permit_set_poll_queue(struct rtrs_permit *permit,
				unsigned int queue);
int rtrs_clt_poll(struct rtrs_clt_sess *sess, unsigned int queue);

/**
 * struct rtrs_clt_io - a request of the ULP
 * @dir: READ (the server writes @sg) or WRITE (the server gets @sg)
 * @conf: called once per request with 0 or a negative errno, unless
 *	  rtrs_clt_request() returned an error, and maybe before it returned.
 *	  It must not sleep: it runs in softirq context when the request's
 *	  connection completes by interrupt, in the context of the caller of
 *	  rtrs_clt_poll() when it is polled, and in process context when
 *	  rtrs_clt_overdue() reaps a polled connection, or the path's close
 *	  reaps what its polled connections hold and fails what no other
 *	  path took.
 * @priv: passed back to @conf
 * @usr: the user header, copied before rtrs_clt_request() returns
 * @usr_len: bytes of @usr
 * @sg: the data, mapped while the request is in flight
 * @sg_cnt: entries of @sg
 * @len: bytes of data in @sg
 */
struct rtrs_clt_io {
	int dir;
	void (*conf)(void *priv, int errno);
	void *priv;
	const void *usr;
	size_t usr_len;
	struct scatterlist *sg;
	unsigned int sg_cnt;
	size_t len;
};

int rtrs_clt_request(struct rtrs_clt_sess *sess, struct rtrs_permit *permit,
		     const struct rtrs_clt_io *io);
void rtrs_clt_overdue(struct rtrs_clt_sess *sess, struct rtrs_permit *permit,
		      void *priv, unsigned long timeout);

/**
 * struct rtrs_attrs - what a client session can carry
 * @queue_depth: permits of RTRS_IO_CON, that is IOs in flight.  A few
 *		 more are kept for RTRS_ADMIN_CON when the server's depth
 *		 allows (above 2): a ULP that holds a tag of a set this
 *		 deep while it takes its permit then always finds one.
 * @max_io_size: largest data part of a request, in bytes
 * @max_segments: largest number of sg entries of a request
 */
struct rtrs_attrs {
	u32 queue_depth;
	u32 max_io_size;
	u32 max_segments;
};

int rtrs_clt_query(struct rtrs_clt_sess *sess, struct rtrs_attrs *attr);

/* Server side */

struct rtrs_srv_ctx;
struct rtrs_srv_sess;
struct rtrs_srv_op;

enum rtrs_srv_link_ev {
	RTRS_SRV_LINK_EV_CONNECTED,
	RTRS_SRV_LINK_EV_DISCONNECTED,
};

/**
 * struct rtrs_srv_ops - what the ULP gives the server
 * @rdma_ev: an IO of a client.  For a WRITE, @data holds the @datalen
 *	     bytes written; for a READ, the ULP fills @data with @datalen
 *	     bytes.  @usr is the request's user header.  The ULP answers with
 *	     rtrs_srv_resp_rdma(), now or later; a non-zero return answers
 *	     with that error at once.  Called in process context, from a
 *	     work item of the server's on the CPU that reaped the request
 *	     (with always_invalidate, the invalidation of its chunk).  It
 *	     may sleep; other requests go on meanwhile.
 * @link_ev: a session appeared (CONNECTED: a non-zero return refuses it)
 *	     or lost its last path and is gone (DISCONNECTED); may sleep.
 *	     @priv is what rtrs_srv_set_sess_priv() set.
 * @path_up: optional; a path of the session is up, its client's address
 *	     @peer, after the session's CONNECTED: a non-zero return closes
 *	     the path before the client may use it.  @priv is still NULL
 *	     where another path's CONNECTED has not returned yet.  May
 *	     sleep.
 */
struct rtrs_srv_ops {
	int (*rdma_ev)(void *priv, struct rtrs_srv_op *id, void *data,
		       size_t datalen, const void *usr, size_t usrlen);
	int (*link_ev)(struct rtrs_srv_sess *sess, enum rtrs_srv_link_ev ev,
		       void *priv);
	int (*path_up)(struct rtrs_srv_sess *sess, const struct sockaddr *peer,
		       void *priv);
};

struct rtrs_srv_ctx *rtrs_srv_open(const struct rtrs_srv_ops *ops, u16 port);
void rtrs_srv_close(struct rtrs_srv_ctx *ctx);
bool rtrs_srv_resp_rdma(struct rtrs_srv_op *id, int errno);
void rtrs_srv_set_sess_priv(struct rtrs_srv_sess *sess, void *priv);
int rtrs_srv_get_path_name(struct rtrs_srv_sess *sess, char *pathname,
			   size_t len);
int rtrs_srv_get_queue_depth(struct rtrs_srv_sess *sess);
int rtrs_srv_visit_peers(struct rtrs_srv_sess *sess,
			 int (*fn)(const struct sockaddr *peer, void *data),
			 void *data);

#endif /* RTRS_H */
