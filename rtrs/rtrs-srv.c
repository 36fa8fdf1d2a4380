// SPDX-License-Identifier: GPL-2.0-only
/*
 * RTRS server: accepts sessions, lends them memory chunks, serves their IO.
 *
 * A client opens a path of a session with one rdma_cm connection per CPU
 * plus an admin connection (cid 0).  Once all are established it asks for
 * the session's chunks (INFO_REQ); we register them on the path's device
 * and answer with their addresses and rkeys (INFO_RSP).  From then on the
 * client RDMA-writes each request into a chunk, with the chunk and the
 * offset of the request's trailer in the immediate; we hand the request to
 * the ULP and answer with an immediate that carries the chunk id and the
 * ULP's errno, after RDMA-writing the data of a READ to the client.
 *
 * Nothing that comes from the wire is trusted: every id, offset, length and
 * count is checked before use.  A malformed request with a valid chunk id
 * is answered with -EINVAL; anything else closes the path.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <rdma/ib.h>
#include <rdma/ib_cm.h>

#include "rtrs-srv.h"
#define CREATE_TRACE_POINTS
#include "rtrs-srv-trace.h"

/* Session chunks: sess_queue_depth of max_chunk_size bytes each. */
#define RTRS_SRV_DEF_QUEUE_DEPTH	512
#define RTRS_SRV_DEF_CHUNK_SIZE		SZ_128K
/* alloc_pages() of one chunk must stay reasonable. */
#define RTRS_SRV_MAX_CHUNK_SIZE		SZ_1M
/* REG_MRs posted at a time when a path registers its chunks. */
#define RTRS_SRV_REG_BATCH		32
/* A response is at most RDMA WRITE, SEND_WITH_INV, REG_MR and the IMM. */
#define RTRS_SRV_WRS_PER_IO		5

unsigned int rtrs_srv_queue_depth = RTRS_SRV_DEF_QUEUE_DEPTH;
unsigned int rtrs_srv_chunk_size = RTRS_SRV_DEF_CHUNK_SIZE;
bool rtrs_srv_always_invalidate = true;

static int rtrs_srv_set_queue_depth(const char *val,
				    const struct kernel_param *kp)
{
	unsigned int depth;

	if (kstrtouint(val, 0, &depth) || !depth ||
	    depth > RTRS_MAX_SESS_QUEUE_DEPTH) {
		pr_err("sess_queue_depth must be 1 to %u, got '%s'\n",
		       RTRS_MAX_SESS_QUEUE_DEPTH, val);
		return -EINVAL;
	}
	*(unsigned int *)kp->arg = depth;
	return 0;
}

static const struct kernel_param_ops rtrs_srv_queue_depth_ops = {
	.set = rtrs_srv_set_queue_depth,
	.get = param_get_uint,
};

static int rtrs_srv_set_chunk_size(const char *val,
				   const struct kernel_param *kp)
{
	unsigned int size;

	if (kstrtouint(val, 0, &size) || size < RTRS_MIN_CHUNK_SIZE ||
	    size > RTRS_SRV_MAX_CHUNK_SIZE || !is_power_of_2(size)) {
		pr_err("max_chunk_size must be a power of two from %u to %u, got '%s'\n",
		       RTRS_MIN_CHUNK_SIZE, RTRS_SRV_MAX_CHUNK_SIZE, val);
		return -EINVAL;
	}
	*(unsigned int *)kp->arg = size;
	return 0;
}

static const struct kernel_param_ops rtrs_srv_chunk_size_ops = {
	.set = rtrs_srv_set_chunk_size,
	.get = param_get_uint,
};

module_param_cb(sess_queue_depth, &rtrs_srv_queue_depth_ops,
		&rtrs_srv_queue_depth, 0444);
MODULE_PARM_DESC(sess_queue_depth,
		 "Chunks, so IOs in flight, per session (default 512; 1-65535, its next power of two times max_chunk_size at most 256 MiB: 2048 with 128 KiB chunks)");
module_param_cb(max_chunk_size, &rtrs_srv_chunk_size_ops,
		&rtrs_srv_chunk_size, 0444);
MODULE_PARM_DESC(max_chunk_size,
		 "Size of a chunk, the largest IO plus its header (power of two, 8 KiB-1 MiB, default 128 KiB)");
module_param_named(always_invalidate, rtrs_srv_always_invalidate, bool, 0444);
MODULE_PARM_DESC(always_invalidate,
		 "Invalidate a chunk's rkey while the ULP owns it, so a client cannot write into it (default Y)");

/* Paths' info and close work, and heartbeats. */
static struct workqueue_struct *rtrs_srv_wq;
/*
 * The requests on their way to the ULP.  Per CPU: a request stays on the
 * CPU whose softirq reaped it.  In the IO path of the clients' block
 * devices, hence WQ_MEM_RECLAIM; high priority as ib_core's own
 * completion workers are.
 */
static struct workqueue_struct *rtrs_srv_io_wq;

static void rtrs_srv_recv_done(struct ib_cq *cq, struct ib_wc *wc);
static void rtrs_srv_send_done(struct ib_cq *cq, struct ib_wc *wc);

/* Every bare receive (IMMs) and every send we do not wait for share these. */
static struct ib_cqe rtrs_srv_recv_cqe = { .done = rtrs_srv_recv_done };
static struct ib_cqe rtrs_srv_send_cqe = { .done = rtrs_srv_send_done };

static struct rtrs_srv_path *con_to_path(struct rtrs_con *c)
{
	return to_srv_path(c->path);
}

static bool rtrs_srv_change_state(struct rtrs_srv_path *path,
				  enum rtrs_srv_state from,
				  enum rtrs_srv_state to)
{
	return atomic_cmpxchg(&path->state, from, to) == from;
}

static enum rtrs_srv_state rtrs_srv_state(struct rtrs_srv_path *path)
{
	return atomic_read(&path->state);
}

/* Sessions */

static void rtrs_srv_free_chunks(struct rtrs_srv_sess *srv)
{
	unsigned int i;

	if (!srv->chunks)
		return;
	for (i = 0; i < srv->queue_depth; i++)
		if (srv->chunks[i])
			__free_pages(srv->chunks[i],
				     get_order(rtrs_srv_chunk_size));
	kfree(srv->chunks);
}

static void rtrs_srv_sess_release(struct device *dev)
{
	struct rtrs_srv_sess *srv = container_of(dev, struct rtrs_srv_sess,
						 dev);

	rtrs_srv_free_chunks(srv);
	mutex_destroy(&srv->chunks_mutex);
	kfree(srv);
}

static int rtrs_srv_alloc_chunks(struct rtrs_srv_sess *srv)
{
	struct page **chunks;
	unsigned int i;

	chunks = kcalloc(srv->queue_depth, sizeof(*chunks), GFP_KERNEL);
	if (!chunks)
		return -ENOMEM;
	for (i = 0; i < srv->queue_depth; i++) {
		chunks[i] = alloc_pages(GFP_KERNEL | __GFP_ZERO,
					get_order(rtrs_srv_chunk_size));
		if (!chunks[i])
			break;
	}
	/* Freed with the session even when some are missing. */
	srv->chunks = chunks;
	return i < srv->queue_depth ? -ENOMEM : 0;
}

/*
 * The session's chunks, made by the first path that goes up: not in the
 * connection manager's handler, where every other connection request
 * would wait for them, and not for paths that never go up.
 */
static int rtrs_srv_get_chunks(struct rtrs_srv_sess *srv)
{
	int err = 0;

	mutex_lock(&srv->chunks_mutex);
	if (!srv->chunks)
		err = rtrs_srv_alloc_chunks(srv);
	else if (!srv->chunks[srv->queue_depth - 1])
		err = -ENOMEM;
	mutex_unlock(&srv->chunks_mutex);
	return err;
}

static struct rtrs_srv_sess *rtrs_srv_sess_alloc(struct rtrs_srv_ctx *ctx,
						 const uuid_t *uuid)
{
	struct rtrs_srv_sess *srv;

	lockdep_assert_held(&ctx->mutex);
	srv = kzalloc(sizeof(*srv), GFP_KERNEL);
	if (!srv)
		return NULL;
	srv->ctx = ctx;
	uuid_copy(&srv->uuid, uuid);
	INIT_LIST_HEAD(&srv->paths);
	srv->queue_depth = rtrs_srv_queue_depth;
	srv->dev.class = &rtrs_srv_class;
	srv->dev.release = rtrs_srv_sess_release;
	mutex_init(&srv->chunks_mutex);
	device_initialize(&srv->dev);
	list_add(&srv->entry, &ctx->sess_list);
	return srv;
}

