// SPDX-License-Identifier: GPL-2.0-only
/*
 * RTRS client: the connections of a path.  Each is an rdma_cm id and a
 * queue pair to the server, connected with CON_REQ in the private data;
 * cid 0's answer brings the path's limits.  A path's setup opens them one
 * by one (rtrs-clt.c); its teardown drains and destroys them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "rtrs-clt.h"

/* Pages of a READ's memory registration, and sg entries of a WRITE. */
#define RTRS_CLT_MAX_SEGMENTS		128
/* Send WRs per IO: memory registration, the write, a local invalidation. */
#define RTRS_CLT_SEND_PER_IO		3
/* Room for heartbeats and the drain's own work requests. */
#define RTRS_CLT_WR_SLACK		8
/*
 * Retries of the queue pairs, both sides (the server takes ours): RNR for
 * ever (7), transport 6 times, so that a peer gone silent fails the IO in
 * flight (rxe, unlike the spec, takes 7 as "for ever" there too).
 */
#define RTRS_CLT_RNR_RETRIES		7
#define RTRS_CLT_RETRIES		6

/* The IB devices the paths are on, each shared by its paths. */
struct rtrs_ib_dev_pool rtrs_clt_dev_pool;

static void rtrs_clt_cm_finish(struct rtrs_clt_con *con, int err)
{
	/*
	 * Not completion_done(): it turns false again once the waiter took
	 * the completion, and later errors would go unheard.
	 */
	if (!con->cm_finished) {
		con->cm_err = err;
		/* The waiter reads cm_err once it sees cm_finished. */
		smp_store_release(&con->cm_finished, true);
		wake_up(&to_clt_path(con->c.path)->setup_wq);
		return;
	}
	if (err)
		rtrs_clt_path_fail(to_clt_path(con->c.path));
}

static void rtrs_clt_query_dev(struct rtrs_clt_path *path)
{
	const struct ib_device_attr *attrs = &path->s.dev->ib_dev->attrs;

	path->max_pages_per_mr = min_t(u32, RTRS_CLT_MAX_SEGMENTS,
				       attrs->max_fast_reg_page_list_len);
	path->max_send_sge = min_t(u32, RTRS_CLT_MAX_SEGMENTS + 1,
				   attrs->max_send_sge);
}

/* The first connection brings the path's device; the others share it. */
static int rtrs_clt_con_dev(struct rtrs_clt_con *con)
{
	struct rtrs_clt_path *path = to_clt_path(con->c.path);
	struct ib_device *ib_dev = con->c.cm_id->device;

	if (con->c.cid) {
		if (path->s.dev->ib_dev != ib_dev)
			return -EINVAL;
		return 0;
	}
	path->s.dev = rtrs_ib_dev_get(&rtrs_clt_dev_pool, ib_dev);
	if (!path->s.dev)
		return -ENOMEM;
	rtrs_clt_query_dev(path);
	return 0;
}

static int rtrs_clt_create_qp(struct rtrs_clt_con *con)
{
	struct rtrs_clt_path *path = to_clt_path(con->c.path);
	u32 depth = rtrs_clt_con_depth(path, con->c.cid);
	int err;

	err = rtrs_clt_con_dev(con);
	if (err)
		return err;
	return rtrs_con_create_qp(&con->c, path->s.dev->pd,
				  RTRS_CLT_SEND_PER_IO *
				  (depth + RTRS_SIG_INTERVAL) +
				  RTRS_CLT_WR_SLACK,
				  RTRS_CLT_RECV_PER_IO * depth +
				  RTRS_CLT_WR_SLACK,
				  path->max_send_sge,
				  con->c.cid < rtrs_clt_first_poll_cid(path) ?
				  IB_POLL_SOFTIRQ : IB_POLL_DIRECT);
}

