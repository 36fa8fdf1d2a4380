// SPDX-License-Identifier: GPL-2.0-only
/*
 * rtrs-bad-clt: a path of RTRS driven by hand.  The cases choose what goes
 * in each CON_REQ, each SEND and each chunk; this file connects, keeps the
 * server's heartbeats answered, and tells what came back: a reject, a
 * response with its errno, or the server closing the path.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/log2.h>
#include <linux/overflow.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <rdma/ib_cm.h>

#include "rtrs-bad-clt.h"

/* Send queue: a request is an RDMA WRITE and an IMM; heartbeat answers. */
#define BAD_CLT_SEND_WR		64
/* Largest chunk this client maps a buffer for. */
#define BAD_CLT_MAX_CHUNK	SZ_4M

static void bad_tx_done(struct ib_cq *cq, struct ib_wc *wc);
static void bad_quiet_done(struct ib_cq *cq, struct ib_wc *wc);
static void bad_imm_done(struct ib_cq *cq, struct ib_wc *wc);

/* The IMM that ends a request, and SENDs: their completion frees @tx. */
static struct ib_cqe bad_tx_cqe = { .done = bad_tx_done };
/* The RDMA WRITE before an IMM, and heartbeat answers: only errors count. */
static struct ib_cqe bad_quiet_cqe = { .done = bad_quiet_done };
/* The bare IMMs of bad_con_post_imm(), counted until they are sent. */
static struct ib_cqe bad_imm_cqe = { .done = bad_imm_done };

static struct bad_con *to_bad_con(struct rtrs_con *c)
{
	return container_of(c, struct bad_con, c);
}

static struct bad_path *con_to_path(struct rtrs_con *c)
{
	return container_of(c->path, struct bad_path, s);
}

/* Completions */

static void bad_path_wc_err(struct bad_path *p, enum ib_wc_status status)
{
	unsigned long flags;

	if (status == IB_WC_WR_FLUSH_ERR)
		return;
	spin_lock_irqsave(&p->lock, flags);
	if (!p->wc_err)
		p->wc_err = status;
	spin_unlock_irqrestore(&p->lock, flags);
	wake_up(&p->wq);
}

static void bad_tx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct bad_path *p = con_to_path(cq->cq_context);
	unsigned long flags;

	bad_path_wc_err(p, wc->status);
	spin_lock_irqsave(&p->lock, flags);
	p->tx_busy = false;
	spin_unlock_irqrestore(&p->lock, flags);
	wake_up(&p->wq);
}

static void bad_quiet_done(struct ib_cq *cq, struct ib_wc *wc)
{
	bad_path_wc_err(con_to_path(cq->cq_context), wc->status);
}

static void bad_imm_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct bad_path *p = con_to_path(cq->cq_context);

	bad_path_wc_err(p, wc->status);
	if (atomic_dec_and_test(&p->imm_inflight))
		wake_up(&p->wq);
}

static void bad_path_unexpected(struct bad_path *p, const char *what, u32 val)
{
	unsigned long flags;

	pr_info("%s: unexpected %s %#x from the server\n", p->s.sessname, what,
		val);
	spin_lock_irqsave(&p->lock, flags);
	p->unexpected++;
	spin_unlock_irqrestore(&p->lock, flags);
}

static void bad_rsp_imm(struct bad_path *p, u32 payload)
{
	u32 id = rtrs_io_rsp_msg_id(payload);
	unsigned long flags;

	spin_lock_irqsave(&p->lock, flags);
	p->rsp_id = id;
	p->rsp_errno = rtrs_io_rsp_errno(payload);
	/* 0 means no response yet in a chunk's rsp_seq. */
	if (!++p->rsp_cnt)
		p->rsp_cnt++;
	if (p->chunks && id < p->queue_depth) {
		p->chunks[id].rsp_seq = p->rsp_cnt;
		p->chunks[id].rsp_errno = p->rsp_errno;
	}
	spin_unlock_irqrestore(&p->lock, flags);
	wake_up(&p->wq);
}

static void bad_imm(struct bad_con *con, u32 imm)
{
	struct bad_path *p = con_to_path(&con->c);
	int err;

	switch (rtrs_imm_type(imm)) {
	case RTRS_IO_RSP_IMM:
	case RTRS_IO_RSP_W_INV_IMM:
		bad_rsp_imm(p, rtrs_imm_payload(imm));
		break;
	case RTRS_HB_MSG_IMM:
		err = rtrs_post_write_imm_empty(&con->c, &bad_quiet_cqe,
						rtrs_imm(RTRS_HB_ACK_IMM, 0),
						IB_SEND_SIGNALED, NULL);
		if (err)
			pr_info("%s: cannot answer a heartbeat: %d\n",
				p->s.sessname, err);
		break;
	case RTRS_HB_ACK_IMM:
		break;
	default:
		bad_path_unexpected(p, "immediate", imm);
		break;
	}
}

