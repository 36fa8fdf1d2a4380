// SPDX-License-Identifier: GPL-2.0-only
/*
 * RTRS client: sessions of paths to one server, multipath and fail-over.
 *
 * A path is an admin connection (cid 0) and one IO connection per CPU to
 * one address of the server.  Its setup: connect each connection (CON_REQ
 * in the private data), then INFO_REQ/INFO_RSP on cid 0 for the server's
 * chunks.  An IO is written, with its user header and a trailer, into the
 * chunk of its permit; the server answers with an immediate.
 *
 * A path that fails is closed by its close work: submitters are fenced off
 * with @io_ref, the queue pairs drained, and what was in flight is sent
 * again on another path of the session (fail-over); only when none is left
 * does it fail.  Then the reconnect work connects the path again, after a
 * delay with some jitter, so that the paths of many clients do not all
 * knock at a restarted server at once.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <net/ipv6.h>
#include <rdma/ib.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "rtrs-clt.h"
#define CREATE_TRACE_POINTS
#include "rtrs-clt-trace.h"

/*
 * Permits kept for the admin connection's messages, out of the IO's way:
 * see struct rtrs_attrs.
 */
#define RTRS_CLT_ADMIN_PERMITS		2
/* Reconnect delay when the ULP gives none. */
#define RTRS_CLT_RECONNECT_DELAY_SEC	5
/*
 * A path added again right after its removal is refused (EAGAIN) until
 * the server is done closing the old one, which takes seconds under load:
 * the path's reconnect work tries again so often, so many times.
 */
#define RTRS_CLT_ADD_PATH_TRIES		30
#define RTRS_CLT_ADD_PATH_RETRY_MS	1000

/* Parent of the per-session directories, /sys/class/rtrs-client/<sess>. */
static struct class rtrs_clt_class = {
	.name = "rtrs-client",
};

/* Runs the paths' close, reconnect and heartbeat works. */
static struct workqueue_struct *rtrs_clt_wq;
/*
 * Runs the sessions' link works, which a path's reconnect work waits for:
 * a work may not wait for another of its own workqueue when that has a
 * rescuer, as the rescuer runs one work at a time.
 */
static struct workqueue_struct *rtrs_clt_link_wq;

static void rtrs_clt_send_done(struct ib_cq *cq, struct ib_wc *wc);

/* Completion of the sends of IOs: only errors are news. */
static struct ib_cqe rtrs_clt_send_cqe = {
	.done = rtrs_clt_send_done,
};

/* Path and session state */

enum rtrs_clt_state rtrs_clt_path_state(struct rtrs_clt_path *path)
{
	return READ_ONCE(path->state);
}

/* The states each state may be entered from: the table in rtrs-clt.h. */
#define RTRS_CLT_S(s)	BIT(RTRS_CLT_##s)
static const u8 rtrs_clt_state_from[] = {
	[RTRS_CLT_CONNECTING]	= RTRS_CLT_S(CLOSED) | RTRS_CLT_S(STOPPED),
	[RTRS_CLT_CONNECTED]	= RTRS_CLT_S(CONNECTING),
	[RTRS_CLT_CLOSING]	= RTRS_CLT_S(CONNECTED),
	[RTRS_CLT_CLOSED]	= RTRS_CLT_S(CONNECTING) | RTRS_CLT_S(CLOSING),
	[RTRS_CLT_STOPPING]	= RTRS_CLT_S(CONNECTING) | RTRS_CLT_S(CONNECTED) |
				  RTRS_CLT_S(CLOSING) | RTRS_CLT_S(CLOSED),
	[RTRS_CLT_STOPPED]	= RTRS_CLT_S(STOPPING),
	[RTRS_CLT_DEAD]		= RTRS_CLT_S(CLOSED) | RTRS_CLT_S(STOPPED),
};

/*
 * Move @path to state @to, if the table allows it from its state, which
 * lands in @from (may be NULL).  Entering CONNECTING starts a new setup:
 * no error yet, no INFO_RSP yet.
 */
static bool rtrs_clt_change_state(struct rtrs_clt_path *path,
				  enum rtrs_clt_state to,
				  enum rtrs_clt_state *from)
{
	unsigned long flags;
	bool changed;

	spin_lock_irqsave(&path->state_lock, flags);
	if (from)
		*from = path->state;
	changed = rtrs_clt_state_from[to] & BIT(path->state);
	if (changed) {
		WRITE_ONCE(path->state, to);
		if (to == RTRS_CLT_CONNECTING) {
			path->setup_err = 0;
			reinit_completion(&path->info_done);
		}
	}
	spin_unlock_irqrestore(&path->state_lock, flags);
	return changed;
}

/*
 * A connect in progress is to give up with @err: a connection failed, or
 * the path is stopped.  Its waits end at once.
 */
static void rtrs_clt_setup_fail(struct rtrs_clt_path *path, int err)
{
	unsigned long flags;

	spin_lock_irqsave(&path->state_lock, flags);
	if (path->state == RTRS_CLT_CONNECTING ||
	    path->state == RTRS_CLT_STOPPING) {
		if (!path->setup_err)
			path->setup_err = err;
		complete(&path->info_done);
	}
	spin_unlock_irqrestore(&path->state_lock, flags);
	wake_up(&path->setup_wq);
}

static enum rtrs_clt_sess_state
rtrs_clt_sess_state(const struct rtrs_clt_sess *sess)
{
	return READ_ONCE(sess->state);
}

/* The states each session state may be entered from: rtrs-clt.h. */
#define RTRS_CLT_SESS_S(s)	BIT(RTRS_CLT_SESS_##s)
static const u8 rtrs_clt_sess_state_from[] = {
	[RTRS_CLT_SESS_UP]	= RTRS_CLT_SESS_S(OPENING) | RTRS_CLT_SESS_S(DOWN),
	[RTRS_CLT_SESS_DOWN]	= RTRS_CLT_SESS_S(UP),
	[RTRS_CLT_SESS_CLOSING]	= RTRS_CLT_SESS_S(OPENING) | RTRS_CLT_SESS_S(UP) |
				  RTRS_CLT_SESS_S(DOWN),
};

/* Move @sess to state @to if the table allows it from its state. */
static bool rtrs_clt_sess_change_state(struct rtrs_clt_sess *sess,
				       enum rtrs_clt_sess_state to)
{
	bool changed;

	spin_lock(&sess->state_lock);
	changed = rtrs_clt_sess_state_from[to] & BIT(sess->state);
	if (changed)
		WRITE_ONCE(sess->state, to);
	spin_unlock(&sess->state_lock);
	return changed;
}

/*
 * Something broke on @path, in any context: a connected path is closed
 * by its close work, a connect in progress gives up.
 */
void rtrs_clt_path_fail(struct rtrs_clt_path *path)
{
	if (rtrs_clt_change_state(path, RTRS_CLT_CLOSING, NULL)) {
		trace_rtrs_rdma_error_recovery(path);
		queue_work(rtrs_clt_wq, &path->close_work);
		return;
	}
	rtrs_clt_setup_fail(path, -ECONNRESET);
}

static int rtrs_clt_setup_err(struct rtrs_clt_path *path)
{
	unsigned long flags;
	int err;

	spin_lock_irqsave(&path->state_lock, flags);
	err = path->setup_err;
	spin_unlock_irqrestore(&path->state_lock, flags);
	return err;
}

static bool rtrs_clt_wc_ok(struct rtrs_clt_path *path, struct ib_wc *wc,
			   const char *what)
{
	if (likely(wc->status == IB_WC_SUCCESS))
		return true;
	if (wc->status != IB_WC_WR_FLUSH_ERR) {
		rtrs_path_err_rl(&path->s, "%s: %s failed: %s\n", path->name,
				 what, ib_wc_status_msg(wc->status));
		trace_rtrs_clt_path_error(path, what, wc->status);
		rtrs_clt_path_fail(path);
	}
	return false;
}

static struct rtrs_clt_path *rtrs_clt_cq_path(struct ib_cq *cq)
{
	struct rtrs_con *c = cq->cq_context;

	return to_clt_path(c->path);
}

/* Permits */

static struct rtrs_permit *rtrs_clt_permit(struct rtrs_clt_sess *sess,
					   u32 id)
{
	return sess->permits + id * sess->permit_size;
}

/*
 * IO takes the first io_depth permits, admin messages the rest, or any
 * when the server gave too few for a reserve: see struct rtrs_attrs.
 */
static struct rtrs_permit *
rtrs_clt_try_get_permit(struct rtrs_clt_sess *sess,
			enum rtrs_clt_con_type con_type)
{
	bool admin = con_type == RTRS_ADMIN_CON;
	u32 end = admin ? sess->queue_depth : sess->io_depth;
	u32 first = admin && end > sess->io_depth ? sess->io_depth : 0;
	struct rtrs_permit *permit;
	u32 id;

	do {
		id = find_next_zero_bit(sess->permits_map, end, first);
		if (id >= end)
			return NULL;
	} while (test_and_set_bit_lock(id, sess->permits_map));

	permit = rtrs_clt_permit(sess, id);
	permit->cpu = raw_smp_processor_id();
	permit->con_type = con_type;
	permit->poll_queue = -1;
	return permit;
}

/**
 * rtrs_clt_get_permit() - take the right to send one request
 * @sess: the session
 * @con_type: RTRS_ADMIN_CON for the admin connection, else RTRS_IO_CON
 * @wait: RTRS_PERMIT_WAIT to sleep until one is free
 *
 * Return: the permit, or NULL when none is free and @wait is
 * RTRS_PERMIT_NOWAIT.
 */
struct rtrs_permit *rtrs_clt_get_permit(struct rtrs_clt_sess *sess,
					enum rtrs_clt_con_type con_type,
					enum rtrs_permit_wait wait)
{
	struct rtrs_permit *permit;

	permit = rtrs_clt_try_get_permit(sess, con_type);
	if (permit || wait == RTRS_PERMIT_NOWAIT)
		return permit;

	wait_event(sess->permits_wait,
		   (permit = rtrs_clt_try_get_permit(sess, con_type)));
	return permit;
}
EXPORT_SYMBOL_GPL(rtrs_clt_get_permit);

void rtrs_clt_put_permit(struct rtrs_clt_sess *sess,
			 struct rtrs_permit *permit)
{
	if (WARN_ON_ONCE(!test_bit(permit->mem_id, sess->permits_map)))
		return;
	clear_bit_unlock(permit->mem_id, sess->permits_map);
	/* wq_has_sleeper()'s barrier orders the clear before the check. */
	if (wq_has_sleeper(&sess->permits_wait))
		wake_up(&sess->permits_wait);
}
EXPORT_SYMBOL_GPL(rtrs_clt_put_permit);

void *rtrs_permit_to_pdu(struct rtrs_permit *permit)
{
	return permit + 1;
}
EXPORT_SYMBOL_GPL(rtrs_permit_to_pdu);