static int rtrs_clt_connect(struct rtrs_clt_con *con)
{
	struct rtrs_clt_path *path = to_clt_path(con->c.path);
	struct rtrs_msg_conn_req req = {
		.magic = cpu_to_le16(RTRS_MAGIC),
		.version = cpu_to_le16(RTRS_PROTO_VER),
		.cid = cpu_to_le16(con->c.cid),
		.cid_num = cpu_to_le16(path->s.con_num),
		.recon_cnt = cpu_to_le16(path->recon_cnt),
		.flags = RTRS_CON_REQ_FIRST_CONN,
	};
	struct rdma_conn_param param = {
		.private_data = &req,
		.private_data_len = sizeof(req),
		.retry_count = RTRS_CLT_RETRIES,
		.rnr_retry_count = RTRS_CLT_RNR_RETRIES,
	};

	/*
	 * As Linux's RTRS puts them: the path's uuid in sess_uuid, the
	 * session's, which the server groups the paths by, in paths_uuid.
	 */
	uuid_copy(&req.sess_uuid, &path->s.uuid);
	uuid_copy(&req.paths_uuid, &path->sess->uuid);
	return rdma_connect_locked(con->c.cm_id, &param);
}

static int rtrs_clt_route_resolved(struct rtrs_clt_con *con)
{
	int err;

	err = rtrs_clt_create_qp(con);
	if (err)
		return err;
	return rtrs_clt_connect(con);
}

/* cid 0's answer sets the path's limits. */
static int rtrs_clt_take_limits(struct rtrs_clt_con *con,
				const struct rtrs_msg_conn_rsp *rsp)
{
	struct rtrs_clt_path *path = to_clt_path(con->c.path);
	struct rdma_cm_id *cm_id = con->c.cm_id;

	path->queue_depth = le16_to_cpu(rsp->queue_depth);
	path->max_io_size = le32_to_cpu(rsp->max_io_size);
	path->max_hdr_size = le32_to_cpu(rsp->max_hdr_size);
	path->flags = le32_to_cpu(rsp->flags);
	path->chunk_size = path->max_io_size + path->max_hdr_size;
	if (!path->queue_depth || path->max_hdr_size <
	    sizeof(struct rtrs_msg_rdma_read) + sizeof(struct rtrs_sg_desc))
		return -EINVAL;
	path->hca_port = cm_id->port_num;
	strscpy(path->hca_name, dev_name(&cm_id->device->dev),
		sizeof(path->hca_name));
	memcpy(&path->s.src_addr, &cm_id->route.addr.src_addr,
	       sizeof(path->s.src_addr));
	return 0;
}

static int rtrs_clt_established(struct rtrs_clt_con *con,
				const struct rdma_cm_event *ev)
{
	const struct rtrs_msg_conn_rsp *rsp = ev->param.conn.private_data;

	if (ev->param.conn.private_data_len < sizeof(*rsp) ||
	    le16_to_cpu(rsp->magic) != RTRS_MAGIC)
		return -ECONNRESET;
	if (le16_to_cpu(rsp->version) >> 8 != RTRS_PROTO_VER_MAJOR)
		return -EPROTONOSUPPORT;
	if (rsp->errno)
		return -abs((s16)le16_to_cpu(rsp->errno));
	con->established = true;
	if (con->c.cid)
		return 0;
	return rtrs_clt_take_limits(con, rsp);
}

static int rtrs_clt_rejected(struct rtrs_clt_con *con,
			     struct rdma_cm_event *ev)
{
	const struct rtrs_msg_conn_rsp *rsp;
	int err = -ECONNRESET;
	u8 len;

	rsp = rdma_consumer_reject_data(con->c.cm_id, ev, &len);
	if (rsp && len >= sizeof(*rsp) &&
	    le16_to_cpu(rsp->magic) == RTRS_MAGIC && rsp->errno)
		err = -abs((s16)le16_to_cpu(rsp->errno));
	rtrs_path_err(con->c.path, "connection %u rejected: %s (%d)\n",
		      con->c.cid, rdma_reject_msg(con->c.cm_id, ev->status),
		      err);
	return err;
}

static int rtrs_clt_cm_handler(struct rdma_cm_id *cm_id,
			       struct rdma_cm_event *ev)
{
	struct rtrs_clt_con *con = cm_id->context;
	int err;

	/* Given up on: what it makes now, its teardown would not see. */
	if (con->abandoned)
		return 0;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		err = rdma_resolve_route(cm_id, RTRS_CLT_CONNECT_TIMEOUT_MS);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		err = rtrs_clt_route_resolved(con);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		rtrs_clt_cm_finish(con, rtrs_clt_established(con, ev));
		return 0;
	case RDMA_CM_EVENT_REJECTED:
		err = rtrs_clt_rejected(con, ev);
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return 0;
	default:
		rtrs_path_info(con->c.path, "connection %u: %s (%d)\n",
			       con->c.cid, rdma_event_msg(ev->event),
			       ev->status);
		err = -ECONNRESET;
		break;
	}
	if (err)
		rtrs_clt_cm_finish(con, err);
	/* Never non-zero: the connection's teardown destroys cm_id. */
	return 0;
}