/* A SEND_WITH_IMM of the server carries a chunk's new rkey. */
static void bad_rkey_rsp(struct bad_path *p, const void *buf, u32 len)
{
	const struct rtrs_msg_rkey_rsp *msg = buf;
	unsigned long flags;
	u16 id;

	if (len < sizeof(*msg) ||
	    le16_to_cpu(msg->type) != RTRS_MSG_RKEY_RSP ||
	    le16_to_cpu(msg->buf_id) >= p->queue_depth) {
		bad_path_unexpected(p, "message of length", len);
		return;
	}
	id = le16_to_cpu(msg->buf_id);
	spin_lock_irqsave(&p->lock, flags);
	p->chunks[id].rkey = le32_to_cpu(msg->rkey);
	spin_unlock_irqrestore(&p->lock, flags);
}

static void bad_rx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct bad_con *con = to_bad_con(cq->cq_context);
	struct bad_path *p = con_to_path(&con->c);
	struct rtrs_iu *iu = container_of(wc->wr_cqe, struct rtrs_iu, cqe);
	int err;

	if (wc->status != IB_WC_SUCCESS) {
		bad_path_wc_err(p, wc->status);
		return;
	}
	ib_dma_sync_single_for_cpu(p->dev.ib_dev, iu->dma_addr, iu->size,
				   DMA_FROM_DEVICE);
	/* The rkey first: the response it comes with may start the next IO. */
	if (wc->opcode == IB_WC_RECV)
		bad_rkey_rsp(p, iu->buf, wc->byte_len);
	if (wc->opcode == IB_WC_RECV_RDMA_WITH_IMM ||
	    wc->wc_flags & IB_WC_WITH_IMM)
		bad_imm(con, be32_to_cpu(wc->ex.imm_data));
	err = rtrs_iu_post_recv(&con->c, iu);
	if (err)
		bad_path_wc_err(p, IB_WC_GENERAL_ERR);
}

static int bad_info_rsp(struct bad_path *p, const struct rtrs_msg_info_rsp *rsp,
			u32 len)
{
	unsigned int i;

	if (len < struct_size(rsp, desc, p->queue_depth) ||
	    le16_to_cpu(rsp->type) != RTRS_MSG_INFO_RSP ||
	    le16_to_cpu(rsp->sg_cnt) != p->queue_depth)
		return -EPROTO;
	for (i = 0; i < p->queue_depth; i++) {
		if (le32_to_cpu(rsp->desc[i].len) < p->chunk_size)
			return -EPROTO;
		p->chunks[i].addr = le64_to_cpu(rsp->desc[i].addr);
		p->chunks[i].rkey = le32_to_cpu(rsp->desc[i].key);
	}
	return 0;
}

static void bad_info_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct bad_path *p = con_to_path(cq->cq_context);
	unsigned long flags;
	int err;

	if (wc->status != IB_WC_SUCCESS) {
		bad_path_wc_err(p, wc->status);
		return;
	}
	ib_dma_sync_single_for_cpu(p->dev.ib_dev, p->info_iu->dma_addr,
				   p->info_iu->size, DMA_FROM_DEVICE);
	err = bad_info_rsp(p, p->info_iu->buf, wc->byte_len);
	spin_lock_irqsave(&p->lock, flags);
	p->info_done = true;
	p->info_err = err;
	spin_unlock_irqrestore(&p->lock, flags);
	wake_up(&p->wq);
}

/* Connections */

static int bad_con_post_rx(struct bad_con *con)
{
	struct bad_path *p = con_to_path(&con->c);
	unsigned int i;
	int err;

	for (i = 0; i < BAD_CLT_RX; i++) {
		con->rx[i] = rtrs_iu_alloc(p->dev.ib_dev, BAD_CLT_RX_SIZE,
					   DMA_FROM_DEVICE, GFP_KERNEL,
					   bad_rx_done);
		if (!con->rx[i])
			return -ENOMEM;
		err = rtrs_iu_post_recv(&con->c, con->rx[i]);
		if (err)
			return err;
	}
	return 0;
}