/**
 * rtrs_permit_set_poll_queue() - complete a permit's requests by polling
 * @permit: an RTRS_IO_CON permit, before its request is sent
 * @queue: the polled connection, below the session's nr_poll_queues
 *
 * The request then completes only in rtrs_clt_poll() of @queue.
 */
void rtrs_permit_set_poll_queue(struct rtrs_permit *permit,
				unsigned int queue)
{
	permit->poll_queue = queue;
}
EXPORT_SYMBOL_GPL(rtrs_permit_set_poll_queue);

static int rtrs_clt_alloc_permits(struct rtrs_clt_sess *sess, u32 depth)
{
	u32 i;

	sess->permit_size = ALIGN(sizeof(struct rtrs_permit) + sess->pdu_sz,
				  sizeof(u64));
	sess->permits = kcalloc(depth, sess->permit_size, GFP_KERNEL);
	if (!sess->permits)
		return -ENOMEM;
	sess->permits_map = bitmap_zalloc(depth, GFP_KERNEL);
	if (!sess->permits_map) {
		kfree(sess->permits);
		sess->permits = NULL;
		return -ENOMEM;
	}
	sess->queue_depth = depth;
	sess->io_depth = depth > RTRS_CLT_ADMIN_PERMITS ?
			 depth - RTRS_CLT_ADMIN_PERMITS : depth;
	for (i = 0; i < depth; i++)
		rtrs_clt_permit(sess, i)->mem_id = i;
	return 0;
}

static void rtrs_clt_free_permits(struct rtrs_clt_sess *sess)
{
	if (!sess->permits_map)
		return;
	/* The ULP puts its permits before it closes the session. */
	WARN_ON(!bitmap_empty(sess->permits_map, sess->queue_depth));
	bitmap_free(sess->permits_map);
	kfree(sess->permits);
}

/* Requests */

static void rtrs_clt_req_unmap(struct rtrs_clt_req *req)
{
	struct ib_device *ib_dev = req->path->s.dev->ib_dev;

	if (!req->dma_cnt)
		return;
	ib_dma_unmap_sg(ib_dev, req->sg, req->sg_cnt,
			req->dir == READ ? DMA_FROM_DEVICE : DMA_TO_DEVICE);
	req->dma_cnt = 0;
}

/*
 * The path's inflight counts min-inflight's requests as upstream's does;
 * a reset of the statistics zeroes it under requests in flight, which
 * must not take it below zero.
 */
static void rtrs_clt_req_uncount(struct rtrs_clt_req *req)
{
	if (req->counted)
		atomic_dec_if_positive(&req->path->inflight);
}

/* Hand @req back to the ULP; only the first caller for an IO does. */
static void rtrs_clt_req_complete(struct rtrs_clt_req *req, int errno)
{
	if (!atomic_xchg(&req->in_use, 0))
		return;
	rtrs_clt_req_unmap(req);
	rtrs_clt_req_uncount(req);
	if (errno)
		rtrs_path_err_rl(&req->path->s, "%s: request %u failed: %d\n",
				 req->path->name, req->permit->mem_id, errno);
	req->conf(req->priv, errno);
}

static void rtrs_clt_inv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rtrs_clt_req *req = container_of(wc->wr_cqe,
						struct rtrs_clt_req, inv_cqe);

	rtrs_wr_reaped(cq);
	/* On failure the path's close completes the request. */
	if (!rtrs_clt_wc_ok(req->path, wc, "local invalidation"))
		return;
	req->need_inv = false;
	rtrs_clt_req_complete(req, req->errno);
}

/*
 * On connection 0, not on the request's: Soft-RoCE fences a LOCAL_INV
 * behind every work request posted before it on its QP, which on the
 * request's connection are the requests sent since, each waiting for the
 * server's acknowledgment; under IO, 6.1's rxe reran its tasklets hundreds
 * of times a request.  Connection 0's send queue is all but idle.
 */
static void rtrs_clt_local_inv(struct rtrs_clt_req *req)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.wr_cqe = &req->inv_cqe,
		.send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = req->mr->rkey,
	};
	int err;

	err = rtrs_post_send(req->path->s.con[0], &wr);
	if (err) {
		rtrs_path_err_rl(&req->path->s, "%s: cannot invalidate: %d\n",
				 req->path->name, err);
		rtrs_clt_path_fail(req->path);
	}
}

/* Whether @req is a READ served through its bounce buffer. */
static bool rtrs_clt_req_bounced(const struct rtrs_clt_req *req)
{
	return req->dir == READ && req->data_len &&
	       req->data_len <= RTRS_CLT_BOUNCE_SIZE;
}

/* A READ answered: its data from the bounce buffer into the ULP's. */
static void rtrs_clt_copy_bounce(struct rtrs_clt_req *req)
{
	ib_dma_sync_single_for_cpu(req->path->s.dev->ib_dev,
				   req->bounce->dma_addr, req->data_len,
				   DMA_FROM_DEVICE);
	sg_copy_from_buffer(req->sg, req->sg_cnt, req->bounce->buf,
			    req->data_len);
}

static void rtrs_clt_io_rsp(struct rtrs_clt_path *path, u32 msg_id,
			    int errno, bool w_inv)
{
	struct rtrs_clt_req *req;

	if (msg_id >= path->queue_depth) {
		rtrs_path_err_rl(&path->s, "%s: response to unknown request %u\n",
				 path->name, msg_id);
		rtrs_clt_path_fail(path);
		return;
	}
	req = &path->reqs[msg_id];
	if (!atomic_read(&req->in_use)) {
		rtrs_path_err_rl(&path->s, "%s: response to idle request %u\n",
				 path->name, msg_id);
		return;
	}
	rtrs_clt_stats_completion(path->stats, req->permit->cpu);
	rtrs_clt_stats_latency(path->stats, req->dir,
			       ktime_get_ns() - req->start_ns);
	if (w_inv) {
		req->need_inv = false;
		/* A server that invalidated what it was not asked to. */
		if (rtrs_clt_req_bounced(req))
			req->bounce_reg = false;
	}
	if (rtrs_clt_req_bounced(req) && !errno)
		rtrs_clt_copy_bounce(req);
	if (req->need_inv) {
		req->errno = errno;
		rtrs_clt_local_inv(req);
		return;
	}
	rtrs_clt_req_complete(req, errno);
}

/* Receive side */

static void rtrs_clt_process_imm(struct rtrs_clt_path *path, u32 imm)
{
	u32 payload = rtrs_imm_payload(imm);
	enum rtrs_imm_type type = rtrs_imm_type(imm);

	switch (type) {
	case RTRS_IO_RSP_IMM:
	case RTRS_IO_RSP_W_INV_IMM:
		rtrs_clt_io_rsp(path, rtrs_io_rsp_msg_id(payload),
				rtrs_io_rsp_errno(payload),
				type == RTRS_IO_RSP_W_INV_IMM);
		break;
	case RTRS_HB_MSG_IMM:
		rtrs_hb_send_ack(&path->s);
		break;
	case RTRS_HB_ACK_IMM:
		rtrs_hb_ack_received(&path->s);
		break;
	default:
		rtrs_path_err_rl(&path->s, "%s: unknown immediate type %u\n",
				 path->name, type);
		break;
	}
}

/* A SEND_WITH_IMM: a chunk's new rkey, then the response of its IO. */
static bool rtrs_clt_process_rkey_rsp(struct rtrs_clt_path *path,
				      struct rtrs_iu *iu, struct ib_wc *wc)
{
	struct ib_device *ib_dev = path->s.dev->ib_dev;
	struct rtrs_msg_rkey_rsp *msg = iu->buf;
	u32 imm = be32_to_cpu(wc->ex.imm_data);
	u32 buf_id;

	if (wc->byte_len < sizeof(*msg))
		goto out_malformed;
	ib_dma_sync_single_for_cpu(ib_dev, iu->dma_addr, iu->size,
				   DMA_FROM_DEVICE);
	buf_id = le16_to_cpu(msg->buf_id);
	if (le16_to_cpu(msg->type) != RTRS_MSG_RKEY_RSP ||
	    buf_id >= path->queue_depth ||
	    buf_id != rtrs_io_rsp_msg_id(rtrs_imm_payload(imm)))
		goto out_malformed;
	path->rbufs[buf_id].rkey = le32_to_cpu(msg->rkey);
	ib_dma_sync_single_for_device(ib_dev, iu->dma_addr, iu->size,
				      DMA_FROM_DEVICE);
	rtrs_clt_process_imm(path, imm);
	return true;

out_malformed:
	rtrs_path_err_rl(&path->s, "%s: malformed rkey response\n",
			 path->name);
	rtrs_clt_path_fail(path);
	return false;
}

static void rtrs_clt_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rtrs_con *c = cq->cq_context;
	struct rtrs_clt_path *path = to_clt_path(c->path);
	struct rtrs_iu *iu = container_of(wc->wr_cqe, struct rtrs_iu, cqe);

	rtrs_wr_reaped(cq);
	if (!rtrs_clt_wc_ok(path, wc, "receive"))
		return;
	rtrs_hb_heard(&path->s);
	if (wc->opcode == IB_WC_RECV_RDMA_WITH_IMM) {
		rtrs_clt_process_imm(path, be32_to_cpu(wc->ex.imm_data));
	} else if (wc->wc_flags & IB_WC_WITH_IMM) {
		if (!rtrs_clt_process_rkey_rsp(path, iu, wc))
			return;
	} else if (!(wc->wc_flags & IB_WC_WITH_INVALIDATE)) {
		/* A SEND_WITH_INV is followed by its response: not news. */
		rtrs_path_err_rl(&path->s, "%s: unexpected receive\n",
				 path->name);
		rtrs_clt_path_fail(path);
		return;
	}
	if (rtrs_iu_post_recv(c, iu))
		rtrs_clt_path_fail(path);
}

static void rtrs_clt_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	rtrs_wr_reaped(cq);
	rtrs_clt_wc_ok(rtrs_clt_cq_path(cq), wc, "send");
}

static void rtrs_clt_hb_done(struct ib_cq *cq, struct ib_wc *wc)
{
	rtrs_wr_reaped(cq);
	rtrs_clt_wc_ok(rtrs_clt_cq_path(cq), wc, "heartbeat");
}

static void rtrs_clt_hb_err(struct rtrs_path *s)
{
	rtrs_clt_path_fail(to_clt_path(s));
}

void rtrs_clt_free_rx(struct rtrs_clt_con *con)
{
	struct ib_device *ib_dev = con->c.path->dev->ib_dev;
	unsigned int i;

	for (i = 0; i < con->rx_num; i++)
		rtrs_iu_free(con->rx_ius[i], ib_dev);
	kfree(con->rx_ius);
	con->rx_ius = NULL;
	con->rx_num = 0;
}