static struct rtrs_srv_sess *rtrs_srv_find_sess(struct rtrs_srv_ctx *ctx,
						const uuid_t *uuid)
{
	struct rtrs_srv_sess *srv;

	lockdep_assert_held(&ctx->mutex);
	list_for_each_entry(srv, &ctx->sess_list, entry)
		if (!srv->dying && uuid_equal(&srv->uuid, uuid))
			return srv;
	return NULL;
}

/* Does a session of the context, dying or not, have this name? */
static bool rtrs_srv_name_taken(struct rtrs_srv_ctx *ctx, const char *name)
{
	struct rtrs_srv_sess *srv;

	lockdep_assert_held(&ctx->mutex);
	list_for_each_entry(srv, &ctx->sess_list, entry)
		if (!strcmp(srv->sessname, name))
			return true;
	return false;
}

static struct rtrs_srv_path *rtrs_srv_find_path(struct rtrs_srv_sess *srv,
						const uuid_t *uuid)
{
	struct rtrs_srv_path *path;

	lockdep_assert_held(&srv->ctx->mutex);
	list_for_each_entry(path, &srv->paths, entry)
		if (uuid_equal(&path->s.uuid, uuid))
			return path;
	return NULL;
}

/* @srv leaves its context's list, and its chunks their reservation. */
static void rtrs_srv_sess_unlist(struct rtrs_srv_sess *srv)
{
	lockdep_assert_held(&srv->ctx->mutex);
	list_del(&srv->entry);
	rtrs_srv_release_sess(srv->ctx);
}

/*
 * The path left its session.  The last path takes the session with it: the
 * ULP hears DISCONNECTED and the context forgets the session.  Until its
 * directories, ours and the ULP's, are gone, the dying session keeps its
 * name from a new session, whose directories would have the same names.
 */
static void rtrs_srv_sess_del_path(struct rtrs_srv_path *path)
{
	struct rtrs_srv_sess *srv = path->srv;
	struct rtrs_srv_ctx *ctx = srv->ctx;
	bool last, announced;

	mutex_lock(&ctx->mutex);
	list_del_init(&path->entry);
	last = list_empty(&srv->paths);
	announced = last && srv->announced;
	if (last)
		srv->dying = true;
	mutex_unlock(&ctx->mutex);
	if (!last)
		return;
	if (announced)
		ctx->ops->link_ev(srv, RTRS_SRV_LINK_EV_DISCONNECTED, srv->priv);
	rtrs_srv_sess_sysfs_del(srv);
	mutex_lock(&ctx->mutex);
	rtrs_srv_sess_unlist(srv);
	mutex_unlock(&ctx->mutex);
	/* The reference of the context's list. */
	put_device(&srv->dev);
}

/* Paths */

static void rtrs_srv_ids_done(struct percpu_ref *ref)
{
	struct rtrs_srv_path *path = container_of(ref, struct rtrs_srv_path,
						  ids_inflight);

	complete(&path->ids_done);
}

static void rtrs_srv_info_work(struct work_struct *work);
static void rtrs_srv_close_work(struct work_struct *work);
static void rtrs_srv_io_work(struct work_struct *work);
static void rtrs_srv_hb_err(struct rtrs_path *s);

static void rtrs_srv_setup_timeout(struct work_struct *work)
{
	struct rtrs_srv_path *path = container_of(to_delayed_work(work),
						  struct rtrs_srv_path,
						  setup_dwork);

	if (rtrs_srv_state(path) != RTRS_SRV_CONNECTING)
		return;
	rtrs_path_err_rl(&path->s, "no INFO_REQ in half_open_timeout_ms, closing the path\n");
	rtrs_srv_close_path(path);
}

static int rtrs_srv_alloc_path_arrays(struct rtrs_srv_path *path,
				      unsigned int cid_num)
{
	unsigned int i, depth = path->srv->queue_depth;

	path->s.con = kcalloc(cid_num, sizeof(*path->s.con), GFP_KERNEL);
	path->mrs = kcalloc(depth, sizeof(*path->mrs), GFP_KERNEL);
	path->ops = kcalloc(depth, sizeof(*path->ops), GFP_KERNEL);
	if (!path->s.con || !path->mrs || !path->ops)
		return -ENOMEM;
	for (i = 0; i < depth; i++) {
		path->ops[i].path = path;
		path->ops[i].msg_id = i;
		INIT_WORK(&path->ops[i].work, rtrs_srv_io_work);
	}
	path->s.con_num = cid_num;
	return 0;
}

static struct rtrs_srv_path *
rtrs_srv_path_alloc(struct rtrs_srv_sess *srv,
		    const struct rtrs_msg_conn_req *req,
		    struct rdma_cm_id *cm_id)
{
	struct rtrs_srv_path *path;

	lockdep_assert_held(&srv->ctx->mutex);
	path = kzalloc(sizeof(*path), GFP_KERNEL);
	if (!path)
		return NULL;
	kobject_init(&path->kobj, &rtrs_srv_path_ktype);
	/* From here on, kobject_put() frees. */
	path->srv = srv;
	get_device(&srv->dev);
	uuid_copy(&path->s.uuid, &req->sess_uuid);
	path->recon_cnt = le16_to_cpu(req->recon_cnt);
	atomic_set(&path->state, RTRS_SRV_CONNECTING);
	memcpy(&path->s.dst_addr, &cm_id->route.addr.dst_addr,
	       sizeof(path->s.dst_addr));
	memcpy(&path->s.src_addr, &cm_id->route.addr.src_addr,
	       sizeof(path->s.src_addr));
	path->hca_port = cm_id->port_num;
	strscpy(path->s.sessname, "(connecting)", sizeof(path->s.sessname));
	INIT_WORK(&path->info_work, rtrs_srv_info_work);
	INIT_WORK(&path->close_work, rtrs_srv_close_work);
	INIT_DELAYED_WORK(&path->setup_dwork, rtrs_srv_setup_timeout);
	init_completion(&path->ids_done);
	rtrs_hb_init(&path->s, &rtrs_srv_send_cqe, rtrs_srv_hb_err,
		     rtrs_srv_wq);
	if (rtrs_srv_alloc_path_arrays(path, le16_to_cpu(req->cid_num)) ||
	    rtrs_wr_stats_alloc(&path->s) ||
	    percpu_ref_init(&path->ids_inflight, rtrs_srv_ids_done, 0,
			    GFP_KERNEL)) {
		kobject_put(&path->kobj);
		return NULL;
	}
	path->mem_bits = RTRS_IMM_PAYLOAD_BITS - order_base_2(srv->queue_depth);
	list_add_tail(&path->entry, &srv->paths);
	queue_delayed_work(rtrs_srv_wq, &path->setup_dwork,
			   rtrs_srv_half_open_timeout());
	return path;
}

/* The kobject's release: the last reference to the path is gone. */
void rtrs_srv_path_free(struct rtrs_srv_path *path)
{
	if (path->srv)
		put_device(&path->srv->dev);
	percpu_ref_exit(&path->ids_inflight);
	rtrs_wr_stats_free(&path->s);
	kfree(path->ops);
	kfree(path->mrs);
	kfree(path->s.con);
	kfree(path);
}

void rtrs_srv_close_path(struct rtrs_srv_path *path)
{
	if (rtrs_srv_change_state(path, RTRS_SRV_CONNECTING,
				  RTRS_SRV_CLOSING) ||
	    rtrs_srv_change_state(path, RTRS_SRV_CONNECTED, RTRS_SRV_CLOSING))
		queue_work(rtrs_srv_wq, &path->close_work);
}

static void rtrs_srv_hb_err(struct rtrs_path *s)
{
	rtrs_srv_close_path(to_srv_path(s));
}

/* Chunk registration, per path */

static int rtrs_srv_map_chunk(struct rtrs_srv_path *path, unsigned int i)
{
	struct ib_device *ib_dev = path->s.dev->ib_dev;
	struct rtrs_srv_mr *m = &path->mrs[i];
	int nents;

	if (sg_alloc_table(&m->sgt, 1, GFP_KERNEL))
		return -ENOMEM;
	sg_set_page(m->sgt.sgl, path->srv->chunks[i], rtrs_srv_chunk_size, 0);
	nents = ib_dma_map_sg(ib_dev, m->sgt.sgl, 1, DMA_BIDIRECTIONAL);
	if (!nents) {
		sg_free_table(&m->sgt);
		return -EIO;
	}
	m->mr = ib_alloc_mr(path->s.dev->pd, IB_MR_TYPE_MEM_REG,
			    rtrs_srv_chunk_size >> PAGE_SHIFT);
	if (IS_ERR(m->mr))
		goto out_unmap;
	if (ib_map_mr_sg(m->mr, m->sgt.sgl, 1, NULL, rtrs_srv_chunk_size) != 1)
		goto out_dereg;
	return 0;

out_dereg:
	ib_dereg_mr(m->mr);
out_unmap:
	m->mr = NULL;
	ib_dma_unmap_sg(ib_dev, m->sgt.sgl, 1, DMA_BIDIRECTIONAL);
	sg_free_table(&m->sgt);
	return -ENOMEM;
}