static int bad_path_get_dev(struct bad_path *p, struct ib_device *ib_dev)
{
	struct ib_pd *pd;

	if (p->dev.ib_dev)
		return p->dev.ib_dev == ib_dev ? 0 : -EINVAL;
	pd = ib_alloc_pd(ib_dev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(pd))
		return PTR_ERR(pd);
	p->dev.pd = pd;
	p->dev.ib_dev = ib_dev;
	return 0;
}

static int bad_con_route_resolved(struct bad_con *con)
{
	struct bad_path *p = con_to_path(&con->c);
	struct rdma_conn_param param = {
		.private_data = &con->req,
		.private_data_len = sizeof(con->req),
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	int err;

	err = bad_path_get_dev(p, con->c.cm_id->device);
	if (err)
		return err;
	err = rtrs_con_create_qp(&con->c, p->dev.pd, BAD_CLT_SEND_WR,
				 BAD_CLT_RX + 1, 1, IB_POLL_SOFTIRQ);
	if (err)
		return err;
	/* cid 0 posts its receives once INFO_RSP's, bigger, is posted. */
	if (con->c.cid) {
		err = bad_con_post_rx(con);
		if (err)
			return err;
	}
	return rdma_connect_locked(con->c.cm_id, &param);
}

/* CON_RSP: cid 0's gives the session's chunks and limits. */
static int bad_con_established(struct bad_con *con,
			       const struct rdma_cm_event *ev)
{
	const struct rtrs_msg_conn_rsp *rsp = ev->param.conn.private_data;
	struct bad_path *p = con_to_path(&con->c);

	if (ev->param.conn.private_data_len < sizeof(*rsp) ||
	    le16_to_cpu(rsp->magic) != RTRS_MAGIC ||
	    le16_to_cpu(rsp->version) >> 8 != RTRS_PROTO_VER_MAJOR ||
	    rsp->errno)
		return -EPROTO;
	con->established = true;
	if (con->c.cid)
		return 0;
	p->queue_depth = le16_to_cpu(rsp->queue_depth);
	p->max_hdr_size = le32_to_cpu(rsp->max_hdr_size);
	p->chunk_size = le32_to_cpu(rsp->max_io_size) + p->max_hdr_size;
	p->new_rkey = le32_to_cpu(rsp->flags) & RTRS_MSG_NEW_RKEY_F;
	if (!p->queue_depth || p->chunk_size < RTRS_MIN_CHUNK_SIZE ||
	    p->chunk_size > BAD_CLT_MAX_CHUNK)
		return -EPROTO;
	p->mem_bits = RTRS_IMM_PAYLOAD_BITS - order_base_2(p->queue_depth);
	return 0;
}

static int bad_con_rejected(struct bad_con *con, struct rdma_cm_event *ev)
{
	const struct rtrs_msg_conn_rsp *rsp;
	u8 len;

	rsp = rdma_consumer_reject_data(con->c.cm_id, ev, &len);
	/* A negative errno on the wire, as Linux's RTRS sends it. */
	if (rsp && len >= sizeof(*rsp) &&
	    le16_to_cpu(rsp->magic) == RTRS_MAGIC)
		con->reject_errno = -(s16)le16_to_cpu(rsp->errno);
	return -ECONNREFUSED;
}

static void bad_con_mark_closed(struct bad_con *con)
{
	struct bad_path *p = con_to_path(&con->c);
	unsigned long flags;

	spin_lock_irqsave(&p->lock, flags);
	con->closed = true;
	p->closed = true;
	spin_unlock_irqrestore(&p->lock, flags);
	wake_up(&p->wq);
}

/* The connection is up or failed; after that, any failure closes it. */
static void bad_cm_finish(struct bad_con *con, int err)
{
	if (con->cm_finished) {
		bad_con_mark_closed(con);
		return;
	}
	con->cm_finished = true;
	con->cm_err = err;
	complete(&con->cm_done);
}

static int bad_cm_handler(struct rdma_cm_id *cm_id, struct rdma_cm_event *ev)
{
	struct bad_con *con = cm_id->context;
	struct bad_path *p = con_to_path(&con->c);
	int err;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		err = rdma_resolve_route(cm_id, p->t->timeout_ms);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		err = bad_con_route_resolved(con);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		bad_cm_finish(con, bad_con_established(con, ev));
		return 0;
	case RDMA_CM_EVENT_REJECTED:
		err = bad_con_rejected(con, ev);
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return 0;
	default:
		err = -ECONNRESET;
		break;
	}
	if (err)
		bad_cm_finish(con, err);
	/* Never non-zero: bad_path_free() destroys the id. */
	return 0;
}