static int rtrs_clt_alloc_rx(struct rtrs_clt_con *con, unsigned int num)
{
	struct ib_device *ib_dev = con->c.path->dev->ib_dev;
	unsigned int i;

	con->rx_ius = kcalloc(num, sizeof(*con->rx_ius), GFP_KERNEL);
	if (!con->rx_ius)
		return -ENOMEM;
	con->rx_num = num;
	for (i = 0; i < num; i++) {
		con->rx_ius[i] = rtrs_iu_alloc(ib_dev,
					       sizeof(struct rtrs_msg_rkey_rsp),
					       DMA_FROM_DEVICE, GFP_KERNEL,
					       rtrs_clt_recv_done);
		if (!con->rx_ius[i]) {
			rtrs_clt_free_rx(con);
			return -ENOMEM;
		}
	}
	return 0;
}

static int rtrs_clt_post_rx(struct rtrs_clt_con *con)
{
	unsigned int i;
	int err;

	for (i = 0; i < con->rx_num; i++) {
		err = rtrs_iu_post_recv(&con->c, con->rx_ius[i]);
		if (err)
			return err;
	}
	return 0;
}

static int rtrs_clt_setup_rx(struct rtrs_clt_path *path)
{
	unsigned int cid;
	int err;

	for (cid = 0; cid < path->s.con_num; cid++) {
		err = rtrs_clt_alloc_rx(to_clt_con(path->s.con[cid]),
					RTRS_CLT_RECV_PER_IO *
					rtrs_clt_con_depth(path, cid));
		if (err)
			return err;
	}
	/* cid 0's are posted once INFO_RSP, which they cannot hold, is in. */
	for (cid = 1; cid < path->s.con_num; cid++) {
		err = rtrs_clt_post_rx(to_clt_con(path->s.con[cid]));
		if (err)
			return err;
	}
	return 0;
}

/* Sending requests */

static u32 rtrs_clt_req_imm(struct rtrs_clt_req *req, u32 trailer_off)
{
	u32 mem_bits = RTRS_IMM_PAYLOAD_BITS -
		       order_base_2(req->path->sess->queue_depth);

	return rtrs_imm(RTRS_IO_REQ_IMM,
			(req->permit->mem_id << mem_bits) | trailer_off);
}

static int rtrs_clt_map_data(struct rtrs_clt_req *req, unsigned int max)
{
	struct ib_device *ib_dev = req->path->s.dev->ib_dev;

	if (!req->sg_cnt)
		return 0;
	req->dma_cnt = ib_dma_map_sg(ib_dev, req->sg, req->sg_cnt,
				     req->dir == READ ? DMA_FROM_DEVICE :
							DMA_TO_DEVICE);
	if (!req->dma_cnt)
		return -EIO;
	if (req->dma_cnt > max) {
		rtrs_clt_req_unmap(req);
		return -EMSGSIZE;
	}
	return 0;
}

/* Write the sg entries of @req into its chunk at @off, with @imm. */
static int rtrs_clt_post_rdma(struct rtrs_clt_req *req, unsigned int num_sge,
			      u32 off, size_t hdr_len, u32 imm,
			      struct ib_send_wr *head)
{
	struct rtrs_clt_path *path = req->path;
	struct rtrs_clt_rbuf *rbuf = &path->rbufs[req->permit->mem_id];
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe = &rtrs_clt_send_cqe,
			.sg_list = req->sge,
			.num_sge = num_sge,
			.opcode = IB_WR_RDMA_WRITE_WITH_IMM,
			.send_flags = rtrs_con_sig_flags(&req->con->c),
			.ex.imm_data = cpu_to_be32(imm),
		},
		.remote_addr = rbuf->addr + off,
		.rkey = rbuf->rkey,
	};

	ib_dma_sync_single_for_device(path->s.dev->ib_dev, req->iu->dma_addr,
				      hdr_len, DMA_TO_DEVICE);
	if (head)
		head->next = &wr.wr;
	return rtrs_post_send(&req->con->c, head ?: &wr.wr);
}

static void rtrs_clt_set_sge(struct ib_sge *sge, u64 addr, u32 len, u32 lkey)
{
	sge->addr = addr;
	sge->length = len;
	sge->lkey = lkey;
}

/* Data, user header and trailer in one write into the chunk. */
static int rtrs_clt_post_write(struct rtrs_clt_req *req)
{
	struct rtrs_clt_path *path = req->path;
	size_t usr_len = req->usr_len;
	struct rtrs_msg_rdma_write *msg = req->iu->buf + usr_len;
	u32 lkey = path->s.dev->pd->local_dma_lkey;
	size_t hdr_len = usr_len + sizeof(*msg);
	struct scatterlist *sg;
	int i, err;

	msg->type = cpu_to_le16(RTRS_MSG_WRITE);
	msg->usr_len = cpu_to_le16(usr_len);
	err = rtrs_clt_map_data(req, path->max_send_sge - 1);
	if (err)
		return err;
	for_each_sg(req->sg, sg, req->dma_cnt, i)
		rtrs_clt_set_sge(&req->sge[i], sg_dma_address(sg),
				 sg_dma_len(sg), lkey);
	rtrs_clt_set_sge(&req->sge[i], req->iu->dma_addr, hdr_len, lkey);
	return rtrs_clt_post_rdma(req, i + 1, 0, hdr_len,
				  rtrs_clt_req_imm(req, req->data_len + usr_len),
				  NULL);
}

/* The one buffer the server is to write a READ's data into. */
static void rtrs_clt_read_desc(struct rtrs_msg_rdma_read *msg, u64 addr,
			       u32 key, u32 len)
{
	msg->sg_cnt = cpu_to_le16(1);
	msg->desc[0].addr = cpu_to_le64(addr);
	msg->desc[0].key = cpu_to_le32(key);
	msg->desc[0].len = cpu_to_le32(len);
}

/* Register a READ's buffers for the server to write, describe them. */
static int rtrs_clt_reg_read(struct rtrs_clt_req *req,
			     struct rtrs_msg_rdma_read *msg,
			     struct ib_reg_wr *reg)
{
	int nr;

	nr = ib_map_mr_sg(req->mr, req->sg, req->dma_cnt, NULL, SZ_4K);
	if (nr != req->dma_cnt)
		return nr < 0 ? nr : -EINVAL;
	ib_update_fast_reg_key(req->mr, ib_inc_rkey(req->mr->rkey));
	/* Unsignaled: the write chained after it completes it. */
	rtrs_init_reg_wr(reg, req->mr, &rtrs_clt_send_cqe);
	if (!rtrs_clt_inv_locally(req->path, req->con->c.cid))
		msg->flags = cpu_to_le16(RTRS_MSG_NEED_INVAL_F);
	rtrs_clt_read_desc(msg, req->mr->iova, req->mr->rkey,
			   req->mr->length);
	return 0;
}

/*
 * Describe @req's bounce buffer for the server to write; its registration
 * with the first READ through it, else NULL.
 */
static struct ib_send_wr *rtrs_clt_bounce_read(struct rtrs_clt_req *req,
					       struct rtrs_msg_rdma_read *msg,
					       struct ib_reg_wr *reg)
{
	struct ib_mr *mr = req->bounce_mr;

	ib_dma_sync_single_for_device(req->path->s.dev->ib_dev,
				      req->bounce->dma_addr, req->data_len,
				      DMA_FROM_DEVICE);
	rtrs_clt_read_desc(msg, mr->iova, mr->rkey, req->data_len);
	if (req->bounce_reg)
		return NULL;
	rtrs_init_reg_wr(reg, mr, &rtrs_clt_send_cqe);
	return &reg->wr;
}

/* Register a READ's buffers, or take its bounce buffer; the first WR. */
static int rtrs_clt_read_buf(struct rtrs_clt_req *req,
			     struct rtrs_msg_rdma_read *msg,
			     struct ib_reg_wr *reg, struct ib_send_wr **head)
{
	int err;

	*head = NULL;
	if (rtrs_clt_req_bounced(req)) {
		*head = rtrs_clt_bounce_read(req, msg, reg);
		return 0;
	}
	err = rtrs_clt_map_data(req, req->path->max_pages_per_mr);
	if (err || !req->dma_cnt)
		return err;
	err = rtrs_clt_reg_read(req, msg, reg);
	if (err) {
		rtrs_clt_req_unmap(req);
		return err;
	}
	req->need_inv = true;
	*head = &reg->wr;
	return 0;
}

/* User header and trailer behind the data's room; the server writes. */
static int rtrs_clt_post_read(struct rtrs_clt_req *req)
{
	struct rtrs_clt_path *path = req->path;
	size_t data_len = req->data_len, usr_len = req->usr_len;
	struct rtrs_msg_rdma_read *msg = req->iu->buf + usr_len;
	size_t hdr_len = usr_len + sizeof(*msg);
	struct ib_send_wr *head;
	struct ib_reg_wr reg;
	int err;

	msg->type = cpu_to_le16(RTRS_MSG_READ);
	msg->usr_len = cpu_to_le16(usr_len);
	msg->sg_cnt = 0;
	msg->flags = 0;
	err = rtrs_clt_read_buf(req, msg, &reg, &head);
	if (err)
		return err;
	if (msg->sg_cnt)
		hdr_len += sizeof(msg->desc[0]);
	rtrs_clt_set_sge(&req->sge[0], req->iu->dma_addr, hdr_len,
			 path->s.dev->pd->local_dma_lkey);
	err = rtrs_clt_post_rdma(req, 1, data_len, hdr_len,
				 rtrs_clt_req_imm(req, data_len + usr_len),
				 head);
	if (err) {
		req->need_inv = false;
		rtrs_clt_req_unmap(req);
		return err;
	}
	if (rtrs_clt_req_bounced(req))
		req->bounce_reg = true;
	return 0;
}

static struct rtrs_clt_con *rtrs_clt_permit_con(struct rtrs_clt_path *path,
						struct rtrs_permit *permit)
{
	unsigned int first_poll = rtrs_clt_first_poll_cid(path);
	unsigned int cid;

	if (permit->con_type != RTRS_IO_CON)
		cid = 0;
	else if (permit->poll_queue >= 0)
		cid = first_poll + permit->poll_queue;
	else
		cid = permit->cpu % (first_poll - 1) + 1;
	return to_clt_con(path->s.con[cid]);
}

/*
 * Fill the request of @permit on @path from @io and post it.  @counted:
 * the request counts in the path's inflight, as min-inflight's do.
 */
static int rtrs_clt_post_req(struct rtrs_clt_path *path,
			     struct rtrs_permit *permit,
			     const struct rtrs_clt_io *io, bool counted)
{
	struct rtrs_clt_req *req = &path->reqs[permit->mem_id];
	size_t trailer;
	int err;

	trailer = io->dir == READ ? sizeof(struct rtrs_msg_rdma_read) +
				    sizeof(struct rtrs_sg_desc) :
				    sizeof(struct rtrs_msg_rdma_write);
	if (io->usr_len + trailer > path->max_hdr_size ||
	    io->len > path->max_io_size)
		return -EMSGSIZE;

	memcpy(req->iu->buf, io->usr, io->usr_len);
	req->con = rtrs_clt_permit_con(path, permit);
	req->permit = permit;
	req->sg = io->sg;
	req->sg_cnt = io->sg_cnt;
	req->dir = io->dir;
	req->usr_len = io->usr_len;
	req->data_len = io->len;
	req->conf = io->conf;
	req->priv = io->priv;
	req->need_inv = false;
	req->counted = counted;
	req->start_ns = ktime_get_ns();
	if (counted)
		atomic_inc(&path->inflight);
	atomic_set(&req->in_use, 1);

	err = io->dir == READ ? rtrs_clt_post_read(req) :
				rtrs_clt_post_write(req);
	if (err) {
		atomic_set(&req->in_use, 0);
		rtrs_clt_req_uncount(req);
		return err;
	}
	rtrs_clt_stats_rdma(path->stats, io->dir, io->usr_len + io->len,
			    io->sg_cnt);
	return 0;
}