static void rtrs_srv_unmap_chunks(struct rtrs_srv_path *path)
{
	struct ib_device *ib_dev = path->s.dev->ib_dev;
	unsigned int i;

	for (i = 0; i < path->srv->queue_depth; i++) {
		struct rtrs_srv_mr *m = &path->mrs[i];

		if (!m->mr)
			continue;
		ib_dereg_mr(m->mr);
		ib_dma_unmap_sg(ib_dev, m->sgt.sgl, 1, DMA_BIDIRECTIONAL);
		sg_free_table(&m->sgt);
		m->mr = NULL;
	}
}

/**
 * struct rtrs_srv_reg_wait - a batch of REG_MRs posted and waited for
 * @cqe: completion of the batch's last, signaled, work request
 * @done: completed by @cqe
 * @status: its status
 */
struct rtrs_srv_reg_wait {
	struct ib_cqe cqe;
	struct completion done;
	enum ib_wc_status status;
};

static void rtrs_srv_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rtrs_srv_reg_wait *w = container_of(wc->wr_cqe,
						   struct rtrs_srv_reg_wait,
						   cqe);

	rtrs_wr_reaped(cq);
	w->status = wc->status;
	complete(&w->done);
}

/* Register chunks [first, first + n) on the admin connection and wait. */
static int rtrs_srv_reg_batch(struct rtrs_srv_path *path,
			      struct ib_reg_wr *wrs, unsigned int first,
			      unsigned int n)
{
	struct rtrs_srv_reg_wait w = { .cqe.done = rtrs_srv_reg_done };
	unsigned int i;
	int err;

	init_completion(&w.done);
	for (i = 0; i < n; i++) {
		rtrs_init_reg_wr(&wrs[i], path->mrs[first + i].mr,
				 &rtrs_srv_send_cqe);
		wrs[i].wr.next = i + 1 < n ? &wrs[i + 1].wr : NULL;
	}
	wrs[n - 1].wr.wr_cqe = &w.cqe;
	wrs[n - 1].wr.send_flags = IB_SEND_SIGNALED;
	err = rtrs_post_send(path->s.con[0], &wrs[0].wr);
	if (err)
		return err;
	wait_for_completion(&w.done);
	return w.status == IB_WC_SUCCESS ? 0 : -EIO;
}

static int rtrs_srv_reg_chunks(struct rtrs_srv_path *path)
{
	unsigned int i, n, depth = path->srv->queue_depth;
	struct ib_reg_wr *wrs;
	int err = 0;

	wrs = kcalloc(RTRS_SRV_REG_BATCH, sizeof(*wrs), GFP_KERNEL);
	if (!wrs)
		return -ENOMEM;
	for (i = 0; i < depth && !err; i += n) {
		n = min_t(unsigned int, depth - i, RTRS_SRV_REG_BATCH);
		err = rtrs_srv_reg_batch(path, wrs, i, n);
	}
	kfree(wrs);
	return err;
}

static int rtrs_srv_map_and_reg_chunks(struct rtrs_srv_path *path)
{
	unsigned int i, depth = path->srv->queue_depth;
	int err;

	for (i = 0; i < depth; i++) {
		err = rtrs_srv_map_chunk(path, i);
		if (err)
			goto out_unmap;
	}
	err = rtrs_srv_reg_chunks(path);
	if (err)
		goto out_unmap;
	return 0;

out_unmap:
	rtrs_srv_unmap_chunks(path);
	return err;
}

/* INFO_REQ and INFO_RSP */

static int rtrs_srv_send_info_rsp(struct rtrs_srv_path *path)
{
	unsigned int i, depth = path->srv->queue_depth;
	struct rtrs_msg_info_rsp *rsp;
	struct rtrs_iu *iu;
	size_t len;
	int err;

	len = struct_size(rsp, desc, depth);
	iu = rtrs_iu_alloc(path->s.dev->ib_dev, len, DMA_TO_DEVICE, GFP_KERNEL,
			   rtrs_srv_send_done);
	if (!iu)
		return -ENOMEM;
	rsp = iu->buf;
	rsp->type = cpu_to_le16(RTRS_MSG_INFO_RSP);
	rsp->sg_cnt = cpu_to_le16(depth);
	for (i = 0; i < depth; i++) {
		rsp->desc[i].addr = cpu_to_le64(path->mrs[i].mr->iova);
		rsp->desc[i].key = cpu_to_le32(path->mrs[i].mr->rkey);
		rsp->desc[i].len = cpu_to_le32(rtrs_srv_chunk_size);
	}
	/*
	 * The send completes in rtrs_srv_send_done(), which does not know the
	 * iu; wait for the queue to drain on close instead of freeing it
	 * there: keep it until the path is freed.
	 */
	path->info_iu_rsp = iu;
	err = rtrs_iu_post_send(path->s.con[0], iu, len, NULL);
	return err;
}

/*
 * What is wrong with a session name, or NULL.  It names the session's sysfs
 * directory and is in the server's log: sysfs would turn a '/' into a '!',
 * which another session may be named; "." and ".." are directory names
 * already; control characters would forge lines of the log.
 */
static const char *rtrs_srv_bad_name(const char *name)
{
	const char *c;

	if (strchr(name, '/'))
		return "has a '/'";
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return "is a directory's own name";
	for (c = name; *c; c++)
		if (iscntrl(*c))
			return "has a control character";
	return NULL;
}

/* Take the session's name from the first INFO_REQ of the session. */
static int rtrs_srv_take_name(struct rtrs_srv_path *path,
			      const struct rtrs_msg_info_req *req)
{
	struct rtrs_srv_sess *srv = path->srv;
	char name[NAME_MAX];
	const char *why;
	int err = 0;

	if (!memchr(req->pathname, '\0', sizeof(req->pathname)) ||
	    !req->pathname[0]) {
		rtrs_path_err_rl(&path->s, "INFO_REQ without a session name\n");
		trace_rtrs_srv_bad_msg(path, "INFO_REQ without a session name");
		return -EINVAL;
	}
	strscpy(name, req->pathname, sizeof(name));
	why = rtrs_srv_bad_name(name);
	if (why) {
		rtrs_path_err_rl(&path->s, "session name '%*pE' %s\n",
				 (int)strlen(name), name, why);
		trace_rtrs_srv_bad_msg(path, "bad session name");
		return -EINVAL;
	}
	mutex_lock(&srv->ctx->mutex);
	if (srv->sessname[0])
		err = strcmp(srv->sessname, name) ? -EINVAL : 0;
	else if (rtrs_srv_name_taken(srv->ctx, name))
		err = -EEXIST;
	else
		strscpy(srv->sessname, name, sizeof(srv->sessname));
	mutex_unlock(&srv->ctx->mutex);
	if (err == -EEXIST) {
		rtrs_path_err_rl(&path->s, "session name '%s' is another session's\n",
				 name);
		return err;
	}
	if (err) {
		rtrs_path_err_rl(&path->s, "path names session '%s', not '%s'\n",
				 name, srv->sessname);
		return err;
	}
	strscpy(path->s.sessname, name, sizeof(path->s.sessname));
	return 0;
}

/* The path is up: tell the ULP if the session is new to it. */
static int rtrs_srv_path_up(struct rtrs_srv_path *path)
{
	struct rtrs_srv_sess *srv = path->srv;
	struct rtrs_srv_ctx *ctx = srv->ctx;
	bool announce;
	int err = 0;

	mutex_lock(&ctx->mutex);
	announce = !srv->announced;
	srv->announced = true;
	mutex_unlock(&ctx->mutex);
	if (announce)
		err = ctx->ops->link_ev(srv, RTRS_SRV_LINK_EV_CONNECTED,
					srv->priv);
	if (err) {
		mutex_lock(&ctx->mutex);
		srv->announced = false;
		mutex_unlock(&ctx->mutex);
		return err;
	}
	if (ctx->ops->path_up)
		err = ctx->ops->path_up(srv,
					(struct sockaddr *)&path->s.dst_addr,
					srv->priv);
	return err;
}

/*
 * The client sends INFO_REQ once all its connections are up, and each of
 * them was ours before it was up for the client.
 */
static bool rtrs_srv_all_cons(struct rtrs_srv_path *path)
{
	unsigned int cid;
	bool all = true;

	mutex_lock(&path->srv->ctx->mutex);
	for (cid = 0; cid < path->s.con_num; cid++)
		if (!path->s.con[cid])
			all = false;
	mutex_unlock(&path->srv->ctx->mutex);
	return all;
}