/* INFO_RSP's receive goes first: it is the first SEND of the server. */
static int bad_path_setup_admin(struct bad_path *p)
{
	struct ib_device *ib_dev = p->dev.ib_dev;
	struct rtrs_msg_info_rsp *rsp;
	int err;

	p->chunks = kcalloc(p->queue_depth, sizeof(*p->chunks), GFP_KERNEL);
	p->info_iu = rtrs_iu_alloc(ib_dev, struct_size(rsp, desc,
						       p->queue_depth),
				   DMA_FROM_DEVICE, GFP_KERNEL, bad_info_done);
	p->tx = rtrs_iu_alloc(ib_dev, p->chunk_size, DMA_TO_DEVICE,
			      GFP_KERNEL, bad_tx_done);
	p->rbuf = rtrs_iu_alloc(ib_dev, p->chunk_size, DMA_FROM_DEVICE,
				GFP_KERNEL, NULL);
	if (!p->chunks || !p->info_iu || !p->tx || !p->rbuf)
		return -ENOMEM;
	err = rtrs_iu_post_recv(p->s.con[0], p->info_iu);
	if (err)
		return err;
	return bad_con_post_rx(&p->bad_cons[0]);
}

/**
 * bad_con_connect() - connect one connection of a path with a CON_REQ
 * @p: the path
 * @cid: the connection
 * @req: what to send, as is
 *
 * Context: process; sleeps until the connection is up or failed.
 * Return: 0 when established; -ECONNREFUSED when the server rejected it,
 * with the errno it gave in the connection's @reject_errno; another
 * negative errno when it failed otherwise.
 */
int bad_con_connect(struct bad_path *p, unsigned int cid,
		    const struct rtrs_msg_conn_req *req)
{
	return bad_con_connect_start(p, cid, req) ?:
	       bad_con_connect_wait(p, cid);
}

/**
 * bad_con_connect_start() - start to connect, as bad_con_connect()
 * @p: the path
 * @cid: the connection
 * @req: what to send, as is
 *
 * Return: 0 when started: bad_con_connect_wait() says how it ended; else
 * a negative errno.
 */
int bad_con_connect_start(struct bad_path *p, unsigned int cid,
			  const struct rtrs_msg_conn_req *req)
{
	struct bad_con *con = &p->bad_cons[cid];
	struct rdma_cm_id *cm_id;

	con->req = *req;
	cm_id = rdma_create_id(&init_net, bad_cm_handler, con,
			       p->s.dst_addr.ss_family == AF_IB ?
			       RDMA_PS_IB : RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(cm_id))
		return PTR_ERR(cm_id);
	con->c.cm_id = cm_id;
	return rdma_resolve_addr(cm_id, (struct sockaddr *)&p->s.src_addr,
				 (struct sockaddr *)&p->s.dst_addr,
				 p->t->timeout_ms);
}

/**
 * bad_con_connect_wait() - wait for a connect bad_con_connect_start() began
 * @p: the path
 * @cid: the connection
 *
 * Return: as bad_con_connect().
 */
int bad_con_connect_wait(struct bad_path *p, unsigned int cid)
{
	struct bad_con *con = &p->bad_cons[cid];

	if (!wait_for_completion_timeout(&con->cm_done,
					 msecs_to_jiffies(3 * p->t->timeout_ms)))
		return -ETIMEDOUT;
	if (con->cm_err || cid)
		return con->cm_err;
	return bad_path_setup_admin(p);
}

/**
 * bad_conn_req_init() - a valid CON_REQ for a connection of a path
 * @p: the path
 * @req: filled
 * @cid: the connection
 */
void bad_conn_req_init(struct bad_path *p, struct rtrs_msg_conn_req *req,
		       unsigned int cid)
{
	memset(req, 0, sizeof(*req));
	req->magic = cpu_to_le16(RTRS_MAGIC);
	req->version = cpu_to_le16(RTRS_PROTO_VER);
	req->cid = cpu_to_le16(cid);
	req->cid_num = cpu_to_le16(BAD_CLT_CONS);
	req->flags = RTRS_CON_REQ_FIRST_CONN;
	uuid_copy(&req->sess_uuid, &p->s.uuid);
	uuid_copy(&req->paths_uuid, &p->sess_uuid);
}