/*
 * A path requests can be posted on: a hint read without a lock, which
 * percpu_ref_tryget_live() of the path picked confirms.
 */
static bool rtrs_clt_path_live(struct rtrs_clt_path *path)
{
	return !percpu_ref_is_dying(&path->io_ref);
}

/* What the min-* policies minimise. */
static s64 rtrs_clt_path_load(struct rtrs_clt_path *path, int policy)
{
	if (policy == RTRS_CLT_MP_MIN_LATENCY)
		return ktime_to_ns(READ_ONCE(path->s.hb_cur_latency));
	return atomic_read(&path->inflight);
}

static struct rtrs_clt_path *rtrs_clt_least_loaded(struct rtrs_clt_sess *sess,
						   int policy)
{
	struct rtrs_clt_path *path, *best = NULL;
	s64 load, best_load = S64_MAX;

	list_for_each_entry_rcu(path, &sess->paths, entry) {
		if (!rtrs_clt_path_live(path))
			continue;
		load = rtrs_clt_path_load(path, policy);
		if (!best || load < best_load) {
			best = path;
			best_load = load;
		}
	}
	return best;
}

/*
 * Each CPU takes the paths in turn with a cursor of its own: no cache
 * line shared by all the CPUs' IO.  A turn that falls on a path that is
 * down goes to the next live one.
 */
static struct rtrs_clt_path *rtrs_clt_round_robin(struct rtrs_clt_sess *sess)
{
	unsigned int n = READ_ONCE(sess->nr_paths), turn, i = 0;
	struct rtrs_clt_path *path, *first = NULL;

	if (!n)
		return NULL;
	turn = this_cpu_inc_return(*sess->rr_turn) % n;
	list_for_each_entry_rcu(path, &sess->paths, entry) {
		if (i++ < turn) {
			if (!first && rtrs_clt_path_live(path))
				first = path;
			continue;
		}
		if (rtrs_clt_path_live(path))
			return path;
	}
	return first;
}

/*
 * The path for the next request by @policy, its io_ref taken; NULL when
 * none is up.  A path seen live may die before its io_ref is taken: the
 * next pick no longer sees it live.
 */
static struct rtrs_clt_path *rtrs_clt_pick_path(struct rtrs_clt_sess *sess,
						int policy)
{
	struct rtrs_clt_path *path;
	int tries;

	rcu_read_lock();
	for (tries = 0; tries <= RTRS_MAX_PATHS; tries++) {
		if (policy == RTRS_CLT_MP_ROUND_ROBIN)
			path = rtrs_clt_round_robin(sess);
		else
			path = rtrs_clt_least_loaded(sess, policy);
		if (!path || percpu_ref_tryget_live(&path->io_ref))
			goto out;
	}
	path = NULL;
out:
	rcu_read_unlock();
	return path;
}

/*
 * Post a request on the path the policy picks.  @from: the failed path it
 * comes back from, for its fail-over's accounting, else NULL.
 */
static int rtrs_clt_send(struct rtrs_clt_sess *sess,
			 struct rtrs_clt_path *from, struct rtrs_permit *permit,
			 const struct rtrs_clt_io *io)
{
	int policy = READ_ONCE(sess->mp_policy);
	struct rtrs_clt_path *path;
	int err;

	path = rtrs_clt_pick_path(sess, policy);
	if (!path) {
		if (from)
			trace_rtrs_clt_failover(from, NULL, 1);
		return -ECONNABORTED;
	}
	err = rtrs_clt_post_req(path, permit, io,
				policy == RTRS_CLT_MP_MIN_INFLIGHT);
	if (!err && from) {
		rtrs_clt_stats_failover(path->stats);
		trace_rtrs_clt_failover(from, path, 1);
	}
	percpu_ref_put(&path->io_ref);
	return err;
}

/**
 * rtrs_clt_request() - send a request of the ULP
 * @sess: the session
 * @permit: the request's permit
 * @io: the request
 *
 * A request whose path fails before the server answered is sent again on
 * another path; it fails with -ECONNABORTED when no path is left.
 *
 * Return: 0 when sent, else a negative errno and @io->conf is not called:
 * -ECONNABORTED when no path of @sess is connected, -EMSGSIZE when @io is
 * larger than the session carries.
 */
int rtrs_clt_request(struct rtrs_clt_sess *sess, struct rtrs_permit *permit,
		     const struct rtrs_clt_io *io)
{
	return rtrs_clt_send(sess, NULL, permit, io);
}
EXPORT_SYMBOL_GPL(rtrs_clt_request);

/* Reap polled connection @queue of @path, if it is connected. */
static int rtrs_clt_poll_path(struct rtrs_clt_path *path, unsigned int queue)
{
	unsigned int cid = rtrs_clt_first_poll_cid(path) + queue;
	int cnt;

	/* Its connections stay until the last reference goes. */
	if (!percpu_ref_tryget_live(&path->io_ref))
		return 0;
	cnt = ib_process_cq_direct(path->s.con[cid]->cq, -1);
	if (cnt > 0) {
		struct rtrs_wc_stats *s = &get_cpu_ptr(path->s.wr_stats)->wc;

		s->polls++;
		s->reaped += cnt;
		s->max = max_t(u32, s->max, cnt);
		put_cpu_ptr(path->s.wr_stats);
	}
	percpu_ref_put(&path->io_ref);
	return cnt;
}

/**
 * rtrs_clt_poll() - reap the completions of a polled connection
 * @sess: the session
 * @queue: the polled connection, below the session's nr_poll_queues
 *
 * Processes what completed on @queue of every connected path: the
 * requests sent there complete in this call.
 *
 * Context: process or softirq, not under a lock a completion takes.
 * Return: the number of completions processed.
 */
int rtrs_clt_poll(struct rtrs_clt_sess *sess, unsigned int queue)
{
	struct rtrs_clt_path *path;
	int cnt = 0;

	if (WARN_ON_ONCE(queue >= sess->nr_poll_queues))
		return 0;
	rcu_read_lock();
	list_for_each_entry_rcu(path, &sess->paths, entry)
		cnt += rtrs_clt_poll_path(path, queue);
	rcu_read_unlock();
	return cnt;
}
EXPORT_SYMBOL_GPL(rtrs_clt_poll);

/* @req is in flight for the ULP's request @priv. */
static bool rtrs_clt_req_is(struct rtrs_clt_req *req, void *priv)
{
	return atomic_read(&req->in_use) && READ_ONCE(req->priv) == priv;
}

/*
 * The request of @permit on @path, if it is @priv's and in flight there:
 * reap its polled connection first, where the answer may wait, then close
 * the path if the request has waited there for @timeout.  Called with
 * @path's io_ref held.
 */
static bool rtrs_clt_path_overdue(struct rtrs_clt_path *path,
				  struct rtrs_permit *permit, void *priv,
				  unsigned long timeout)
{
	struct rtrs_clt_req *req = &path->reqs[permit->mem_id];

	if (!rtrs_clt_req_is(req, priv))
		return false;
	if (permit->poll_queue >= 0)
		rtrs_clt_poll_path(path, permit->poll_queue);
	if (!rtrs_clt_req_is(req, priv))
		return false;
	/*
	 * A request that came here from a failed path gets its full time on
	 * this one; one line per path: its other requests time out together.
	 */
	if (ktime_get_ns() - READ_ONCE(req->start_ns) <
	    jiffies_to_nsecs(timeout) ||
	    rtrs_clt_path_state(path) != RTRS_CLT_CONNECTED)
		return true;
	rtrs_path_err(&path->s, "%s: request %u unanswered for %u s, closing the path\n",
		      path->name, permit->mem_id, jiffies_to_msecs(timeout) / 1000);
	rtrs_clt_path_fail(path);
	return true;
}

/**
 * rtrs_clt_overdue() - the ULP waited too long for a request
 * @sess: the session
 * @permit: the request's permit
 * @priv: the request's &rtrs_clt_io.priv: by the time the ULP calls, the
 *	  permit may have gone to another request
 * @timeout: how long the request may wait on one path, in jiffies
 *
 * A request the server or the device lost (rxe can stop a queue pair for
 * good without an error) is answered by nothing else: its path is closed
 * once the request has waited there for @timeout, which sends the
 * request again on another path, or fails it with -ECONNABORTED when none
 * is left.  An answer waiting in a polled connection that nobody polls is
 * reaped instead.  The ULP calls again later for a request that is not
 * answered yet.
 *
 * Context: process, such as blk-mq's timeout handler.
 */
void rtrs_clt_overdue(struct rtrs_clt_sess *sess, struct rtrs_permit *permit,
		      void *priv, unsigned long timeout)
{
	struct rtrs_clt_path *path;
	bool found = false;

	rcu_read_lock();
	list_for_each_entry_rcu(path, &sess->paths, entry) {
		/* A path going down fails its requests over anyway. */
		if (!percpu_ref_tryget_live(&path->io_ref))
			continue;
		found = rtrs_clt_path_overdue(path, permit, priv, timeout);
		percpu_ref_put(&path->io_ref);
		if (found)
			break;
	}
	rcu_read_unlock();
}
EXPORT_SYMBOL_GPL(rtrs_clt_overdue);

int rtrs_clt_query(struct rtrs_clt_sess *sess, struct rtrs_attrs *attr)
{
	mutex_lock(&sess->paths_mutex);
	attr->queue_depth = sess->io_depth;
	attr->max_io_size = sess->max_io_size;
	attr->max_segments = sess->max_segments;
	mutex_unlock(&sess->paths_mutex);
	return 0;
}
EXPORT_SYMBOL_GPL(rtrs_clt_query);

/* The requests of a path, one per permit */

static void rtrs_clt_dereg_mrs(struct rtrs_clt_path *path)
{
	struct rtrs_clt_req *req;
	u32 i;

	for (i = 0; path->reqs && i < path->queue_depth; i++) {
		req = &path->reqs[i];
		if (req->mr)
			ib_dereg_mr(req->mr);
		req->mr = NULL;
		if (req->bounce_mr)
			ib_dereg_mr(req->bounce_mr);
		req->bounce_mr = NULL;
	}
}