static int rtrs_srv_handle_info_req(struct rtrs_srv_path *path)
{
	const struct rtrs_msg_info_req *req = path->info_iu->buf;
	int err;

	if (!rtrs_srv_all_cons(path)) {
		rtrs_path_err_rl(&path->s, "INFO_REQ before all %u connections connected\n",
				 path->s.con_num);
		trace_rtrs_srv_bad_msg(path, "INFO_REQ before all connections");
		return -EINVAL;
	}
	err = rtrs_srv_take_name(path, req);
	if (err)
		return err;
	err = rtrs_srv_sess_sysfs_add(path->srv);
	if (err)
		return err;
	err = rtrs_srv_get_chunks(path->srv);
	if (err) {
		rtrs_path_err_rl(&path->s, "no memory for the session's chunks\n");
		return err;
	}
	err = rtrs_srv_map_and_reg_chunks(path);
	if (err) {
		rtrs_path_err_rl(&path->s, "cannot register the chunks: %d\n",
				 err);
		return err;
	}
	if (!rtrs_srv_change_state(path, RTRS_SRV_CONNECTING,
				   RTRS_SRV_CONNECTED))
		return -ECONNRESET;
	/* The ULP knows the session before the client can send it IO. */
	err = rtrs_srv_path_up(path);
	if (err)
		return err;
	err = rtrs_srv_send_info_rsp(path);
	if (err)
		return err;
	rtrs_srv_path_sysfs_add(path);
	rtrs_hb_start(&path->s);
	return 0;
}

static void rtrs_srv_info_work(struct work_struct *work)
{
	struct rtrs_srv_path *path = container_of(work, struct rtrs_srv_path,
						  info_work);
	int err;

	err = rtrs_srv_handle_info_req(path);
	if (err) {
		rtrs_path_err_rl(&path->s, "path setup failed: %d\n", err);
		rtrs_srv_close_path(path);
		return;
	}
	rtrs_path_info(&path->s, "path up with %u connections\n",
		       path->s.con_num);
	trace_rtrs_srv_path_connected(path);
}

static void rtrs_srv_info_req_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rtrs_con *c = cq->cq_context;
	struct rtrs_srv_path *path = con_to_path(c);
	const struct rtrs_msg_info_req *req = path->info_iu->buf;

	rtrs_wr_reaped(cq);
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			rtrs_path_err_rl(&path->s, "INFO_REQ receive failed: %s\n",
					 ib_wc_status_msg(wc->status));
		rtrs_srv_close_path(path);
		return;
	}
	ib_dma_sync_single_for_cpu(path->s.dev->ib_dev, path->info_iu->dma_addr,
				   path->info_iu->size, DMA_FROM_DEVICE);
	if (wc->byte_len < sizeof(*req) ||
	    le16_to_cpu(req->type) != RTRS_MSG_INFO_REQ) {
		rtrs_path_err_rl(&path->s, "expected INFO_REQ, got %u bytes of type %u\n",
				 wc->byte_len, le16_to_cpu(req->type));
		trace_rtrs_srv_bad_msg(path, "not an INFO_REQ");
		rtrs_srv_close_path(path);
		return;
	}
	rtrs_hb_heard(&path->s);
	/*
	 * The client did its part.  What remains is ours: allocating and
	 * registering the chunks, which a slow machine takes tens of seconds
	 * for, is not charged to the client.  A timeout already running
	 * closes the path anyway.
	 */
	cancel_delayed_work(&path->setup_dwork);
	queue_work(rtrs_srv_wq, &path->info_work);
}

/* IO */

static void *rtrs_srv_chunk(struct rtrs_srv_path *path, u32 id)
{
	return page_address(path->srv->chunks[id]);
}

/*
 * The chunk is free for the client's next request.  The client reuses it as
 * soon as our response reaches it, which may be before ib_post_send() has
 * returned to us: free it before the response goes.
 */
static void rtrs_srv_free_chunk(struct rtrs_srv_op *op)
{
	atomic_set_release(&op->busy, 0);
}

static void rtrs_srv_release_op(struct rtrs_srv_op *op)
{
	rtrs_srv_free_chunk(op);
	percpu_ref_put(&op->path->ids_inflight);
}

/*
 * The work requests of one response: the re-registration of our chunk, the
 * data of a READ, the remote invalidation of the client's MR and the
 * immediate that completes the request.
 */
struct rtrs_srv_rsp_wrs {
	struct ib_reg_wr reg;
	struct ib_rdma_wr data;
	struct ib_sge data_sge;
	struct ib_send_wr inv;
	struct ib_rdma_wr imm;
};

static struct ib_send_wr *rtrs_srv_chain(struct ib_send_wr **tail,
					 struct ib_send_wr *wr)
{
	(*tail)->next = wr;
	*tail = wr;
	return wr;
}

/*
 * always_invalidate: the chunk, invalidated while the ULP had it, is the
 * client's again.  It comes back under the rkey the client already has:
 * what always_invalidate guards is the time the ULP owns the chunk, and
 * the client is told any new rkey anyway, so a new one would only cost a
 * message (an RKEY_RSP) to carry it.  First in the response, so the
 * client, once answered, finds the chunk registered.
 */
static void rtrs_srv_prep_reg(struct rtrs_srv_op *op,
			      struct rtrs_srv_rsp_wrs *w)
{
	rtrs_init_reg_wr(&w->reg, op->path->mrs[op->msg_id].mr,
			 &rtrs_srv_send_cqe);
}

static void rtrs_srv_prep_data(struct rtrs_srv_op *op,
			       struct rtrs_srv_rsp_wrs *w)
{
	struct rtrs_srv_path *path = op->path;
	struct rtrs_srv_mr *m = &path->mrs[op->msg_id];

	ib_dma_sync_single_for_device(path->s.dev->ib_dev,
				      sg_dma_address(m->sgt.sgl),
				      le32_to_cpu(op->remote.len),
				      DMA_BIDIRECTIONAL);
	w->data_sge.addr = sg_dma_address(m->sgt.sgl);
	w->data_sge.length = le32_to_cpu(op->remote.len);
	w->data_sge.lkey = path->s.dev->pd->local_dma_lkey;
	w->data.wr.opcode = IB_WR_RDMA_WRITE;
	w->data.wr.wr_cqe = &rtrs_srv_send_cqe;
	w->data.wr.sg_list = &w->data_sge;
	w->data.wr.num_sge = 1;
	w->data.remote_addr = le64_to_cpu(op->remote.addr);
	w->data.rkey = le32_to_cpu(op->remote.key);
}

static void rtrs_srv_prep_inv(struct rtrs_srv_op *op,
			      struct rtrs_srv_rsp_wrs *w)
{
	w->inv.opcode = IB_WR_SEND_WITH_INV;
	w->inv.wr_cqe = &rtrs_srv_send_cqe;
	w->inv.ex.invalidate_rkey = le32_to_cpu(op->remote.key);
}

static int rtrs_srv_post_rsp(struct rtrs_srv_op *op, int errno)
{
	struct rtrs_con *con = &op->con->c;
	struct rtrs_srv_rsp_wrs w = {};
	struct ib_send_wr head = {}, *tail = &head, *imm = &w.imm.wr;

	if (rtrs_srv_always_invalidate) {
		rtrs_srv_prep_reg(op, &w);
		rtrs_srv_chain(&tail, &w.reg.wr);
	}
	if (op->dir == READ && !errno && le32_to_cpu(op->remote.len)) {
		rtrs_srv_prep_data(op, &w);
		rtrs_srv_chain(&tail, &w.data.wr);
	}
	if (op->need_inval) {
		rtrs_srv_prep_inv(op, &w);
		rtrs_srv_chain(&tail, &w.inv);
	}
	/*
	 * With nothing to do between the data and the immediate, the data's
	 * own write carries the immediate: one message, not two, and the
	 * client's receive completes once the data is in place.
	 */
	if (tail == &w.data.wr)
		imm = &w.data.wr;
	else
		rtrs_srv_chain(&tail, &w.imm.wr);
	imm->opcode = IB_WR_RDMA_WRITE_WITH_IMM;
	imm->wr_cqe = &rtrs_srv_send_cqe;
	imm->send_flags = rtrs_con_sig_flags(con);
	imm->ex.imm_data = cpu_to_be32(rtrs_io_rsp_imm(op->msg_id, errno,
						       op->need_inval));
	rtrs_srv_free_chunk(op);
	return rtrs_post_send(con, head.next);
}

/**
 * rtrs_srv_resp_rdma() - answer a request the ULP got through rdma_ev
 * @id: the request
 * @errno: 0 or a negative errno for the client
 *
 * Context: any; does not sleep.
 * Return: true; the request is done with either way.
 */