/* Connect every connection of @p with a valid CON_REQ. */
int bad_path_connect(struct bad_path *p)
{
	struct rtrs_msg_conn_req req;
	unsigned int cid;
	int err;

	for (cid = 0; cid < BAD_CLT_CONS; cid++) {
		bad_conn_req_init(p, &req, cid);
		err = bad_con_connect(p, cid, &req);
		if (err)
			return err;
	}
	return 0;
}

/* Requests */

/*
 * Wait until @tx is free; false if it stayed busy.  On a broken path its
 * work request may only be flushed once the path is drained: no wait.
 */
static bool bad_path_tx_idle(struct bad_path *p)
{
	unsigned long flags;
	bool idle;

	wait_event_timeout(p->wq, !READ_ONCE(p->tx_busy) ||
			   bad_path_broken(p),
			   msecs_to_jiffies(p->t->timeout_ms));
	spin_lock_irqsave(&p->lock, flags);
	idle = !p->tx_busy;
	if (idle)
		p->tx_busy = true;
	spin_unlock_irqrestore(&p->lock, flags);
	return idle;
}

static void bad_path_tx_abort(struct bad_path *p)
{
	unsigned long flags;

	spin_lock_irqsave(&p->lock, flags);
	p->tx_busy = false;
	spin_unlock_irqrestore(&p->lock, flags);
}

static size_t bad_path_fill_tx(struct bad_path *p, const void *buf,
			       size_t len)
{
	len = min_t(size_t, len, p->tx->size);
	memcpy(p->tx->buf, buf, len);
	ib_dma_sync_single_for_device(p->dev.ib_dev, p->tx->dma_addr, len,
				      DMA_TO_DEVICE);
	return len;
}

/**
 * bad_path_send() - SEND a message on a connection of an established path
 * @p: the path
 * @cid: the connection
 * @msg: the message
 * @len: its length, at most the chunk size
 *
 * Return: 0 when posted, else a negative errno.
 */
int bad_path_send(struct bad_path *p, unsigned int cid, const void *msg,
		  size_t len)
{
	int err;

	if (!p->tx || !bad_path_tx_idle(p))
		return -EBUSY;
	len = bad_path_fill_tx(p, msg, len);
	err = rtrs_iu_post_send(p->s.con[cid], p->tx, len, NULL);
	if (err)
		bad_path_tx_abort(p);
	return err;
}

/**
 * bad_path_info() - the INFO exchange: ask for the session's chunks
 * @p: the path, all connections established
 *
 * Return: 0 when INFO_RSP came and gave the chunks, else a negative errno.
 */
int bad_path_info(struct bad_path *p)
{
	struct rtrs_msg_info_req req = {
		.type = cpu_to_le16(RTRS_MSG_INFO_REQ),
	};
	unsigned long flags;
	int err;

	strscpy(req.pathname, p->s.sessname, sizeof(req.pathname));
	err = bad_path_send(p, 0, &req, sizeof(req));
	if (err)
		return err;
	wait_event_timeout(p->wq, READ_ONCE(p->info_done) ||
			   READ_ONCE(p->closed) || READ_ONCE(p->wc_err),
			   msecs_to_jiffies(p->t->timeout_ms));
	spin_lock_irqsave(&p->lock, flags);
	if (p->info_done)
		err = p->info_err;
	else
		err = p->closed || p->wc_err ? -ECONNRESET : -ETIMEDOUT;
	spin_unlock_irqrestore(&p->lock, flags);
	return err;
}

/**
 * bad_io_imm() - the immediate of a request
 * @p: the path
 * @chunk: the chunk id, not checked: cases send bad ones
 * @off: the trailer's offset, not checked either
 *
 * Return: the IO_REQ immediate, in host order.
 */
u32 bad_io_imm(struct bad_path *p, u32 chunk, u32 off)
{
	return rtrs_imm(RTRS_IO_REQ_IMM, chunk << p->mem_bits | off);
}

/* The next chunk to use, in turn; two senders may take them at once. */
u32 bad_path_take_chunk(struct bad_path *p)
{
	unsigned long flags;
	u32 id;

	spin_lock_irqsave(&p->lock, flags);
	id = p->next_chunk;
	p->next_chunk = (id + 1) % p->queue_depth;
	spin_unlock_irqrestore(&p->lock, flags);
	return id;
}

/**
 * bad_path_post_io() - write a request into a chunk and send its IMM
 * @p: the path, up
 * @chunk: where @buf goes; must be a valid chunk when @len is not 0
 * @buf: the chunk's bytes from its start: data, user header, trailer
 * @len: how many; 0 sends the IMM alone
 * @imm: the immediate, as is
 *
 * Goes on the IO connection (cid 1).
 *
 * Return: 0 when posted, else a negative errno.
 */