static void rtrs_clt_free_reqs(struct rtrs_clt_path *path)
{
	u32 i;

	if (!path->reqs)
		return;
	rtrs_clt_dereg_mrs(path);
	for (i = 0; i < path->queue_depth; i++) {
		rtrs_iu_free(path->reqs[i].iu, path->s.dev->ib_dev);
		rtrs_iu_free(path->reqs[i].bounce, path->s.dev->ib_dev);
		kfree(path->reqs[i].sge);
	}
	kfree(path->reqs);
	path->reqs = NULL;
}

/* The bounce buffer of @req, mapped into @req->bounce_mr, not registered. */
static int rtrs_clt_init_bounce(struct rtrs_clt_req *req)
{
	struct rtrs_ib_dev *dev = req->path->s.dev;
	struct scatterlist sg;

	req->bounce = rtrs_iu_alloc(dev->ib_dev, RTRS_CLT_BOUNCE_SIZE,
				    DMA_FROM_DEVICE, GFP_KERNEL, NULL);
	if (!req->bounce)
		return -ENOMEM;
	req->bounce_mr = ib_alloc_mr(dev->pd, IB_MR_TYPE_MEM_REG, 1);
	if (IS_ERR(req->bounce_mr)) {
		int err = PTR_ERR(req->bounce_mr);

		req->bounce_mr = NULL;
		return err;
	}
	sg_init_one(&sg, req->bounce->buf, RTRS_CLT_BOUNCE_SIZE);
	sg_dma_address(&sg) = req->bounce->dma_addr;
	sg_dma_len(&sg) = RTRS_CLT_BOUNCE_SIZE;
	if (ib_map_mr_sg(req->bounce_mr, &sg, 1, NULL,
			 RTRS_CLT_BOUNCE_SIZE) != 1)
		return -EINVAL;
	return 0;
}

static int rtrs_clt_init_req(struct rtrs_clt_path *path,
			     struct rtrs_clt_req *req)
{
	struct rtrs_ib_dev *dev = path->s.dev;
	int err;

	req->path = path;
	req->inv_cqe.done = rtrs_clt_inv_done;
	req->iu = rtrs_iu_alloc(dev->ib_dev, path->max_hdr_size,
				DMA_TO_DEVICE, GFP_KERNEL, rtrs_clt_send_done);
	if (!req->iu)
		return -ENOMEM;
	req->sge = kcalloc(path->max_send_sge, sizeof(*req->sge), GFP_KERNEL);
	if (!req->sge)
		return -ENOMEM;
	req->mr = ib_alloc_mr(dev->pd, IB_MR_TYPE_MEM_REG,
			      path->max_pages_per_mr);
	if (IS_ERR(req->mr)) {
		err = PTR_ERR(req->mr);
		req->mr = NULL;
		return err;
	}
	return rtrs_clt_init_bounce(req);
}

static int rtrs_clt_alloc_reqs(struct rtrs_clt_path *path)
{
	u32 i;
	int err;

	path->reqs = kcalloc(path->queue_depth, sizeof(*path->reqs),
			     GFP_KERNEL);
	if (!path->reqs)
		return -ENOMEM;
	for (i = 0; i < path->queue_depth; i++) {
		err = rtrs_clt_init_req(path, &path->reqs[i]);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Send @req, taken off its failed path, on another path of the session,
 * else give it back to its user with the error: the ULP decides whether to
 * wait for a path.  The server can no longer write to what it registered.
 */
static int rtrs_clt_failover_req(struct rtrs_clt_req *req)
{
	struct rtrs_clt_io io = {
		.dir = req->dir,
		.conf = req->conf,
		.priv = req->priv,
		.usr = req->iu->buf,
		.usr_len = req->usr_len,
		.sg = req->sg,
		.sg_cnt = req->sg_cnt,
		.len = req->data_len,
	};
	int err;

	err = rtrs_clt_send(req->path->sess, req->path, req->permit, &io);
	if (err)
		req->conf(req->priv, err);
	return err;
}

/* After the queue pairs are gone: what the server never answered. */
static void rtrs_clt_failover_reqs(struct rtrs_clt_path *path)
{
	struct rtrs_clt_req *req;
	unsigned int moved = 0, failed = 0;
	u32 i;

	for (i = 0; path->reqs && i < path->queue_depth; i++) {
		req = &path->reqs[i];
		if (!atomic_xchg(&req->in_use, 0))
			continue;
		rtrs_clt_req_unmap(req);
		rtrs_clt_req_uncount(req);
		if (rtrs_clt_failover_req(req)) {
			failed++;
			continue;
		}
		moved++;
	}
	if (moved)
		rtrs_path_info(&path->s, "%s: %u requests in flight failed over\n",
			       path->name, moved);
	/* One line, not one per request: losing the last path is no bug. */
	if (failed)
		rtrs_path_info(&path->s, "%s: %u requests in flight had no path left\n",
			       path->name, failed);
}

/* Path teardown, for a failed setup as for a closed path */

static void rtrs_clt_path_teardown(struct rtrs_clt_path *path)
{
	if (!percpu_ref_is_dying(&path->io_ref)) {
		percpu_ref_kill(&path->io_ref);
		wait_for_completion(&path->io_ref_done);
	}
	rtrs_hb_stop(&path->s);
	rtrs_path_disconnect(&path->s);
	rtrs_clt_drain_cons(path);
	rtrs_clt_destroy_qps(path);
	/* The server can no longer write to what the requests registered. */
	rtrs_clt_dereg_mrs(path);
	rtrs_clt_failover_reqs(path);
	rtrs_clt_destroy_cons(path);
	rtrs_clt_free_reqs(path);
	kfree(path->rbufs);
	path->rbufs = NULL;
	if (path->s.dev) {
		rtrs_ib_dev_put(path->s.dev);
		path->s.dev = NULL;
	}
	/* A path stopped meanwhile is STOPPED by whoever stops it. */
	if (!rtrs_clt_change_state(path, RTRS_CLT_STOPPED, NULL))
		rtrs_clt_change_state(path, RTRS_CLT_CLOSED, NULL);
}

static bool rtrs_clt_sess_connected(struct rtrs_clt_sess *sess)
{
	struct rtrs_clt_path *path;
	bool connected = false;

	mutex_lock(&sess->paths_mutex);
	list_for_each_entry(path, &sess->paths, entry)
		connected |= rtrs_clt_path_state(path) == RTRS_CLT_CONNECTED;
	mutex_unlock(&sess->paths_mutex);
	return connected;
}

/* Tell the ULP when the session lost its last path, or got one back. */
static void rtrs_clt_link_work(struct work_struct *work)
{
	struct rtrs_clt_sess *sess = container_of(work, struct rtrs_clt_sess,
						  link_work);
	bool up = rtrs_clt_sess_connected(sess);

	/* rtrs_clt_open() queues this work again when it is done. */
	if (rtrs_clt_sess_state(sess) == RTRS_CLT_SESS_OPENING ||
	    !rtrs_clt_sess_change_state(sess, up ? RTRS_CLT_SESS_UP :
						   RTRS_CLT_SESS_DOWN))
		return;
	if (up)
		rtrs_clt_info(sess, "a path is connected again\n");
	else
		rtrs_clt_err(sess, "no path is connected\n");
	if (sess->ops.link_ev)
		sess->ops.link_ev(sess->ops.priv,
				  up ? RTRS_CLT_LINK_EV_RECONNECTED :
				       RTRS_CLT_LINK_EV_DISCONNECTED);
	/*
	 * A request the ULP checked against its record of the loss in an
	 * RCU read section is sent before a path is back (rtrs.h): the
	 * reconnect work waits for this work.
	 */
	if (!up)
		synchronize_rcu();
}

/*
 * The link work, on the workqueue that lets a reconnect work wait for it:
 * every caller queues it here, none on rtrs_clt_wq.
 */
static void rtrs_clt_queue_link_work(struct rtrs_clt_sess *sess)
{
	queue_work(rtrs_clt_link_wq, &sess->link_work);
}

/* Queue the next reconnect of a CLOSED path, unless its session closes. */
static void rtrs_clt_schedule_reconnect(struct rtrs_clt_path *path)
{
	struct rtrs_clt_sess *sess = path->sess;
	int max = READ_ONCE(sess->max_reconnect_attempts);
	unsigned int delay;

	lockdep_assert_held(&path->setup_mutex);
	if (rtrs_clt_path_state(path) != RTRS_CLT_CLOSED ||
	    rtrs_clt_sess_state(sess) == RTRS_CLT_SESS_CLOSING)
		return;
	if (max != RTRS_CLT_RECONNECT_FOREVER &&
	    path->reconnect_attempts >= max) {
		rtrs_path_err(&path->s, "%s: %d reconnect attempts failed, the path stays down\n",
			      path->name, path->reconnect_attempts);
		return;
	}
	/* Jitter: the paths of many clients do not come back all at once. */
	delay = sess->reconnect_delay_ms +
		get_random_u32_below(sess->reconnect_delay_ms / 2 + 1);
	rtrs_path_info(&path->s, "%s: reconnecting in %u ms\n", path->name,
		       delay);
	trace_rtrs_clt_reconnect(path, path->reconnect_attempts + 1, delay);
	queue_delayed_work(rtrs_clt_wq, &path->reconnect_dwork,
			   msecs_to_jiffies(delay));
}

static void rtrs_clt_close_work(struct work_struct *work)
{
	struct rtrs_clt_path *path = container_of(work, struct rtrs_clt_path,
						  close_work);

	mutex_lock(&path->setup_mutex);
	rtrs_path_info(&path->s, "%s: closing the path\n", path->name);
	trace_rtrs_clt_path_closed(path,
				   rtrs_clt_path_state(path) == RTRS_CLT_STOPPING ?
				   "closed" : "failed");
	trace_rtrs_clt_close_conns(path);
	rtrs_clt_path_teardown(path);
	rtrs_clt_schedule_reconnect(path);
	mutex_unlock(&path->setup_mutex);
	rtrs_clt_queue_link_work(path->sess);
}

/* INFO_REQ and INFO_RSP: the server's chunks */

static void rtrs_clt_info_req_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rtrs_clt_path *path = rtrs_clt_cq_path(cq);
	struct rtrs_iu *iu = container_of(wc->wr_cqe, struct rtrs_iu, cqe);

	rtrs_wr_reaped(cq);
	rtrs_iu_free(iu, path->s.dev->ib_dev);
	rtrs_clt_wc_ok(path, wc, "INFO_REQ");
}

/* Split the server's descriptors into chunks, one per permit. */
static int rtrs_clt_take_chunks(struct rtrs_clt_path *path,
				const struct rtrs_msg_info_rsp *msg)
{
	u32 sg_cnt = le16_to_cpu(msg->sg_cnt), i, n = 0;
	u32 len;
	u64 addr;

	if (order_base_2(path->queue_depth) + order_base_2(path->chunk_size) >
	    RTRS_IMM_PAYLOAD_BITS)
		return -EINVAL;
	for (i = 0; i < sg_cnt; i++) {
		addr = le64_to_cpu(msg->desc[i].addr);
		len = le32_to_cpu(msg->desc[i].len);
		if (!len || len % path->chunk_size)
			return -EINVAL;
		for (; len && n < path->queue_depth; n++) {
			path->rbufs[n].addr = addr;
			path->rbufs[n].rkey = le32_to_cpu(msg->desc[i].key);
			addr += path->chunk_size;
			len -= path->chunk_size;
		}
		if (len)
			return -EINVAL;
	}
	return n == path->queue_depth ? 0 : -EINVAL;
}

static int rtrs_clt_process_info_rsp(struct rtrs_clt_path *path,
				     struct rtrs_iu *iu, u32 byte_len)
{
	const struct rtrs_msg_info_rsp *msg = iu->buf;

	ib_dma_sync_single_for_cpu(path->s.dev->ib_dev, iu->dma_addr,
				   iu->size, DMA_FROM_DEVICE);
	if (byte_len < sizeof(*msg) ||
	    le16_to_cpu(msg->type) != RTRS_MSG_INFO_RSP ||
	    byte_len < struct_size(msg, desc, le16_to_cpu(msg->sg_cnt))) {
		rtrs_path_err(&path->s, "%s: malformed INFO_RSP\n",
			      path->name);
		return -EINVAL;
	}
	return rtrs_clt_take_chunks(path, msg);
}

static void rtrs_clt_info_rsp_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rtrs_clt_path *path = rtrs_clt_cq_path(cq);
	struct rtrs_iu *iu = container_of(wc->wr_cqe, struct rtrs_iu, cqe);

	rtrs_wr_reaped(cq);
	if (wc->status != IB_WC_SUCCESS)
		path->info_err = -ECONNRESET;
	else
		path->info_err = rtrs_clt_process_info_rsp(path, iu,
							   wc->byte_len);
	rtrs_iu_free(iu, path->s.dev->ib_dev);
	complete(&path->info_done);
}