bool rtrs_srv_resp_rdma(struct rtrs_srv_op *id, int errno)
{
	struct rtrs_srv_path *path = id->path;
	int err;

	if (rtrs_srv_state(path) != RTRS_SRV_CONNECTED) {
		rtrs_srv_release_op(id);
		return true;
	}
	trace_send_io_resp_imm(id, errno, rtrs_srv_always_invalidate);
	/* It frees the chunk: @id may be the client's next request after it. */
	err = rtrs_srv_post_rsp(id, errno);
	if (err) {
		rtrs_path_err_rl(&path->s, "cannot post a response: %d\n", err);
		rtrs_srv_close_path(path);
	}
	percpu_ref_put(&path->ids_inflight);
	return true;
}
EXPORT_SYMBOL_GPL(rtrs_srv_resp_rdma);

static int rtrs_srv_check_write(struct rtrs_srv_op *op, void *chunk)
{
	const struct rtrs_msg_rdma_write *msg = chunk + op->off;

	if (op->off + sizeof(*msg) > rtrs_srv_chunk_size)
		return -EINVAL;
	op->usr_len = le16_to_cpu(msg->usr_len);
	if (op->usr_len > op->off || op->usr_len > RTRS_SRV_MAX_HDR_SIZE)
		return -EINVAL;
	op->data_len = op->off - op->usr_len;
	op->dir = WRITE;
	return 0;
}

static int rtrs_srv_check_read(struct rtrs_srv_op *op, void *chunk)
{
	const struct rtrs_msg_rdma_read *msg = chunk + op->off;
	u16 sg_cnt, flags;

	if (op->off + sizeof(*msg) > rtrs_srv_chunk_size)
		return -EINVAL;
	sg_cnt = le16_to_cpu(msg->sg_cnt);
	flags = le16_to_cpu(msg->flags);
	op->usr_len = le16_to_cpu(msg->usr_len);
	if (sg_cnt > 1 || flags & ~RTRS_MSG_NEED_INVAL_F ||
	    op->usr_len > op->off || op->usr_len > RTRS_SRV_MAX_HDR_SIZE ||
	    op->off + struct_size(msg, desc, sg_cnt) > rtrs_srv_chunk_size)
		return -EINVAL;
	op->dir = READ;
	if (!sg_cnt)
		return 0;
	op->remote = msg->desc[0];
	op->data_len = le32_to_cpu(op->remote.len);
	if (op->data_len > rtrs_srv_chunk_size)
		return -EINVAL;
	op->need_inval = flags & RTRS_MSG_NEED_INVAL_F;
	return 0;
}

/* Check the request's trailer and hand the request to the ULP. */
static void rtrs_srv_process_io(struct rtrs_srv_op *op)
{
	struct rtrs_srv_path *path = op->path;
	struct rtrs_srv_mr *m = &path->mrs[op->msg_id];
	void *chunk = rtrs_srv_chunk(path, op->msg_id);
	const struct rtrs_msg_rdma_write *hdr = chunk + op->off;
	int err = -EINVAL;

	ib_dma_sync_single_for_cpu(path->s.dev->ib_dev,
				   sg_dma_address(m->sgt.sgl),
				   rtrs_srv_chunk_size, DMA_BIDIRECTIONAL);
	if (op->off + sizeof(hdr->type) <= rtrs_srv_chunk_size) {
		switch (le16_to_cpu(hdr->type)) {
		case RTRS_MSG_WRITE:
			err = rtrs_srv_check_write(op, chunk);
			break;
		case RTRS_MSG_READ:
			err = rtrs_srv_check_read(op, chunk);
			break;
		}
	}
	if (err) {
		rtrs_path_err_rl(&path->s, "malformed request in chunk %u\n",
				 op->msg_id);
		trace_rtrs_srv_bad_msg(path, "malformed request");
		rtrs_srv_resp_rdma(op, err);
		return;
	}
	if (op->dir == READ) {
		atomic64_inc(&path->stats_read_cnt);
		atomic64_add(op->usr_len + op->data_len,
			     &path->stats_read_bytes);
	} else {
		atomic64_inc(&path->stats_write_cnt);
		atomic64_add(op->usr_len + op->data_len,
			     &path->stats_write_bytes);
	}
	err = path->srv->ctx->ops->rdma_ev(path->srv->priv, op, chunk,
					   op->data_len,
					   chunk + op->off - op->usr_len,
					   op->usr_len);
	if (err)
		rtrs_srv_resp_rdma(op, err);
}

static void rtrs_srv_io_work(struct work_struct *work)
{
	struct rtrs_srv_op *op = container_of(work, struct rtrs_srv_op, work);

	/* A path closed meanwhile has no one to answer. */
	if (rtrs_srv_state(op->path) != RTRS_SRV_CONNECTED) {
		rtrs_srv_release_op(op);
		return;
	}
	rtrs_srv_process_io(op);
}

/*
 * The CQs are polled in softirq, where the ULP, which submits bios, may
 * not run.  Its part runs in a work item; the verbs' part, a chunk's
 * invalidation included, is done before, without a worker's wake-up.
 */
static void rtrs_srv_queue_io(struct rtrs_srv_op *op)
{
	queue_work(rtrs_srv_io_wq, &op->work);
}

static void rtrs_srv_inv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rtrs_srv_mr *m = container_of(wc->wr_cqe, struct rtrs_srv_mr,
					     inv_cqe);
	struct rtrs_con *c = cq->cq_context;
	struct rtrs_srv_path *path = con_to_path(c);
	struct rtrs_srv_op *op = &path->ops[m - path->mrs];

	rtrs_wr_reaped(cq);
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			rtrs_path_err_rl(&path->s, "chunk invalidation failed: %s\n",
					 ib_wc_status_msg(wc->status));
		rtrs_srv_release_op(op);
		rtrs_srv_close_path(path);
		return;
	}
	rtrs_srv_queue_io(op);
}

/*
 * always_invalidate: the chunk's rkey dies before the ULP sees the data.
 * Posted on the admin connection, not on the request's: a send queue
 * completes in order, and on the request's the invalidation would wait
 * for the acknowledgements of every response posted before it, a round
 * trip to the client for each request.  The admin connection's queue is
 * all but empty while IO flows, and sized for every chunk's work requests.
 */
static int rtrs_srv_invalidate_chunk(struct rtrs_srv_op *op)
{
	struct rtrs_srv_path *path = op->path;
	struct rtrs_srv_mr *m = &path->mrs[op->msg_id];
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.wr_cqe = &m->inv_cqe,
		.send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = m->mr->rkey,
	};

	m->inv_cqe.done = rtrs_srv_inv_done;
	return rtrs_post_send(path->s.con[0], &wr);
}

static int rtrs_srv_io_req(struct rtrs_srv_con *con, u32 payload)
{
	struct rtrs_srv_path *path = con_to_path(&con->c);
	u32 id = payload >> path->mem_bits;
	struct rtrs_srv_op *op;

	if (id >= path->srv->queue_depth) {
		rtrs_path_err_rl(&path->s, "request for chunk %u of %u\n", id,
				 path->srv->queue_depth);
		trace_rtrs_srv_bad_msg(path, "request for a chunk beyond the queue");
		return -EINVAL;
	}
	op = &path->ops[id];
	if (atomic_cmpxchg(&op->busy, 0, 1)) {
		rtrs_path_err_rl(&path->s, "chunk %u is already in use\n", id);
		trace_rtrs_srv_bad_msg(path, "request for a chunk in use");
		return -EINVAL;
	}
	if (!percpu_ref_tryget_live(&path->ids_inflight)) {
		atomic_set(&op->busy, 0);
		return -ECONNRESET;
	}
	op->con = con;
	op->off = payload & ((1U << path->mem_bits) - 1);
	op->need_inval = false;
	op->usr_len = 0;
	op->data_len = 0;
	memset(&op->remote, 0, sizeof(op->remote));
	/*
	 * An offset beyond the chunk is refused by rtrs_srv_process_io(), after
	 * the invalidation: the response re-registers the chunk, which needs
	 * its rkey invalidated first.
	 */
	if (!rtrs_srv_always_invalidate) {
		rtrs_srv_queue_io(op);
		return 0;
	}
	if (rtrs_srv_invalidate_chunk(op)) {
		rtrs_srv_release_op(op);
		return -EIO;
	}
	return 0;
}

/*
 * Heartbeats go on the admin connection of a path that is up, and are
 * answered there: before the path is up, connection 0 may not even exist.
 * A path being closed still receives those the client sent before it
 * knew: they are no fault of the client's.
 */