/*
 * Stop the CM handler of a connection given up on while it may still be
 * running: it could be creating the QP that the teardown is about to
 * destroy, or create one after it.  The handler runs under the cm_id's
 * handler lock, so once this took it, the handler is done and sees
 * @abandoned from then on.
 */
static void rtrs_clt_con_abandon(struct rtrs_clt_con *con)
{
	rdma_lock_handler(con->c.cm_id);
	con->abandoned = true;
	rdma_unlock_handler(con->c.cm_id);
}

/* Connected, failed, or to give up: the path is stopped. */
static bool rtrs_clt_con_settled(struct rtrs_clt_con *con)
{
	/* Pairs with rtrs_clt_cm_finish(): cm_err is set before. */
	return smp_load_acquire(&con->cm_finished) ||
	       rtrs_clt_path_state(to_clt_path(con->c.path)) ==
	       RTRS_CLT_STOPPING;
}

int rtrs_clt_con_open(struct rtrs_clt_path *path, unsigned int cid)
{
	unsigned long timeout = msecs_to_jiffies(RTRS_CLT_CONNECT_TIMEOUT_MS);
	struct rtrs_clt_con *con;
	struct rdma_cm_id *cm_id;
	int err;

	con = kzalloc(sizeof(*con), GFP_KERNEL);
	if (!con)
		return -ENOMEM;
	con->c.path = &path->s;
	con->c.cid = cid;
	path->s.con[cid] = &con->c;

	cm_id = rdma_create_id(&init_net, rtrs_clt_cm_handler, con,
			       path->s.dst_addr.ss_family == AF_IB ?
			       RDMA_PS_IB : RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(cm_id))
		return PTR_ERR(cm_id);
	con->c.cm_id = cm_id;
	err = rdma_set_reuseaddr(cm_id, 1);
	if (err)
		return err;
	err = rdma_resolve_addr(cm_id, (struct sockaddr *)&path->s.src_addr,
				(struct sockaddr *)&path->s.dst_addr,
				RTRS_CLT_CONNECT_TIMEOUT_MS);
	if (err)
		return err;
	if (!wait_event_timeout(path->setup_wq, rtrs_clt_con_settled(con),
				2 * timeout)) {
		rtrs_clt_con_abandon(con);
		return -ETIMEDOUT;
	}
	/* Woken because the path is stopped: give up. */
	if (!smp_load_acquire(&con->cm_finished)) {
		rtrs_clt_con_abandon(con);
		return -ECONNABORTED;
	}
	return con->cm_err;
}

/* Teardown */

/*
 * Wait for the completions of every work request posted.  Connection 0
 * last: the responses the IO connections reap while they drain post
 * invalidations on it (rtrs_clt_local_inv()).
 */
void rtrs_clt_drain_cons(struct rtrs_clt_path *path)
{
	struct rtrs_clt_con *con;
	unsigned int cid;

	for (cid = path->s.con_num; cid-- > 0;) {
		if (!path->s.con[cid])
			continue;
		con = to_clt_con(path->s.con[cid]);
		if (con->established && con->c.qp)
			ib_drain_qp(con->c.qp);
	}
}

void rtrs_clt_destroy_qps(struct rtrs_clt_path *path)
{
	unsigned int cid;

	for (cid = 0; cid < path->s.con_num; cid++) {
		if (path->s.con[cid])
			rtrs_con_destroy_qp(path->s.con[cid]);
	}
}

void rtrs_clt_destroy_cons(struct rtrs_clt_path *path)
{
	struct rtrs_clt_con *con;
	unsigned int cid;

	for (cid = 0; cid < path->s.con_num; cid++) {
		if (!path->s.con[cid])
			continue;
		con = to_clt_con(path->s.con[cid]);
		if (con->c.cm_id)
			rdma_destroy_id(con->c.cm_id);
		if (con->rx_ius)
			rtrs_clt_free_rx(con);
		kfree(con);
		path->s.con[cid] = NULL;
	}
}