static int rtrs_clt_post_info_req(struct rtrs_clt_path *path)
{
	struct rtrs_con *c = path->s.con[0];
	struct ib_device *ib_dev = path->s.dev->ib_dev;
	struct rtrs_msg_info_req *msg;
	struct rtrs_iu *tx, *rx;
	int err;

	rx = rtrs_iu_alloc(ib_dev, struct_size((struct rtrs_msg_info_rsp *)NULL,
					       desc, path->queue_depth),
			   DMA_FROM_DEVICE, GFP_KERNEL, rtrs_clt_info_rsp_done);
	if (!rx)
		return -ENOMEM;
	err = rtrs_iu_post_recv(c, rx);
	if (err) {
		rtrs_iu_free(rx, ib_dev);
		return err;
	}
	/* From here the completions of rx and tx free them. */
	tx = rtrs_iu_alloc(ib_dev, sizeof(*msg), DMA_TO_DEVICE, GFP_KERNEL,
			   rtrs_clt_info_req_done);
	if (!tx)
		return -ENOMEM;
	msg = tx->buf;
	msg->type = cpu_to_le16(RTRS_MSG_INFO_REQ);
	/* Linux's server names the path by this and refuses '/' and '.'. */
	strscpy(msg->pathname, path->sess->sessname, sizeof(msg->pathname));
	err = rtrs_iu_post_send(c, tx, sizeof(*msg), NULL);
	if (err)
		rtrs_iu_free(tx, ib_dev);
	return err;
}

static int rtrs_clt_info_exchange(struct rtrs_clt_path *path)
{
	unsigned long timeout = msecs_to_jiffies(RTRS_CLT_CONNECT_TIMEOUT_MS);
	int err;

	path->rbufs = kcalloc(path->queue_depth, sizeof(*path->rbufs),
			      GFP_KERNEL);
	if (!path->rbufs)
		return -ENOMEM;
	err = rtrs_clt_post_info_req(path);
	if (err)
		return err;
	if (!wait_for_completion_timeout(&path->info_done, timeout))
		return -ETIMEDOUT;
	err = rtrs_clt_setup_err(path) ?: path->info_err;
	if (err)
		return err;
	return rtrs_clt_post_rx(to_clt_con(path->s.con[0]));
}

/* Path setup */

static void rtrs_clt_make_name(struct rtrs_clt_path *path)
{
	char src[64], dst[64];

	if (rtrs_sockaddr_to_str((struct sockaddr *)&path->s.src_addr, src,
				 sizeof(src)) < 0)
		strscpy(src, "unknown", sizeof(src));
	if (rtrs_sockaddr_to_str((struct sockaddr *)&path->s.dst_addr, dst,
				 sizeof(dst)) < 0)
		strscpy(dst, "unknown", sizeof(dst));
	snprintf(path->name, sizeof(path->name), "%s@%s", src, dst);
}

/*
 * The session's permits come with its first path; the others agree.  Its
 * limits are the lowest of the paths it opened with: a path that comes
 * later must carry what the ULP was told.
 */
static int rtrs_clt_join_sess(struct rtrs_clt_path *path)
{
	struct rtrs_clt_sess *sess = path->sess;
	/* A buffer not page aligned takes one page more. */
	u32 segs = min(path->max_pages_per_mr, path->max_send_sge) - 1;
	u32 io_size = min(path->max_io_size, segs * SZ_4K);
	int err = 0;

	mutex_lock(&sess->paths_mutex);
	if (!sess->permits) {
		err = rtrs_clt_alloc_permits(sess, path->queue_depth);
	} else if (sess->queue_depth != path->queue_depth) {
		rtrs_path_err(&path->s, "%s: queue depth %u, the session's is %u\n",
			      path->name, path->queue_depth,
			      sess->queue_depth);
		err = -EINVAL;
	} else if (rtrs_clt_sess_state(sess) != RTRS_CLT_SESS_OPENING &&
		   (io_size < sess->max_io_size ||
		    segs < sess->max_segments)) {
		rtrs_path_err(&path->s, "%s: IO of %u bytes in %u segments, the session's are %u in %u\n",
			      path->name, io_size, segs, sess->max_io_size,
			      sess->max_segments);
		err = -EINVAL;
	}
	if (!err) {
		sess->max_segments = min(sess->max_segments, segs);
		sess->max_io_size = min(sess->max_io_size, io_size);
	}
	mutex_unlock(&sess->paths_mutex);
	return err;
}

static int rtrs_clt_path_setup(struct rtrs_clt_path *path)
{
	unsigned int cid;
	int err;

	for (cid = 0; cid < path->s.con_num; cid++) {
		err = rtrs_clt_con_open(path, cid);
		if (err)
			return err;
	}
	err = rtrs_clt_setup_err(path);
	if (err)
		return err;
	/* A reconnecting path keeps the name of its sysfs directory. */
	if (!path->kobj.state_in_sysfs)
		rtrs_clt_make_name(path);
	err = rtrs_clt_alloc_reqs(path);
	if (err)
		return err;
	err = rtrs_clt_setup_rx(path);
	if (err)
		return err;
	err = rtrs_clt_info_exchange(path);
	if (err)
		return err;
	return rtrs_clt_join_sess(path);
}

static int rtrs_clt_path_open(struct rtrs_clt_path *path)
{
	int err;

	err = rtrs_clt_path_setup(path);
	if (err)
		goto out_teardown;
	if (!path->kobj.state_in_sysfs) {
		err = rtrs_clt_sysfs_add_path(path);
		if (err)
			goto out_teardown;
	}
	reinit_completion(&path->io_ref_done);
	percpu_ref_resurrect(&path->io_ref);
	if (!rtrs_clt_change_state(path, RTRS_CLT_CONNECTED, NULL)) {
		err = -ECONNRESET;
		goto out_teardown;
	}
	rtrs_hb_start(&path->s);
	rtrs_path_info(&path->s, "%s: connected (%s:%u, queue depth %u)\n",
		       path->name, path->hca_name, path->hca_port,
		       path->queue_depth);
	trace_rtrs_clt_path_connected(path);
	return 0;

out_teardown:
	rtrs_path_err(&path->s, "cannot connect path %s: %d\n", path->name,
		      err);
	trace_rtrs_clt_path_connect_failed(path, err);
	rtrs_clt_path_teardown(path);
	return err;
}

/*
 * Connect a CLOSED or STOPPED path again, as a new incarnation for the
 * server.
 */
static int rtrs_clt_path_reopen(struct rtrs_clt_path *path)
{
	lockdep_assert_held(&path->setup_mutex);
	if (!rtrs_clt_change_state(path, RTRS_CLT_CONNECTING, NULL))
		return -EALREADY;
	path->recon_cnt++;
	return rtrs_clt_path_open(path);
}

static int rtrs_clt_reconnect_once(struct rtrs_clt_path *path)
{
	int err;

	err = rtrs_clt_path_reopen(path);
	if (err == -EALREADY)
		return err;
	rtrs_clt_stats_reconnect(path->stats, !err);
	trace_rtrs_clt_reconnect_done(path, err);
	return err;
}

/* Tell rtrs_clt_first_connect() how the first connect of @path ended. */
static void rtrs_clt_add_done(struct rtrs_clt_path *path, int err)
{
	path->add_tries = 0;
	WRITE_ONCE(path->add_err, err);
	wake_up(&path->setup_wq);
}

/* The first connect of an added path again, after an EAGAIN. */
static int rtrs_clt_retry_add(struct rtrs_clt_path *path)
{
	int err = rtrs_clt_path_reopen(path);

	if (err == -EAGAIN && --path->add_tries)
		queue_delayed_work(rtrs_clt_wq, &path->reconnect_dwork,
				   msecs_to_jiffies(RTRS_CLT_ADD_PATH_RETRY_MS));
	else
		rtrs_clt_add_done(path, err == -EALREADY ? -ECONNABORTED : err);
	return err;
}

static void rtrs_clt_reconnect_work(struct work_struct *work)
{
	struct rtrs_clt_path *path = container_of(to_delayed_work(work),
						  struct rtrs_clt_path,
						  reconnect_dwork);
	int err;

	/*
	 * The ULP hears that the session lost its last path before a path
	 * can be back: its server may have dropped the session meanwhile.
	 */
	flush_work(&path->sess->link_work);
	mutex_lock(&path->setup_mutex);
	/* A stop makes the path STOPPING before it cancels this work. */
	if (rtrs_clt_path_state(path) != RTRS_CLT_CLOSED) {
		mutex_unlock(&path->setup_mutex);
		return;
	}
	trace_rtrs_clt_reconnect_work(path);
	if (path->add_tries) {
		err = rtrs_clt_retry_add(path);
	} else {
		err = rtrs_clt_reconnect_once(path);
		if (!err) {
			path->reconnect_attempts = 0;
		} else if (err != -EALREADY) {
			path->reconnect_attempts++;
			rtrs_clt_schedule_reconnect(path);
		}
	}
	mutex_unlock(&path->setup_mutex);
	if (!err)
		rtrs_clt_queue_link_work(path->sess);
}

static void rtrs_clt_io_ref_release(struct percpu_ref *ref)
{
	struct rtrs_clt_path *path = container_of(ref, struct rtrs_clt_path,
						  io_ref);

	complete(&path->io_ref_done);
}