static int rtrs_srv_hb_imm(struct rtrs_srv_con *con, unsigned int type)
{
	struct rtrs_srv_path *path = con_to_path(&con->c);
	enum rtrs_srv_state state = rtrs_srv_state(path);

	if (state == RTRS_SRV_CLOSING || state == RTRS_SRV_CLOSED)
		return 0;
	if (con->c.cid || state != RTRS_SRV_CONNECTED) {
		rtrs_path_err_rl(&path->s, "heartbeat on connection %u, not 0 of a path up\n",
				 con->c.cid);
		trace_rtrs_srv_bad_msg(path, "heartbeat out of place");
		return -EINVAL;
	}
	if (type == RTRS_HB_MSG_IMM)
		rtrs_hb_send_ack(&path->s);
	else
		rtrs_hb_ack_received(&path->s);
	return 0;
}

static int rtrs_srv_handle_imm(struct rtrs_srv_con *con, u32 imm)
{
	struct rtrs_srv_path *path = con_to_path(&con->c);

	switch (rtrs_imm_type(imm)) {
	case RTRS_IO_REQ_IMM:
		if (rtrs_srv_state(path) != RTRS_SRV_CONNECTED)
			return -EINVAL;
		return rtrs_srv_io_req(con, rtrs_imm_payload(imm));
	case RTRS_HB_MSG_IMM:
	case RTRS_HB_ACK_IMM:
		return rtrs_srv_hb_imm(con, rtrs_imm_type(imm));
	default:
		rtrs_path_err_rl(&path->s, "unknown immediate type %u\n",
				 rtrs_imm_type(imm));
		trace_rtrs_srv_bad_msg(path, "unknown immediate type");
		return -EINVAL;
	}
}

static void rtrs_srv_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rtrs_srv_con *con = to_srv_con(cq->cq_context);
	struct rtrs_srv_path *path = con_to_path(&con->c);
	int err;

	rtrs_wr_reaped(cq);
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			rtrs_path_err_rl(&path->s, "receive failed: %s\n",
					 ib_wc_status_msg(wc->status));
		rtrs_srv_close_path(path);
		return;
	}
	if (wc->opcode != IB_WC_RECV_RDMA_WITH_IMM) {
		rtrs_path_err_rl(&path->s, "unexpected receive opcode %d\n",
				 wc->opcode);
		trace_rtrs_srv_bad_msg(path, "unexpected receive opcode");
		rtrs_srv_close_path(path);
		return;
	}
	rtrs_hb_heard(&path->s);
	err = rtrs_post_recv_empty(&con->c, &rtrs_srv_recv_cqe);
	if (!err)
		err = rtrs_srv_handle_imm(con, be32_to_cpu(wc->ex.imm_data));
	if (err)
		rtrs_srv_close_path(path);
}

static void rtrs_srv_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rtrs_srv_path *path = con_to_path(cq->cq_context);

	rtrs_wr_reaped(cq);
	if (wc->status == IB_WC_SUCCESS)
		return;
	if (wc->status != IB_WC_WR_FLUSH_ERR)
		rtrs_path_err_rl(&path->s, "send failed: %s\n",
				 ib_wc_status_msg(wc->status));
	rtrs_srv_close_path(path);
}

/* Connections */

static int rtrs_srv_check_conn_req(const struct rdma_cm_event *ev)
{
	const struct rtrs_msg_conn_req *req = ev->param.conn.private_data;
	u16 cid, cid_num;

	if (ev->param.conn.private_data_len < sizeof(*req)) {
		pr_err_ratelimited("connection request with %u bytes of private data\n",
				   ev->param.conn.private_data_len);
		return -EINVAL;
	}
	if (le16_to_cpu(req->magic) != RTRS_MAGIC ||
	    le16_to_cpu(req->version) >> 8 != RTRS_PROTO_VER_MAJOR) {
		pr_err_ratelimited("connection request of magic %#x version %#x: not RTRS %d.x\n",
				   le16_to_cpu(req->magic),
				   le16_to_cpu(req->version),
				   RTRS_PROTO_VER_MAJOR);
		return -EPROTONOSUPPORT;
	}
	cid = le16_to_cpu(req->cid);
	cid_num = le16_to_cpu(req->cid_num);
	if (cid_num < 2 || cid >= cid_num) {
		pr_err_ratelimited("connection request for connection %u of %u\n",
				   cid, cid_num);
		return -EINVAL;
	}
	return rtrs_srv_admit_cons(cid_num);
}

/*
 * The path of @srv between the two addresses of @cm_id, if there is one:
 * its sysfs directory has the name a new one would get.
 */
static struct rtrs_srv_path *
rtrs_srv_path_by_addr(struct rtrs_srv_sess *srv, struct rdma_cm_id *cm_id)
{
	char name[RTRS_SRV_PATH_NAME_MAX], other[RTRS_SRV_PATH_NAME_MAX];
	struct rtrs_srv_path *path;

	lockdep_assert_held(&srv->ctx->mutex);
	if (rtrs_srv_path_name(&cm_id->route.addr.dst_addr,
			       &cm_id->route.addr.src_addr, name, sizeof(name)))
		return NULL;
	list_for_each_entry(path, &srv->paths, entry)
		if (!rtrs_srv_path_name(&path->s.dst_addr, &path->s.src_addr,
					other, sizeof(other)) &&
		    !strcmp(name, other))
			return path;
	return NULL;
}

/*
 * A new path between the addresses of @old: a duplicate while @old is up,
 * else a path the client removed and added again before we were done
 * closing it, which it may retry in a moment (EAGAIN).
 */
static int rtrs_srv_addr_taken(struct rtrs_srv_path *old)
{
	switch (rtrs_srv_state(old)) {
	case RTRS_SRV_CONNECTING:
	case RTRS_SRV_CONNECTED:
		pr_err_ratelimited("%s: a path between these addresses exists\n",
				   old->srv->sessname);
		return -EEXIST;
	default:
		pr_info_ratelimited("%s: the old path between these addresses is still closing\n",
				    old->srv->sessname);
		return -EAGAIN;
	}
}

/*
 * The path a connection request belongs to, made if new.  A path of the
 * same uuid from an older incarnation of the client's path (another
 * recon_cnt), or one already up, is stale: it is closed and the request
 * refused, so that the client's retry finds it gone.
 */
static struct rtrs_srv_path *
rtrs_srv_get_path(struct rtrs_srv_ctx *ctx, const struct rtrs_msg_conn_req *req,
		  struct rdma_cm_id *cm_id)
{
	struct rtrs_srv_sess *srv;
	struct rtrs_srv_path *path;
	int err;

	lockdep_assert_held(&ctx->mutex);
	srv = rtrs_srv_find_sess(ctx, &req->paths_uuid);
	if (!srv) {
		if (!(req->flags & RTRS_CON_REQ_FIRST_CONN)) {
			pr_err_ratelimited("connection request for a session we do not have\n");
			return ERR_PTR(-ENXIO);
		}
		err = rtrs_srv_admit_sess(ctx, cm_id);
		if (err)
			return ERR_PTR(err);
		srv = rtrs_srv_sess_alloc(ctx, &req->paths_uuid);
		if (!srv) {
			rtrs_srv_release_sess(ctx);
			return ERR_PTR(-ENOMEM);
		}
	}
	path = rtrs_srv_find_path(srv, &req->sess_uuid);
	if (!path) {
		path = rtrs_srv_path_by_addr(srv, cm_id);
		if (path)
			return ERR_PTR(rtrs_srv_addr_taken(path));
		err = rtrs_srv_admit_path(srv, cm_id);
		if (!err)
			path = rtrs_srv_path_alloc(srv, req, cm_id);
		if (!err && !path)
			err = -ENOMEM;
		if (err && list_empty(&srv->paths)) {
			rtrs_srv_sess_unlist(srv);
			put_device(&srv->dev);
		}
		return err ? ERR_PTR(err) : path;
	}
	if (path->recon_cnt != le16_to_cpu(req->recon_cnt) ||
	    rtrs_srv_state(path) != RTRS_SRV_CONNECTING ||
	    path->s.con_num != le16_to_cpu(req->cid_num)) {
		rtrs_path_info(&path->s, "reconnect of a stale path, closing the old one\n");
		rtrs_srv_close_path(path);
		return ERR_PTR(-EAGAIN);
	}
	return path;
}

static void rtrs_srv_reject(struct rdma_cm_id *cm_id, int errno)
{
	struct rtrs_msg_conn_rsp rsp = {
		.magic = cpu_to_le16(RTRS_MAGIC),
		.version = cpu_to_le16(RTRS_PROTO_VER),
		/* Negative, as Linux's client reads it. */
		.errno = cpu_to_le16(-abs(errno)),
	};

	rdma_reject(cm_id, &rsp, sizeof(rsp), IB_CM_REJ_CONSUMER_DEFINED);
}