int bad_path_post_io(struct bad_path *p, u32 chunk, const void *buf,
		     size_t len, u32 imm)
{
	return bad_con_post_io(p, 1, chunk, buf, len, imm);
}

/**
 * bad_con_post_io() - as bad_path_post_io(), on any connection
 * @p: the path, up
 * @cid: the connection
 * @chunk: the chunk to write @buf into, not checked when @len is 0
 * @buf: the chunk's bytes from its start
 * @len: how many
 * @imm: the immediate, as is
 *
 * Return: 0 when posted, else a negative errno.
 */
int bad_con_post_io(struct bad_path *p, unsigned int cid, u32 chunk,
		    const void *buf, size_t len, u32 imm)
{
	struct ib_sge sge = {
		.lkey = p->dev.pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe = &bad_quiet_cqe,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE,
		},
	};
	unsigned long flags;
	int err;

	if (!p->tx || !bad_path_tx_idle(p))
		return -EBUSY;
	if (len) {
		sge.addr = p->tx->dma_addr;
		sge.length = bad_path_fill_tx(p, buf, len);
		spin_lock_irqsave(&p->lock, flags);
		wr.remote_addr = p->chunks[chunk].addr;
		wr.rkey = p->chunks[chunk].rkey;
		spin_unlock_irqrestore(&p->lock, flags);
	}
	err = rtrs_post_write_imm_empty(p->s.con[cid], &bad_tx_cqe, imm,
					IB_SEND_SIGNALED, len ? &wr.wr : NULL);
	if (err)
		bad_path_tx_abort(p);
	return err;
}

/**
 * bad_con_post_imm() - a bare IMM on any connection, as heartbeats go
 * @p: the path
 * @cid: the connection, established
 * @imm: the immediate, as is
 *
 * Needs no admin connection: a case may send it on a path whose
 * connection 0 never came.
 *
 * Return: 0 when posted, else a negative errno.
 */
int bad_con_post_imm(struct bad_path *p, unsigned int cid, u32 imm)
{
	int err;

	if (!p->bad_cons[cid].established)
		return -ENOTCONN;
	atomic_inc(&p->imm_inflight);
	err = rtrs_post_write_imm_empty(p->s.con[cid], &bad_imm_cqe, imm,
					IB_SEND_SIGNALED, NULL);
	if (err)
		atomic_dec(&p->imm_inflight);
	return err;
}

/**
 * bad_path_wait_sent() - wait until what was posted has left
 * @p: the path
 *
 * A disconnect flushes the work requests not sent yet: a message posted
 * right before bad_path_free() may never reach the server.  On a broken
 * path nothing more reaches it: no wait.
 *
 * Return: 0 when all completed or the path broke, -ETIMEDOUT when neither
 * in time.
 */
int bad_path_wait_sent(struct bad_path *p)
{
	return wait_event_timeout(p->wq, (!atomic_read(&p->imm_inflight) &&
					  !READ_ONCE(p->tx_busy)) ||
				  bad_path_broken(p),
				  msecs_to_jiffies(p->t->timeout_ms)) ?
		0 : -ETIMEDOUT;
}

/**
 * bad_path_post_raw() - an RDMA WRITE anywhere, without an IMM
 * @p: the path, up
 * @addr: remote address
 * @rkey: remote key
 * @buf: what to write
 * @len: how many bytes, at most the chunk size
 *
 * Return: 0 when posted, else a negative errno.
 */
int bad_path_post_raw(struct bad_path *p, u64 addr, u32 rkey,
		      const void *buf, size_t len)
{
	struct ib_sge sge = {
		.lkey = p->dev.pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe = &bad_tx_cqe,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE,
			.send_flags = IB_SEND_SIGNALED,
		},
		.remote_addr = addr,
		.rkey = rkey,
	};
	int err;

	if (!p->tx || !bad_path_tx_idle(p))
		return -EBUSY;
	sge.addr = p->tx->dma_addr;
	sge.length = bad_path_fill_tx(p, buf, len);
	err = ib_post_send(p->s.con[1]->qp, &wr.wr, NULL);
	if (err)
		bad_path_tx_abort(p);
	return err;
}

unsigned int bad_path_rsp_cnt(struct bad_path *p)
{
	unsigned long flags;
	unsigned int cnt;

	spin_lock_irqsave(&p->lock, flags);
	cnt = p->rsp_cnt;
	spin_unlock_irqrestore(&p->lock, flags);
	return cnt;
}