/* Freed by the release of its kobject. */
void rtrs_clt_free_path(struct rtrs_clt_path *path)
{
	mutex_destroy(&path->setup_mutex);
	percpu_ref_exit(&path->io_ref);
	rtrs_wr_stats_free(&path->s);
	rtrs_clt_stats_free(path->stats);
	kfree(path->s.con);
	kfree(path);
}

static struct rtrs_clt_path *rtrs_clt_alloc_path(struct rtrs_clt_sess *sess,
						 const struct rtrs_addr *addr)
{
	struct rtrs_clt_path *path;

	path = kzalloc(sizeof(*path), GFP_KERNEL);
	if (!path)
		return NULL;
	path->s.con_num = 1 + nr_cpu_ids + sess->nr_poll_queues;
	path->s.con = kcalloc(path->s.con_num, sizeof(*path->s.con),
			      GFP_KERNEL);
	if (!path->s.con)
		goto out_free_path;
	if (percpu_ref_init(&path->io_ref, rtrs_clt_io_ref_release,
			    PERCPU_REF_INIT_DEAD, GFP_KERNEL))
		goto out_free_con;
	path->stats = rtrs_clt_stats_alloc();
	if (!path->stats)
		goto out_exit_ref;
	if (rtrs_wr_stats_alloc(&path->s))
		goto out_free_stats;
	path->sess = sess;
	strscpy(path->s.sessname, sess->sessname, sizeof(path->s.sessname));
	memcpy(&path->s.src_addr, addr->src, sizeof(path->s.src_addr));
	memcpy(&path->s.dst_addr, addr->dst, sizeof(path->s.dst_addr));
	uuid_gen(&path->s.uuid);
	spin_lock_init(&path->state_lock);
	path->state = RTRS_CLT_CONNECTING;
	mutex_init(&path->setup_mutex);
	init_completion(&path->io_ref_done);
	init_completion(&path->info_done);
	init_waitqueue_head(&path->setup_wq);
	INIT_WORK(&path->close_work, rtrs_clt_close_work);
	INIT_DELAYED_WORK(&path->reconnect_dwork, rtrs_clt_reconnect_work);
	path->hb_cqe.done = rtrs_clt_hb_done;
	rtrs_hb_init(&path->s, &path->hb_cqe, rtrs_clt_hb_err, rtrs_clt_wq);
	rtrs_clt_make_name(path);
	rtrs_clt_sysfs_init_path(path);
	return path;

out_free_stats:
	rtrs_clt_stats_free(path->stats);
out_exit_ref:
	percpu_ref_exit(&path->io_ref);
out_free_con:
	kfree(path->s.con);
out_free_path:
	kfree(path);
	return NULL;
}

/* Sessions */

static void rtrs_clt_sess_release(struct device *dev)
{
	struct rtrs_clt_sess *sess = container_of(dev, struct rtrs_clt_sess,
						  dev);

	rtrs_clt_free_permits(sess);
	free_percpu(sess->rr_turn);
	mutex_destroy(&sess->paths_mutex);
	mutex_destroy(&sess->ctl_mutex);
	kfree(sess);
}

static struct rtrs_clt_sess *
rtrs_clt_alloc_sess(const struct rtrs_clt_ops *ops,
		    const struct rtrs_clt_open_args *args)
{
	struct rtrs_clt_sess *sess;

	sess = kzalloc(sizeof(*sess), GFP_KERNEL);
	if (!sess)
		return NULL;
	sess->rr_turn = alloc_percpu(unsigned int);
	if (!sess->rr_turn) {
		kfree(sess);
		return NULL;
	}
	strscpy(sess->sessname, args->sessname, sizeof(sess->sessname));
	uuid_gen(&sess->uuid);
	sess->ops = *ops;
	sess->port = args->port;
	sess->pdu_sz = args->pdu_sz;
	sess->nr_poll_queues = args->nr_poll_queues;
	sess->reconnect_delay_ms = (args->reconnect_delay_sec ?:
				    RTRS_CLT_RECONNECT_DELAY_SEC) * MSEC_PER_SEC;
	sess->max_reconnect_attempts = args->max_reconnect_attempts;
	sess->hb_interval_ms = RTRS_HB_INTERVAL_MS;
	sess->hb_missed_max = RTRS_HB_MISSED_MAX;
	sess->mp_policy = RTRS_CLT_MP_MIN_INFLIGHT;
	sess->max_io_size = U32_MAX;
	sess->max_segments = U32_MAX;
	mutex_init(&sess->ctl_mutex);
	spin_lock_init(&sess->state_lock);
	sess->state = RTRS_CLT_SESS_OPENING;
	INIT_WORK(&sess->link_work, rtrs_clt_link_work);
	mutex_init(&sess->paths_mutex);
	INIT_LIST_HEAD(&sess->paths);
	init_waitqueue_head(&sess->permits_wait);

	device_initialize(&sess->dev);
	sess->dev.class = &rtrs_clt_class;
	sess->dev.groups = rtrs_clt_sess_groups;
	sess->dev.release = rtrs_clt_sess_release;
	if (dev_set_name(&sess->dev, "%s", sess->sessname)) {
		put_device(&sess->dev);
		return NULL;
	}
	return sess;
}

static int rtrs_clt_check_args(const struct rtrs_clt_open_args *args)
{
	size_t len = strlen(args->sessname);

	if (!len || len >= NAME_MAX || strpbrk(args->sessname, "/.")) {
		pr_err("session name '%s' must be 1 to %d characters, no '/' or '.'\n",
		       args->sessname, NAME_MAX - 1);
		return -EINVAL;
	}
	if (!args->path_cnt || args->path_cnt > RTRS_MAX_PATHS) {
		pr_err("%s: %zu paths, 1 to %d allowed\n", args->sessname,
		       args->path_cnt, RTRS_MAX_PATHS);
		return -EINVAL;
	}
	if (args->max_reconnect_attempts < RTRS_CLT_RECONNECT_FOREVER ||
	    args->max_reconnect_attempts > RTRS_CLT_MAX_RECONNECT_ATTEMPTS) {
		pr_err("%s: max_reconnect_attempts %d, -1 to %d allowed\n",
		       args->sessname, args->max_reconnect_attempts,
		       RTRS_CLT_MAX_RECONNECT_ATTEMPTS);
		return -EINVAL;
	}
	if (args->nr_poll_queues > nr_cpu_ids) {
		pr_err("%s: %u polled queues, at most %u allowed\n",
		       args->sessname, args->nr_poll_queues, nr_cpu_ids);
		return -EINVAL;
	}
	return 0;
}

/* Take @path off the list readers pick from; its sysfs stays. */
static void rtrs_clt_unlist_path(struct rtrs_clt_path *path)
{
	struct rtrs_clt_sess *sess = path->sess;

	mutex_lock(&sess->paths_mutex);
	list_del_rcu(&path->entry);
	WRITE_ONCE(sess->nr_paths, sess->nr_paths - 1);
	mutex_unlock(&sess->paths_mutex);
	/* rtrs_clt_request() may still look at it. */
	synchronize_rcu();
	rtrs_clt_change_state(path, RTRS_CLT_DEAD, NULL);
}

/*
 * The heartbeat settings of @sess, for its paths and those to come; a 0
 * leaves that one as it is.
 */
void rtrs_clt_set_hb(struct rtrs_clt_sess *sess, unsigned int interval_ms,
		     unsigned int missed_max)
{
	struct rtrs_clt_path *path;

	mutex_lock(&sess->paths_mutex);
	/* Their sysfs files read them without the mutex. */
	if (interval_ms)
		WRITE_ONCE(sess->hb_interval_ms, interval_ms);
	if (missed_max)
		WRITE_ONCE(sess->hb_missed_max, missed_max);
	list_for_each_entry(path, &sess->paths, entry)
		rtrs_hb_set(&path->s, sess->hb_interval_ms,
			    sess->hb_missed_max);
	mutex_unlock(&sess->paths_mutex);
}

/* Take @path down and keep it down: STOPPED, no reconnect. */
static void rtrs_clt_stop_path(struct rtrs_clt_path *path)
{
	enum rtrs_clt_state from;

	/*
	 * Without setup_mutex, which a connect in progress holds: it gives up
	 * at once rather than wait for an unreachable server's timeouts.
	 */
	if (!rtrs_clt_change_state(path, RTRS_CLT_STOPPING, &from))
		return;
	if (from == RTRS_CLT_CONNECTING)
		rtrs_clt_setup_fail(path, -ECONNABORTED);
	else if (from == RTRS_CLT_CONNECTED)
		queue_work(rtrs_clt_wq, &path->close_work);
	/*
	 * What may connect the path still is its reconnect work: the other
	 * connects run under ctl_mutex, which our callers hold, or, in
	 * rtrs_clt_close(), held to make the session CLOSING.
	 */
	cancel_delayed_work_sync(&path->reconnect_dwork);
	flush_work(&path->close_work);
	if (path->add_tries)
		rtrs_clt_add_done(path, -ECONNABORTED);
	/* A CLOSED path was down already: nothing else makes it STOPPED. */
	rtrs_clt_change_state(path, RTRS_CLT_STOPPED, NULL);
}

/* The sysfs controls leave @path alone: it or its session is going. */
static bool rtrs_clt_path_going(struct rtrs_clt_path *path)
{
	lockdep_assert_held(&path->sess->ctl_mutex);
	return rtrs_clt_sess_state(path->sess) == RTRS_CLT_SESS_CLOSING ||
	       rtrs_clt_path_state(path) == RTRS_CLT_DEAD;
}

/*
 * The first connect of a new path.  While the server still closes an older
 * path between the same addresses (EAGAIN), the reconnect work tries
 * again, and this waits for it without ctl_mutex: the sysfs controls of
 * the session's other paths go on meanwhile.
 */
static int rtrs_clt_first_connect(struct rtrs_clt_path *path)
{
	struct rtrs_clt_sess *sess = path->sess;
	int err;

	mutex_lock(&path->setup_mutex);
	err = rtrs_clt_path_open(path);
	if (err == -EAGAIN) {
		path->add_err = -EINPROGRESS;
		path->add_tries = RTRS_CLT_ADD_PATH_TRIES - 1;
		queue_delayed_work(rtrs_clt_wq, &path->reconnect_dwork,
				   msecs_to_jiffies(RTRS_CLT_ADD_PATH_RETRY_MS));
	}
	mutex_unlock(&path->setup_mutex);
	if (err != -EAGAIN)
		return err;
	mutex_unlock(&sess->ctl_mutex);
	err = wait_event_killable(path->setup_wq,
				  READ_ONCE(path->add_err) != -EINPROGRESS);
	mutex_lock(&sess->ctl_mutex);
	return err ? -EINTR : READ_ONCE(path->add_err);
}