static int rtrs_srv_accept(struct rtrs_srv_con *con)
{
	struct rtrs_srv_path *path = con_to_path(&con->c);
	struct rtrs_msg_conn_rsp rsp = {
		.magic = cpu_to_le16(RTRS_MAGIC),
		.version = cpu_to_le16(RTRS_PROTO_VER),
		.queue_depth = cpu_to_le16(path->srv->queue_depth),
		.max_io_size = cpu_to_le32(rtrs_srv_chunk_size -
					   RTRS_SRV_MAX_HDR_SIZE),
		.max_hdr_size = cpu_to_le32(RTRS_SRV_MAX_HDR_SIZE),
	};
	struct rdma_conn_param param = {
		.rnr_retry_count = 7,
		.private_data = &rsp,
		.private_data_len = sizeof(rsp),
	};

	return rdma_accept(con->c.cm_id, &param);
}

/*
 * How many requests a connection may have in flight.  The client sends
 * its IO on connections 1 and up, each at most the session's queue depth
 * at once; connection 0 carries the handshake, the heartbeats and the
 * user messages, which the client sizes at RTRS_ADMIN_QUEUE_DEPTH.  Only
 * connection 0 needs that many: sizing every connection for it would
 * take 16 times the memory of a queue depth of 32 for nothing.
 */
static unsigned int rtrs_srv_con_depth(struct rtrs_srv_path *path,
				       unsigned int cid)
{
	unsigned int depth = path->srv->queue_depth;

	return cid ? depth : max_t(unsigned int, depth, RTRS_ADMIN_QUEUE_DEPTH);
}

/* Receives: INFO_REQ first on the admin connection, then bare IMMs. */
static int rtrs_srv_post_recvs(struct rtrs_srv_con *con)
{
	struct rtrs_srv_path *path = con_to_path(&con->c);
	unsigned int i, n = rtrs_srv_con_depth(path, con->c.cid);
	int err;

	if (con->c.cid == 0) {
		path->info_iu = rtrs_iu_alloc(path->s.dev->ib_dev,
					      sizeof(struct rtrs_msg_info_req),
					      DMA_FROM_DEVICE, GFP_KERNEL,
					      rtrs_srv_info_req_done);
		if (!path->info_iu)
			return -ENOMEM;
		err = rtrs_iu_post_recv(&con->c, path->info_iu);
		if (err)
			return err;
		n--;
	}
	for (i = 0; i < n; i++) {
		err = rtrs_post_recv_empty(&con->c, &rtrs_srv_recv_cqe);
		if (err)
			return err;
	}
	return 0;
}

static int rtrs_srv_con_cm_handler(struct rdma_cm_id *cm_id,
				   struct rdma_cm_event *ev);

/*
 * A protection domain of the path's own: the chunks it registers for the
 * client's writes are out of reach of every other path's QPs, those of
 * other clients among them, whatever rkey they try.
 */
static int rtrs_srv_path_pd(struct rtrs_srv_path *path,
			    struct ib_device *ib_dev)
{
	struct ib_pd *pd = ib_alloc_pd(ib_dev, 0);

	if (IS_ERR(pd))
		return PTR_ERR(pd);
	path->dev.ib_dev = ib_dev;
	path->dev.pd = pd;
	path->s.dev = &path->dev;
	return 0;
}

static int rtrs_srv_create_con(struct rtrs_srv_path *path,
			       struct rdma_cm_id *cm_id, unsigned int cid)
{
	unsigned int depth = rtrs_srv_con_depth(path, cid);
	struct rtrs_srv_con *con;
	int err;

	if (path->s.con[cid])
		return -EEXIST;
	if (!path->s.dev) {
		err = rtrs_srv_path_pd(path, cm_id->device);
		if (err)
			return err;
	} else if (path->s.dev->ib_dev != cm_id->device) {
		return -EINVAL;
	}
	con = kzalloc(sizeof(*con), GFP_KERNEL);
	if (!con)
		return -ENOMEM;
	con->c.path = &path->s;
	con->c.cm_id = cm_id;
	con->c.cid = cid;
	err = rtrs_con_create_qp(&con->c, path->s.dev->pd,
				 (depth + RTRS_SIG_INTERVAL) *
				 RTRS_SRV_WRS_PER_IO + 1, depth + 1, 1,
				 IB_POLL_SOFTIRQ);
	if (err)
		goto out_free;
	err = rtrs_srv_post_recvs(con);
	if (err)
		goto out_destroy_qp;
	path->s.con[cid] = &con->c;
	cm_id->context = con;
	cm_id->event_handler = rtrs_srv_con_cm_handler;
	return 0;

out_destroy_qp:
	rtrs_con_destroy_qp(&con->c);
out_free:
	kfree(con);
	return err;
}

static int rtrs_srv_connect_req(struct rdma_cm_id *cm_id,
				struct rdma_cm_event *ev)
{
	const struct rtrs_msg_conn_req *req = ev->param.conn.private_data;
	struct rtrs_srv_ctx *ctx = cm_id->context;
	struct rtrs_srv_path *path;
	int err;

	err = rtrs_srv_check_conn_req(ev);
	if (err)
		goto reject;
	mutex_lock(&ctx->mutex);
	path = rtrs_srv_get_path(ctx, req, cm_id);
	if (IS_ERR(path)) {
		err = PTR_ERR(path);
		goto unlock_reject;
	}
	err = rtrs_srv_create_con(path, cm_id, le16_to_cpu(req->cid));
	if (err)
		goto close_path;
	err = rtrs_srv_accept(to_srv_con(path->s.con[le16_to_cpu(req->cid)]));
	mutex_unlock(&ctx->mutex);
	if (err) {
		/* The connection is ours now: its path's close destroys it. */
		rtrs_path_err_rl(&path->s, "rdma_accept failed: %d\n", err);
		rtrs_srv_close_path(path);
	}
	return 0;

close_path:
	rtrs_path_err_rl(&path->s, "cannot accept connection %u: %d\n",
			 le16_to_cpu(req->cid), err);
	rtrs_srv_close_path(path);
unlock_reject:
	mutex_unlock(&ctx->mutex);
reject:
	trace_rtrs_srv_conn_rejected(cm_id, err);
	rtrs_srv_reject(cm_id, err);
	/* Non-zero: rdma_cm destroys the id it made for the request. */
	return err;
}

static int rtrs_srv_listen_cm_handler(struct rdma_cm_id *cm_id,
				      struct rdma_cm_event *ev)
{
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return rtrs_srv_connect_req(cm_id, ev);
	pr_info("listener: rdma_cm event %s (%d)\n",
		rdma_event_msg(ev->event), ev->event);
	return 0;
}

static int rtrs_srv_con_cm_handler(struct rdma_cm_id *cm_id,
				   struct rdma_cm_event *ev)
{
	struct rtrs_srv_con *con = cm_id->context;
	struct rtrs_srv_path *path = con_to_path(&con->c);

	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_ADDR_CHANGE:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		rtrs_path_info(&path->s, "connection %u: %s\n", con->c.cid,
			       rdma_event_msg(ev->event));
		rtrs_srv_close_path(path);
		break;
	default:
		rtrs_path_info(&path->s, "connection %u: unexpected %s (%d)\n",
			       con->c.cid, rdma_event_msg(ev->event),
			       ev->event);
		break;
	}
	return 0;
}

/* Closing a path */

static void rtrs_srv_destroy_cons(struct rtrs_srv_path *path)
{
	unsigned int i;

	for (i = 0; i < path->s.con_num; i++) {
		struct rtrs_con *c = path->s.con[i];

		if (!c)
			continue;
		ib_drain_qp(c->qp);
		/* No event for this connection after this returns. */
		rdma_destroy_id(c->cm_id);
		c->cm_id = NULL;
	}
}

static void rtrs_srv_free_cons(struct rtrs_srv_path *path)
{
	unsigned int i;

	for (i = 0; i < path->s.con_num; i++) {
		struct rtrs_con *c = path->s.con[i];

		if (!c)
			continue;
		ib_destroy_qp(c->qp);
		ib_free_cq(c->cq);
		kfree(to_srv_con(c));
		path->s.con[i] = NULL;
	}
}