/**
 * bad_path_wait_rsp() - wait for the response to a request
 * @p: the path
 * @seen: bad_path_rsp_cnt() before the request was posted
 * @rsp: the response
 *
 * Return: 0 with @rsp filled, -ECONNRESET when the path broke first,
 * -ETIMEDOUT when nothing came.
 */
int bad_path_wait_rsp(struct bad_path *p, unsigned int seen,
		      struct bad_rsp *rsp)
{
	unsigned long flags;
	int err = 0;

	wait_event_timeout(p->wq, bad_path_rsp_cnt(p) != seen ||
			   READ_ONCE(p->closed) || READ_ONCE(p->wc_err),
			   msecs_to_jiffies(p->t->timeout_ms));
	spin_lock_irqsave(&p->lock, flags);
	if (p->rsp_cnt != seen) {
		rsp->errno = p->rsp_errno;
		rsp->id = p->rsp_id;
	} else {
		err = p->closed || p->wc_err ? -ECONNRESET : -ETIMEDOUT;
	}
	spin_unlock_irqrestore(&p->lock, flags);
	if (!err)
		ib_dma_sync_single_for_cpu(p->dev.ib_dev, p->rbuf->dma_addr,
					   p->rbuf->size, DMA_FROM_DEVICE);
	return err;
}

/**
 * bad_path_chunk_answered() - has a request in a chunk been answered?
 * @p: the path
 * @chunk: the chunk the request went into, below the queue depth
 * @seen: bad_path_rsp_cnt() before the request was posted
 *
 * Return: true once its response came.
 */
bool bad_path_chunk_answered(struct bad_path *p, u32 chunk, unsigned int seen)
{
	unsigned long flags;
	bool answered;

	spin_lock_irqsave(&p->lock, flags);
	answered = p->chunks[chunk].rsp_seq &&
		   (int)(p->chunks[chunk].rsp_seq - seen) > 0;
	spin_unlock_irqrestore(&p->lock, flags);
	return answered;
}

/**
 * bad_path_wait_chunk() - wait for the response to a request in a chunk
 * @p: the path
 * @chunk: the chunk the request went into, below the queue depth
 * @seen: bad_path_rsp_cnt() before the request was posted
 * @errno: the response's errno
 *
 * For requests in flight side by side, where the next response may be
 * another's.  A READ's data is in @p->rbuf, where its request said.
 *
 * Return: 0 with @errno set, -ECONNRESET when the path broke first,
 * -ETIMEDOUT when nothing came.
 */
int bad_path_wait_chunk(struct bad_path *p, u32 chunk, unsigned int seen,
			int *errno)
{
	unsigned long flags;

	wait_event_timeout(p->wq, bad_path_chunk_answered(p, chunk, seen) ||
			   bad_path_broken(p),
			   msecs_to_jiffies(p->t->timeout_ms));
	if (!bad_path_chunk_answered(p, chunk, seen))
		return bad_path_broken(p) ? -ECONNRESET : -ETIMEDOUT;
	spin_lock_irqsave(&p->lock, flags);
	*errno = p->chunks[chunk].rsp_errno;
	spin_unlock_irqrestore(&p->lock, flags);
	ib_dma_sync_single_for_cpu(p->dev.ib_dev, p->rbuf->dma_addr,
				   p->rbuf->size, DMA_FROM_DEVICE);
	return 0;
}

/* Has the server disconnected the path, or a work request failed? */
bool bad_path_broken(struct bad_path *p)
{
	return READ_ONCE(p->closed) || READ_ONCE(p->wc_err);
}

/**
 * bad_path_wait_closed() - wait for the server to disconnect the path
 * @p: the path
 *
 * Return: 0 when it did, -ETIMEDOUT when it did not in time.
 */
int bad_path_wait_closed(struct bad_path *p)
{
	return wait_event_timeout(p->wq, READ_ONCE(p->closed),
				  msecs_to_jiffies(p->t->timeout_ms)) ?
		0 : -ETIMEDOUT;
}

/**
 * bad_con_wait_closed() - wait for one connection to go down
 * @p: the path
 * @cid: the connection, established
 *
 * A server that destroys a connection before it saw it established sends
 * a reject the client's CM ignores by then: only a work request that finds
 * no peer tells.  Post one first to learn of that too.
 *
 * Return: 0 when it went down, -EPIPE when a work request of the path
 * failed, -ETIMEDOUT when neither came.
 */