/* A new path; on failure it is gone again. */
static int rtrs_clt_add_path(struct rtrs_clt_sess *sess,
			     const struct rtrs_addr *addr)
{
	struct rtrs_clt_path *path;
	int err;

	lockdep_assert_held(&sess->ctl_mutex);
	path = rtrs_clt_alloc_path(sess, addr);
	if (!path)
		return -ENOMEM;
	mutex_lock(&sess->paths_mutex);
	rtrs_hb_set(&path->s, sess->hb_interval_ms, sess->hb_missed_max);
	list_add_tail_rcu(&path->entry, &sess->paths);
	WRITE_ONCE(sess->nr_paths, sess->nr_paths + 1);
	mutex_unlock(&sess->paths_mutex);
	/* Ours, for when rtrs_clt_close() removes it while we wait. */
	kobject_get(&path->kobj);

	err = rtrs_clt_first_connect(path);
	/* A path of a closing session is for rtrs_clt_close() to remove. */
	if (err && !rtrs_clt_path_going(path)) {
		rtrs_clt_stop_path(path);
		rtrs_clt_unlist_path(path);
		rtrs_clt_sysfs_put_path(path);
	}
	kobject_put(&path->kobj);
	return err;
}

/**
 * rtrs_clt_open() - open a session and connect all its paths
 * @ops: the ULP's callbacks
 * @args: the session's name, paths and parameters
 *
 * Context: process; sleeps until every path is up or one failed.
 * Return: the session, or an ERR_PTR() when a path could not connect.
 */
struct rtrs_clt_sess *rtrs_clt_open(const struct rtrs_clt_ops *ops,
				    const struct rtrs_clt_open_args *args)
{
	struct rtrs_clt_sess *sess;
	size_t i;
	int err;

	err = rtrs_clt_check_args(args);
	if (err)
		return ERR_PTR(err);
	sess = rtrs_clt_alloc_sess(ops, args);
	if (!sess)
		return ERR_PTR(-ENOMEM);
	err = device_add(&sess->dev);
	if (err)
		goto out_put_sess;
	err = rtrs_clt_sysfs_add_sess(sess);
	if (err)
		goto out_del_sess;
	mutex_lock(&sess->ctl_mutex);
	for (i = 0; i < args->path_cnt && !err; i++)
		err = rtrs_clt_add_path(sess, &args->paths[i]);
	if (!err)
		rtrs_clt_sess_change_state(sess, RTRS_CLT_SESS_UP);
	mutex_unlock(&sess->ctl_mutex);
	if (err)
		goto out_close;
	/* A path may have gone while the others connected. */
	rtrs_clt_queue_link_work(sess);
	return sess;

out_close:
	rtrs_clt_close(sess);
	return ERR_PTR(err);
out_del_sess:
	device_del(&sess->dev);
out_put_sess:
	put_device(&sess->dev);
	return ERR_PTR(err);
}
EXPORT_SYMBOL_GPL(rtrs_clt_open);

/* Same address, whatever the ports: a bound source has one. */
static bool rtrs_clt_same_addr(const struct sockaddr_storage *a,
			       const struct sockaddr_storage *b)
{
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_ib *aib = (const void *)a;
	const struct sockaddr_ib *bib = (const void *)b;

	if (a->ss_family != b->ss_family)
		return false;
	switch (a->ss_family) {
	case AF_INET:
		return a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	case AF_INET6:
		return ipv6_addr_equal(&a6->sin6_addr, &b6->sin6_addr);
	case AF_IB:
		return !memcmp(&aib->sib_addr, &bib->sib_addr,
			       sizeof(aib->sib_addr));
	}
	return false;
}

/* The session has a path to @addr's destination from its source. */
static bool rtrs_clt_has_path(struct rtrs_clt_sess *sess,
			      const struct rtrs_addr *addr)
{
	struct rtrs_clt_path *path;

	lockdep_assert_held(&sess->ctl_mutex);
	list_for_each_entry(path, &sess->paths, entry) {
		if (rtrs_clt_same_addr(addr->dst, &path->s.dst_addr) &&
		    (addr->src->ss_family == AF_UNSPEC ||
		     rtrs_clt_same_addr(addr->src, &path->s.src_addr)))
			return true;
	}
	return false;
}

/**
 * rtrs_clt_add_path_sysfs() - add a path to an open session
 * @sess: the session
 * @addr: the path's addresses
 *
 * Context: process; sleeps until the path is up or failed.
 * Return: 0, -EEXIST for a path the session has, -EINVAL when it has
 * RTRS_MAX_PATHS, -ENODEV when it is closing, or why the path failed.
 */
int rtrs_clt_add_path_sysfs(struct rtrs_clt_sess *sess,
			    const struct rtrs_addr *addr)
{
	int err = 0;

	mutex_lock(&sess->ctl_mutex);
	if (rtrs_clt_sess_state(sess) == RTRS_CLT_SESS_CLOSING) {
		err = -ENODEV;
	} else if (rtrs_clt_has_path(sess, addr)) {
		rtrs_clt_err(sess, "add_path: the session has that path\n");
		err = -EEXIST;
	} else if (sess->nr_paths >= RTRS_MAX_PATHS) {
		rtrs_clt_err(sess, "add_path: %d paths is the most\n",
			     RTRS_MAX_PATHS);
		err = -EINVAL;
	}
	if (!err)
		err = rtrs_clt_add_path(sess, addr);
	mutex_unlock(&sess->ctl_mutex);
	if (!err)
		rtrs_clt_queue_link_work(sess);
	return err;
}

/**
 * rtrs_clt_disconnect_path() - close a path and keep it closed
 * @path: the path
 *
 * Its IO in flight fails over to the other paths.
 *
 * Return: 0, or -ENODEV when the path is being removed.
 */
int rtrs_clt_disconnect_path(struct rtrs_clt_path *path)
{
	struct rtrs_clt_sess *sess = path->sess;
	int err = 0;

	mutex_lock(&sess->ctl_mutex);
	if (rtrs_clt_path_going(path))
		err = -ENODEV;
	else
		rtrs_clt_stop_path(path);
	mutex_unlock(&sess->ctl_mutex);
	return err;
}

/**
 * rtrs_clt_reconnect_path() - close a path if up, and connect it again
 * @path: the path
 *
 * When the connect fails, the path reconnects in the background as after
 * any failure.
 *
 * Return: 0 when the path is up, else why it is not.
 */
int rtrs_clt_reconnect_path(struct rtrs_clt_path *path)
{
	struct rtrs_clt_sess *sess = path->sess;
	int err;

	mutex_lock(&sess->ctl_mutex);
	if (rtrs_clt_path_going(path)) {
		mutex_unlock(&sess->ctl_mutex);
		return -ENODEV;
	}
	rtrs_clt_stop_path(path);
	mutex_lock(&path->setup_mutex);
	path->reconnect_attempts = 0;
	err = rtrs_clt_reconnect_once(path);
	if (err) {
		path->reconnect_attempts++;
		rtrs_clt_schedule_reconnect(path);
	}
	mutex_unlock(&path->setup_mutex);
	mutex_unlock(&sess->ctl_mutex);
	rtrs_clt_queue_link_work(sess);
	return err;
}

/**
 * rtrs_clt_remove_path() - close a path and remove it from its session
 * @path: the path, freed here
 * @self: the sysfs file of @path this is written through
 *
 * Its IO in flight fails over to the other paths.  The last path of a
 * session stays: the session goes with its ULP's last user.
 *
 * Return: 0, -EBUSY for the last path, -ENODEV when it is going already.
 */
int rtrs_clt_remove_path(struct rtrs_clt_path *path,
			 const struct attribute *self)
{
	struct rtrs_clt_sess *sess = path->sess;
	int err = 0;

	mutex_lock(&sess->ctl_mutex);
	if (rtrs_clt_path_going(path)) {
		err = -ENODEV;
	} else if (sess->nr_paths == 1) {
		rtrs_clt_err(sess, "remove_path: %s is the last path\n",
			     path->name);
		err = -EBUSY;
	} else {
		rtrs_path_info(&path->s, "%s: removing the path\n",
			       path->name);
		rtrs_clt_stop_path(path);
		rtrs_clt_unlist_path(path);
	}
	mutex_unlock(&sess->ctl_mutex);
	if (err)
		return err;
	/*
	 * Out of ctl_mutex: removing the directory waits for its other
	 * writers, who may wait for the mutex and then find it DEAD.
	 */
	sysfs_remove_file_self(&path->kobj, self);
	rtrs_clt_sysfs_put_path(path);
	return 0;
}

/**
 * rtrs_clt_close() - close every path of a session and free it
 * @sess: the session; its ULP has put all its permits
 *
 * The ULP hears no link event once this returned.
 *
 * Context: process; sleeps until the paths are down.
 */
void rtrs_clt_close(struct rtrs_clt_sess *sess)
{
	struct rtrs_clt_path *path, *tmp;

	/* From here the sysfs controls leave the paths alone. */
	mutex_lock(&sess->ctl_mutex);
	rtrs_clt_sess_change_state(sess, RTRS_CLT_SESS_CLOSING);
	mutex_unlock(&sess->ctl_mutex);
	list_for_each_entry(path, &sess->paths, entry)
		rtrs_clt_stop_path(path);
	list_for_each_entry_safe(path, tmp, &sess->paths, entry) {
		rtrs_clt_unlist_path(path);
		rtrs_clt_sysfs_put_path(path);
	}
	cancel_work_sync(&sess->link_work);
	rtrs_clt_sysfs_del_sess(sess);
	device_del(&sess->dev);
	put_device(&sess->dev);
}
EXPORT_SYMBOL_GPL(rtrs_clt_close);

static int __init rtrs_clt_init(void)
{
	int err;

	rtrs_ib_dev_pool_init(&rtrs_clt_dev_pool);
	rtrs_clt_wq = alloc_workqueue("rtrs_clt_wq", WQ_MEM_RECLAIM, 0);
	if (!rtrs_clt_wq) {
		err = -ENOMEM;
		goto out_destroy_pool;
	}
	rtrs_clt_link_wq = alloc_workqueue("rtrs_clt_link_wq", WQ_MEM_RECLAIM,
					   0);
	if (!rtrs_clt_link_wq) {
		err = -ENOMEM;
		goto out_destroy_wq;
	}
	err = class_register(&rtrs_clt_class);
	if (err) {
		pr_err("cannot register class %s: %d\n", rtrs_clt_class.name,
		       err);
		goto out_destroy_link_wq;
	}
	return 0;

out_destroy_link_wq:
	destroy_workqueue(rtrs_clt_link_wq);
out_destroy_wq:
	destroy_workqueue(rtrs_clt_wq);
out_destroy_pool:
	rtrs_ib_dev_pool_destroy(&rtrs_clt_dev_pool);
	return err;
}

static void __exit rtrs_clt_exit(void)
{
	class_unregister(&rtrs_clt_class);
	destroy_workqueue(rtrs_clt_link_wq);
	destroy_workqueue(rtrs_clt_wq);
	rtrs_ib_dev_pool_destroy(&rtrs_clt_dev_pool);
}

module_init(rtrs_clt_init);
module_exit(rtrs_clt_exit);

MODULE_DESCRIPTION("RDMA Transport (RTRS) client");
MODULE_LICENSE("GPL");