static void rtrs_srv_close_work(struct work_struct *work)
{
	struct rtrs_srv_path *path = container_of(work, struct rtrs_srv_path,
						  close_work);
	struct rtrs_srv_ctx *ctx = path->srv->ctx;
	struct ib_device *ib_dev;

	/*
	 * rtrs_srv_connect_req() adds connections to a path it found
	 * connecting, under the context's mutex: under it, every connection
	 * the path will ever have is in con[] and gets disconnected.  Walks
	 * of con[] after this one need no lock.
	 */
	mutex_lock(&ctx->mutex);
	rtrs_path_disconnect(&path->s);
	ib_dev = path->s.dev ? path->s.dev->ib_dev : NULL;
	mutex_unlock(&ctx->mutex);
	/* The ULP answers what it holds; those answers post nothing now. */
	percpu_ref_kill(&path->ids_inflight);
	wait_for_completion(&path->ids_done);
	/* Drained: no INFO_REQ completion queues the info work any more. */
	rtrs_srv_destroy_cons(path);
	/*
	 * Then the works, the info work first: it may have been taking the
	 * path up, heartbeats and all, while the path was closed.
	 */
	cancel_work_sync(&path->info_work);
	cancel_delayed_work_sync(&path->setup_dwork);
	rtrs_hb_stop(&path->s);
	rtrs_srv_path_sysfs_del(path);
	rtrs_srv_sess_del_path(path);
	rtrs_srv_free_cons(path);
	if (ib_dev) {
		rtrs_srv_unmap_chunks(path);
		rtrs_iu_free(path->info_iu, ib_dev);
		rtrs_iu_free(path->info_iu_rsp, ib_dev);
		ib_dealloc_pd(path->dev.pd);
	}
	atomic_set(&path->state, RTRS_SRV_CLOSED);
	rtrs_path_info(&path->s, "path closed\n");
	trace_rtrs_srv_path_closed(path);
	kobject_put(&path->kobj);
}

/* The API for the ULP */

static struct rdma_cm_id *rtrs_srv_listen(struct rtrs_srv_ctx *ctx,
					  struct sockaddr *addr)
{
	struct rdma_cm_id *cm_id;
	int err;

	cm_id = rdma_create_id(&init_net, rtrs_srv_listen_cm_handler, ctx,
			       RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(cm_id))
		return cm_id;
	err = rdma_bind_addr(cm_id, addr);
	if (!err)
		err = rdma_listen(cm_id, 64);
	if (err) {
		rdma_destroy_id(cm_id);
		return ERR_PTR(err);
	}
	return cm_id;
}

static int rtrs_srv_listen_all(struct rtrs_srv_ctx *ctx)
{
	struct sockaddr_in6 sin6 = {
		.sin6_family = AF_INET6,
		.sin6_addr = IN6ADDR_ANY_INIT,
		.sin6_port = htons(ctx->port),
	};
	struct sockaddr_ib sib = {
		.sib_family = AF_IB,
		.sib_sid = cpu_to_be64(RDMA_IB_IP_PS_IB | ctx->port),
		.sib_sid_mask = cpu_to_be64(0xffffffffffffffffULL),
		.sib_pkey = cpu_to_be16(0xffff),
	};

	/* IPv6 any also takes IPv4; AF_IB only exists on InfiniBand. */
	ctx->cm_id_ip = rtrs_srv_listen(ctx, (struct sockaddr *)&sin6);
	if (IS_ERR(ctx->cm_id_ip))
		return PTR_ERR(ctx->cm_id_ip);
	ctx->cm_id_ib = rtrs_srv_listen(ctx, (struct sockaddr *)&sib);
	if (IS_ERR(ctx->cm_id_ib))
		ctx->cm_id_ib = NULL;
	return 0;
}

/**
 * rtrs_srv_open() - start serving sessions for a ULP
 * @ops: the ULP's callbacks
 * @port: the port to listen on
 *
 * Return: the context, or an ERR_PTR.
 */
struct rtrs_srv_ctx *rtrs_srv_open(const struct rtrs_srv_ops *ops, u16 port)
{
	struct rtrs_srv_ctx *ctx;
	int err;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return ERR_PTR(-ENOMEM);
	ctx->ops = ops;
	ctx->port = port;
	mutex_init(&ctx->mutex);
	INIT_LIST_HEAD(&ctx->sess_list);
	err = rtrs_srv_listen_all(ctx);
	if (err) {
		pr_err("cannot listen on port %u: %d\n", port, err);
		kfree(ctx);
		return ERR_PTR(err);
	}
	return ctx;
}
EXPORT_SYMBOL_GPL(rtrs_srv_open);

static void rtrs_srv_close_all(struct rtrs_srv_ctx *ctx)
{
	struct rtrs_srv_sess *srv;
	struct rtrs_srv_path *path;

	mutex_lock(&ctx->mutex);
	list_for_each_entry(srv, &ctx->sess_list, entry)
		list_for_each_entry(path, &srv->paths, entry)
			rtrs_srv_close_path(path);
	mutex_unlock(&ctx->mutex);
	/* Close work also runs hb and info work; all of it ends here. */
	flush_workqueue(rtrs_srv_wq);
}

/**
 * rtrs_srv_close() - stop listening and close every session
 * @ctx: from rtrs_srv_open()
 *
 * The ULP hears DISCONNECTED for each session it was told of.
 */
void rtrs_srv_close(struct rtrs_srv_ctx *ctx)
{
	rdma_destroy_id(ctx->cm_id_ip);
	if (ctx->cm_id_ib)
		rdma_destroy_id(ctx->cm_id_ib);
	rtrs_srv_close_all(ctx);
	WARN_ON(!list_empty(&ctx->sess_list));
	mutex_destroy(&ctx->mutex);
	kfree(ctx);
}
EXPORT_SYMBOL_GPL(rtrs_srv_close);

void rtrs_srv_set_sess_priv(struct rtrs_srv_sess *srv, void *priv)
{
	srv->priv = priv;
}
EXPORT_SYMBOL_GPL(rtrs_srv_set_sess_priv);

/* The session's name as the client gave it. */
int rtrs_srv_get_path_name(struct rtrs_srv_sess *srv, char *pathname,
			   size_t len)
{
	return strscpy(pathname, srv->sessname, len) < 0 ? -E2BIG : 0;
}
EXPORT_SYMBOL_GPL(rtrs_srv_get_path_name);

int rtrs_srv_get_queue_depth(struct rtrs_srv_sess *srv)
{
	return srv->queue_depth;
}
EXPORT_SYMBOL_GPL(rtrs_srv_get_queue_depth);

/**
 * rtrs_srv_visit_peers() - the client addresses of a session's paths
 * @srv: the session
 * @fn: called with the address of each path that is up, until it
 *	returns non-zero; it may not sleep on anything that waits for RTRS
 * @data: for @fn
 *
 * A path that comes up after this returned is shown to the ULP's
 * &rtrs_srv_ops.path_up instead.
 *
 * Return: 0, or the first non-zero return of @fn.
 */
int rtrs_srv_visit_peers(struct rtrs_srv_sess *srv,
			 int (*fn)(const struct sockaddr *peer, void *data),
			 void *data)
{
	struct rtrs_srv_path *path;
	int err = 0;

	mutex_lock(&srv->ctx->mutex);
	list_for_each_entry(path, &srv->paths, entry) {
		if (rtrs_srv_state(path) != RTRS_SRV_CONNECTED)
			continue;
		err = fn((struct sockaddr *)&path->s.dst_addr, data);
		if (err)
			break;
	}
	mutex_unlock(&srv->ctx->mutex);
	return err;
}
EXPORT_SYMBOL_GPL(rtrs_srv_visit_peers);

static int rtrs_srv_check_params(void)
{
	unsigned int bits = order_base_2(rtrs_srv_queue_depth) +
			    order_base_2(rtrs_srv_chunk_size);

	if (bits > RTRS_IMM_PAYLOAD_BITS) {
		pr_err("sess_queue_depth %u with max_chunk_size %u needs %u bits of immediate, more than %u\n",
		       rtrs_srv_queue_depth, rtrs_srv_chunk_size, bits,
		       RTRS_IMM_PAYLOAD_BITS);
		return -EINVAL;
	}
	return 0;
}

static int __init rtrs_srv_init(void)
{
	int err;

	err = rtrs_srv_check_params();
	if (err)
		return err;
	rtrs_srv_limits_init();
	rtrs_srv_wq = alloc_workqueue("rtrs_srv_wq", WQ_MEM_RECLAIM, 0);
	if (!rtrs_srv_wq)
		return -ENOMEM;
	rtrs_srv_io_wq = alloc_workqueue("rtrs_srv_io_wq",
					 WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	if (!rtrs_srv_io_wq) {
		err = -ENOMEM;
		goto out_wq;
	}
	err = class_register(&rtrs_srv_class);
	if (err) {
		pr_err("cannot register class %s: %d\n", rtrs_srv_class.name,
		       err);
		goto out_io_wq;
	}
	return 0;

out_io_wq:
	destroy_workqueue(rtrs_srv_io_wq);
out_wq:
	destroy_workqueue(rtrs_srv_wq);
	return err;
}

static void __exit rtrs_srv_exit(void)
{
	class_unregister(&rtrs_srv_class);
	destroy_workqueue(rtrs_srv_io_wq);
	destroy_workqueue(rtrs_srv_wq);
}

module_init(rtrs_srv_init);
module_exit(rtrs_srv_exit);

MODULE_DESCRIPTION("RDMA Transport (RTRS) server");
MODULE_LICENSE("GPL");