int bad_con_wait_closed(struct bad_path *p, unsigned int cid)
{
	wait_event_timeout(p->wq, READ_ONCE(p->bad_cons[cid].closed) ||
			   READ_ONCE(p->wc_err),
			   msecs_to_jiffies(p->t->timeout_ms));
	if (READ_ONCE(p->bad_cons[cid].closed))
		return 0;
	return READ_ONCE(p->wc_err) ? -EPIPE : -ETIMEDOUT;
}

/* Path lifetime */

/**
 * bad_path_alloc() - a path to the server, not connected yet
 * @t: the server
 * @sessname: the session's name, sent in INFO_REQ
 *
 * The path and the session get new uuids.
 *
 * Return: the path, or NULL.
 */
struct bad_path *bad_path_alloc(const struct bad_target *t,
				const char *sessname)
{
	struct bad_path *p;
	unsigned int cid;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return NULL;
	/* rtrs.c's posts count in it, as in any path. */
	if (rtrs_wr_stats_alloc(&p->s)) {
		kfree(p);
		return NULL;
	}
	p->t = t;
	strscpy(p->s.sessname, sessname, sizeof(p->s.sessname));
	memcpy(&p->s.src_addr, t->addr.src, sizeof(p->s.src_addr));
	memcpy(&p->s.dst_addr, t->addr.dst, sizeof(p->s.dst_addr));
	uuid_gen(&p->s.uuid);
	uuid_gen(&p->sess_uuid);
	p->s.dev = &p->dev;
	p->s.con = p->con_ptrs;
	p->s.con_num = BAD_CLT_CONS;
	for (cid = 0; cid < BAD_CLT_CONS; cid++) {
		p->bad_cons[cid].c.path = &p->s;
		p->bad_cons[cid].c.cid = cid;
		init_completion(&p->bad_cons[cid].cm_done);
		p->con_ptrs[cid] = &p->bad_cons[cid].c;
	}
	init_waitqueue_head(&p->wq);
	spin_lock_init(&p->lock);
	return p;
}

/**
 * bad_path_up() - a path with its session, ready for requests
 * @t: the server
 * @sessname: the session's name
 *
 * Context: process.
 * Return: the path, or an ERR_PTR.
 */
struct bad_path *bad_path_up(const struct bad_target *t, const char *sessname)
{
	struct bad_path *p;
	int err;

	p = bad_path_alloc(t, sessname);
	if (!p)
		return ERR_PTR(-ENOMEM);
	err = bad_path_connect(p);
	if (!err)
		err = bad_path_info(p);
	if (err) {
		bad_path_free(p);
		return ERR_PTR(err);
	}
	return p;
}

static void bad_con_free_rx(struct bad_con *con, struct ib_device *ib_dev)
{
	unsigned int i;

	for (i = 0; i < BAD_CLT_RX; i++)
		rtrs_iu_free(con->rx[i], ib_dev);
}

/**
 * bad_path_free() - disconnect a path, whatever state it is in, and free it
 * @p: the path
 *
 * Context: process.
 */
void bad_path_free(struct bad_path *p)
{
	struct ib_device *ib_dev = p->dev.ib_dev;
	unsigned int cid;

	for (cid = 0; cid < BAD_CLT_CONS; cid++)
		if (p->bad_cons[cid].established)
			rdma_disconnect(p->bad_cons[cid].c.cm_id);
	/*
	 * Every QP, connected or not: destroying one flushes its receives
	 * into the CQ, and Soft-RoCE of 6.1 runs a CQ's completion tasklet
	 * after the CQ is freed when the CQ goes right after them.  Drained,
	 * its last completion has been handled.
	 */
	for (cid = 0; cid < BAD_CLT_CONS; cid++)
		if (p->bad_cons[cid].c.qp)
			ib_drain_qp(p->bad_cons[cid].c.qp);
	/* After this, no completion or rdma_cm event runs for the path. */
	for (cid = 0; cid < BAD_CLT_CONS; cid++) {
		struct bad_con *con = &p->bad_cons[cid];

		if (!con->c.cm_id)
			continue;
		rtrs_con_destroy_qp(&con->c);
		rdma_destroy_id(con->c.cm_id);
		bad_con_free_rx(con, ib_dev);
	}
	if (ib_dev) {
		rtrs_iu_free(p->info_iu, ib_dev);
		rtrs_iu_free(p->tx, ib_dev);
		rtrs_iu_free(p->rbuf, ib_dev);
		ib_dealloc_pd(p->dev.pd);
	}
	kfree(p->chunks);
	rtrs_wr_stats_free(&p->s);
	kfree(p);
}
