// SPDX-License-Identifier: GPL-2.0-only
/*
 * RTRS core: what the client and the server side of the transport share.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/inet.h>
#include <linux/interrupt.h>
#include <linux/kernel_stat.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <rdma/ib.h>
#include <rdma/rdma_cm.h>

#include "rtrs-pri.h"
#include "rtrs.h"

/*
 * An address is "ip:<IPv4 or IPv6[%scope]>" or "gid:<GID>"; a path is one
 * address or two joined by ',' or '@' (source first).  This bounds the
 * text of a path, both addresses and the separator.
 */
#define RTRS_PATH_STR_MAX	128

static int rtrs_gid_to_sockaddr(const char *gid, u16 port,
				struct sockaddr_storage *ss)
{
	struct sockaddr_ib *sib = (struct sockaddr_ib *)ss;

	if (!in6_pton(gid, -1, sib->sib_addr.sib_raw, -1, NULL))
		return -EINVAL;
	sib->sib_family = AF_IB;
	/* The full-membership default partition, as for any unicast CM. */
	sib->sib_pkey = cpu_to_be16(0xffff);
	sib->sib_sid = cpu_to_be64(RDMA_IB_IP_PS_IB | port);
	sib->sib_sid_mask = cpu_to_be64(~0ULL);
	return 0;
}

static int rtrs_one_addr_to_sockaddr(const char *str, u16 port,
				     struct sockaddr_storage *ss)
{
	char port_str[8];

	memset(ss, 0, sizeof(*ss));
	if (str_has_prefix(str, "gid:"))
		return rtrs_gid_to_sockaddr(str + strlen("gid:"), port, ss);
	if (!str_has_prefix(str, "ip:"))
		return -EINVAL;
	snprintf(port_str, sizeof(port_str), "%u", port);
	return inet_pton_with_scope(&init_net, AF_UNSPEC, str + strlen("ip:"),
				    port_str, ss);
}

/**
 * rtrs_addr_to_sockaddr() - parse the text of a path
 * @str: "[src,]dst" or "[src@]dst", each "ip:<address>" or "gid:<GID>";
 *	 need not be NUL-terminated
 * @len: length of @str
 * @port: destination port (for a GID, the port of the RDMA_PS_IB service id)
 * @addr: where to store both addresses; @addr->src gets family AF_UNSPEC
 *	  when @str names no source
 *
 * Prints one error line naming what it could not parse.
 *
 * Return: 0 on success, -EINVAL when @str is not a valid path.
 */
int rtrs_addr_to_sockaddr(const char *str, size_t len, u16 port,
			  struct rtrs_addr *addr)
{
	char buf[RTRS_PATH_STR_MAX], *dst;

	if (!len || len >= sizeof(buf)) {
		pr_err_ratelimited("path address must be 1 to %zu characters, got %zu\n",
				   sizeof(buf) - 1, len);
		return -EINVAL;
	}
	memcpy(buf, str, len);
	buf[len] = '\0';

	dst = strpbrk(buf, ",@");
	if (dst) {
		*dst++ = '\0';
		if (rtrs_one_addr_to_sockaddr(buf, 0, addr->src)) {
			pr_err_ratelimited("invalid source address '%s'\n", buf);
			return -EINVAL;
		}
	} else {
		dst = buf;
		memset(addr->src, 0, sizeof(*addr->src));
		addr->src->ss_family = AF_UNSPEC;
	}
	if (rtrs_one_addr_to_sockaddr(dst, port, addr->dst)) {
		pr_err_ratelimited("invalid destination address '%s'\n", dst);
		return -EINVAL;
	}
	return 0;
}
EXPORT_SYMBOL_GPL(rtrs_addr_to_sockaddr);

/**
 * rtrs_sockaddr_to_str() - print an address the way rtrs_addr_to_sockaddr()
 *			    reads it
 * @addr: an AF_INET, AF_INET6 or AF_IB address
 * @buf: where to print
 * @len: size of @buf
 *
 * Return: the number of characters printed, or -EINVAL for another family.
 */
int rtrs_sockaddr_to_str(const struct sockaddr *addr, char *buf, size_t len)
{
	const struct sockaddr_ib *sib;

	switch (addr->sa_family) {
	case AF_INET:
	case AF_INET6:
		return scnprintf(buf, len, "ip:%pISc", addr);
	case AF_IB:
		sib = (const struct sockaddr_ib *)addr;
		return scnprintf(buf, len, "gid:%pI6", &sib->sib_addr);
	default:
		return -EINVAL;
	}
}
EXPORT_SYMBOL_GPL(rtrs_sockaddr_to_str);

/**
 * rtrs_sysfs_write_one() - check what was written to a file that takes "1"
 * @path: the path the file belongs to
 * @pathname: the path's name, as its sysfs directory has it
 * @file: the file's name
 * @buf: what was written
 *
 * The command files of both sides (a path's disconnect, its stats files,
 * which reset on "1") take "1" and nothing else, a newline allowed.
 *
 * Return: 0 for "1"; else -EINVAL, after one error line naming the path,
 * the file and what was written.
 */
int rtrs_sysfs_write_one(const struct rtrs_path *path, const char *pathname,
			 const char *file, const char *buf)
{
	if (sysfs_streq(buf, "1"))
		return 0;
	pr_err_ratelimited("%s: %s: %s takes 1, not '%.*s'\n", path->sessname, pathname,
			   file, (int)strcspn(buf, "\n"), buf);
	return -EINVAL;
}
EXPORT_SYMBOL_GPL(rtrs_sysfs_write_one);

/**
 * rtrs_wr_stats_alloc() - zeroed verbs counts for a new path
 * @path: the path
 *
 * Return: 0, or -ENOMEM.
 */
int rtrs_wr_stats_alloc(struct rtrs_path *path)
{
	path->wr_stats = alloc_percpu(struct rtrs_wr_stats);
	return path->wr_stats ? 0 : -ENOMEM;
}
EXPORT_SYMBOL_GPL(rtrs_wr_stats_alloc);

void rtrs_wr_stats_free(struct rtrs_path *path)
{
	free_percpu(path->wr_stats);
	path->wr_stats = NULL;
}
EXPORT_SYMBOL_GPL(rtrs_wr_stats_free);

/**
 * rtrs_wr_stats_show() - a path's stats/wr_counts
 * @path: the path
 * @buf: the sysfs page
 *
 * "<posted> <reaped>": the work requests posted and the completions
 * reaped on the path's connections, summed over the CPUs.
 *
 * Return: the length of what was written to @buf.
 */
ssize_t rtrs_wr_stats_show(const struct rtrs_path *path, char *buf)
{
	u64 posted = 0, reaped = 0;
	int cpu;

	for_each_possible_cpu(cpu) {
		const struct rtrs_wr_stats *s = per_cpu_ptr(path->wr_stats, cpu);

		posted += s->posted;
		reaped += s->reaped;
	}
	return sysfs_emit(buf, "%llu %llu\n", posted, reaped);
}
EXPORT_SYMBOL_GPL(rtrs_wr_stats_show);

/* Zero a path's wr_counts; IO racing with it may be half counted. */
void rtrs_wr_stats_reset(struct rtrs_path *path)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct rtrs_wr_stats *s = per_cpu_ptr(path->wr_stats, cpu);

		s->posted = 0;
		s->reaped = 0;
	}
}
EXPORT_SYMBOL_GPL(rtrs_wr_stats_reset);

/**
 * rtrs_wc_reaped() - count a completion in the poll of its CQ that reaped it
 * @con: the connection of the CQ
 * @s: this CPU's stats of @con's path
 *
 * ib_core polls an IB_POLL_SOFTIRQ CQ in the IRQ_POLL softirq and an
 * IB_POLL_WORKQUEUE one in a kworker, and tells the handlers it calls
 * nothing of where a poll begins.  A poll here is a wake-up of that
 * context, which is what costs: one run of the softirq on this CPU (its
 * count, as /proc/softirqs shows it), or a task's run from one sleep to
 * the next (its voluntary context switches).  Where ib_core polls the CQ
 * again without sleeping, because completions came while it rearmed the
 * CQ or the kworker had more work queued, that is the same wake-up and
 * the same poll.
 *
 * Context: the one that polls @con's CQ, with preemption disabled.
 */
void rtrs_wc_reaped(struct rtrs_con *con, struct rtrs_wr_stats *s)
{
	const void *waker;
	unsigned long wake;

	if (in_serving_softirq()) {
		waker = this_cpu_ptr(&kstat);
		wake = __this_cpu_read(kstat.softirqs[IRQ_POLL_SOFTIRQ]);
	} else {
		waker = current;
		wake = current->nvcsw;
	}
	if (waker != con->poll_waker || wake != con->poll_wake) {
		con->poll_waker = waker;
		con->poll_wake = wake;
		con->poll_len = 0;
		s->wc.polls++;
	}
	con->poll_len++;
	s->wc.reaped++;
	s->wc.max = max(s->wc.max, con->poll_len);
}
EXPORT_SYMBOL_GPL(rtrs_wc_reaped);

/**
 * rtrs_wc_stats_sum() - a path's polls of its CQs, over the CPUs
 * @path: the path
 * @sum: filled with the polls, the completions they reaped and the most
 *	 one of them reaped
 */
void rtrs_wc_stats_sum(const struct rtrs_path *path,
		       struct rtrs_wc_stats *sum)
{
	int cpu;

	*sum = (struct rtrs_wc_stats) {};
	for_each_possible_cpu(cpu) {
		const struct rtrs_wc_stats *s =
			&per_cpu_ptr(path->wr_stats, cpu)->wc;

		sum->polls += s->polls;
		sum->reaped += s->reaped;
		sum->max = max(sum->max, s->max);
	}
}
EXPORT_SYMBOL_GPL(rtrs_wc_stats_sum);

/* Zero a path's wc_completion; IO racing with it may be half counted. */
void rtrs_wc_stats_reset(struct rtrs_path *path)
{
	int cpu;

	for_each_possible_cpu(cpu)
		per_cpu_ptr(path->wr_stats, cpu)->wc = (struct rtrs_wc_stats) {};
}
EXPORT_SYMBOL_GPL(rtrs_wc_stats_reset);

/*
 * The RDMA devices in use by one side, each with its protection domain,
 * shared by all the paths on that device.
 */
void rtrs_ib_dev_pool_init(struct rtrs_ib_dev_pool *pool)
{
	mutex_init(&pool->mutex);
	INIT_LIST_HEAD(&pool->list);
}
EXPORT_SYMBOL_GPL(rtrs_ib_dev_pool_init);

void rtrs_ib_dev_pool_destroy(struct rtrs_ib_dev_pool *pool)
{
	WARN_ON(!list_empty(&pool->list));
	mutex_destroy(&pool->mutex);
}
EXPORT_SYMBOL_GPL(rtrs_ib_dev_pool_destroy);

/**
 * rtrs_ib_dev_get() - take a reference on the pool's entry for a device
 * @pool: the side's pool
 * @ib_dev: the device of a new path
 *
 * Context: process; takes the pool's mutex.
 * Return: the entry, made with a new protection domain when the device
 * was not in use yet, or NULL when that failed.
 */
struct rtrs_ib_dev *rtrs_ib_dev_get(struct rtrs_ib_dev_pool *pool,
				    struct ib_device *ib_dev)
{
	struct rtrs_ib_dev *dev;

	mutex_lock(&pool->mutex);
	list_for_each_entry(dev, &pool->list, entry) {
		if (dev->ib_dev == ib_dev) {
			kref_get(&dev->ref);
			goto out;
		}
	}
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		goto out;
	dev->pd = ib_alloc_pd(ib_dev, 0);
	if (IS_ERR(dev->pd)) {
		pr_err("cannot allocate a protection domain on %s: %ld\n",
		       dev_name(&ib_dev->dev), PTR_ERR(dev->pd));
		kfree(dev);
		dev = NULL;
		goto out;
	}
	dev->ib_dev = ib_dev;
	dev->pool = pool;
	kref_init(&dev->ref);
	list_add(&dev->entry, &pool->list);
out:
	mutex_unlock(&pool->mutex);
	return dev;
}
EXPORT_SYMBOL_GPL(rtrs_ib_dev_get);

static void rtrs_ib_dev_release(struct kref *ref)
{
	struct rtrs_ib_dev *dev = container_of(ref, struct rtrs_ib_dev, ref);

	lockdep_assert_held(&dev->pool->mutex);
	list_del(&dev->entry);
	ib_dealloc_pd(dev->pd);
	kfree(dev);
}

void rtrs_ib_dev_put(struct rtrs_ib_dev *dev)
{
	struct rtrs_ib_dev_pool *pool = dev->pool;

	/* Under the mutex: a get must not find an entry on its way out. */
	mutex_lock(&pool->mutex);
	kref_put(&dev->ref, rtrs_ib_dev_release);
	mutex_unlock(&pool->mutex);
}
EXPORT_SYMBOL_GPL(rtrs_ib_dev_put);

/**
 * rtrs_iu_alloc() - allocate and map the buffer of one message
 * @dev: the device that will send or receive it
 * @size: its size
 * @dir: DMA_TO_DEVICE to send, DMA_FROM_DEVICE to receive
 * @gfp: allocation flags
 * @done: its completion handler
 *
 * Return: the information unit, or NULL.
 */
struct rtrs_iu *rtrs_iu_alloc(struct ib_device *dev, size_t size,
			      enum dma_data_direction dir, gfp_t gfp,
			      void (*done)(struct ib_cq *cq, struct ib_wc *wc))
{
	struct rtrs_iu *iu;

	iu = kzalloc(sizeof(*iu), gfp);
	if (!iu)
		return NULL;
	iu->buf = kzalloc(size, gfp);
	if (!iu->buf)
		goto out_free_iu;
	iu->dma_addr = ib_dma_map_single(dev, iu->buf, size, dir);
	if (ib_dma_mapping_error(dev, iu->dma_addr))
		goto out_free_buf;
	iu->size = size;
	iu->dir = dir;
	iu->cqe.done = done;
	return iu;

out_free_buf:
	kfree(iu->buf);
out_free_iu:
	kfree(iu);
	return NULL;
}
EXPORT_SYMBOL_GPL(rtrs_iu_alloc);

void rtrs_iu_free(struct rtrs_iu *iu, struct ib_device *dev)
{
	if (!iu)
		return;
	ib_dma_unmap_single(dev, iu->dma_addr, iu->size, iu->dir);
	kfree(iu->buf);
	kfree(iu);
}
EXPORT_SYMBOL_GPL(rtrs_iu_free);

int rtrs_iu_post_recv(struct rtrs_con *con, struct rtrs_iu *iu)
{
	struct ib_sge sge = {
		.addr = iu->dma_addr,
		.length = iu->size,
		.lkey = con->path->dev->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &iu->cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	return rtrs_post_recv(con, &wr);
}
EXPORT_SYMBOL_GPL(rtrs_iu_post_recv);

/* Post @wr behind the chain @head, if any. */
static int rtrs_post_send_chain(struct rtrs_con *con, struct ib_send_wr *head,
				struct ib_send_wr *wr)
{
	struct ib_send_wr *tail;

	if (head) {
		for (tail = head; tail->next; tail = tail->next)
			;
		tail->next = wr;
	} else {
		head = wr;
	}
	return rtrs_post_send(con, head);
}

/**
 * rtrs_iu_post_send() - send the first @len bytes of a message
 * @con: the connection
 * @iu: the message, mapped DMA_TO_DEVICE
 * @len: bytes to send
 * @head: work requests to post before it, or NULL
 *
 * The send is signaled: @iu's completion runs when it is done.
 *
 * Return: 0 or the error of ib_post_send().
 */
int rtrs_iu_post_send(struct rtrs_con *con, struct rtrs_iu *iu, size_t len,
		      struct ib_send_wr *head)
{
	struct ib_device *dev = con->path->dev->ib_dev;
	struct ib_sge sge = {
		.addr = iu->dma_addr,
		.length = len,
		.lkey = con->path->dev->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &iu->cqe,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};

	ib_dma_sync_single_for_device(dev, iu->dma_addr, len, DMA_TO_DEVICE);
	return rtrs_post_send_chain(con, head, &wr);
}
EXPORT_SYMBOL_GPL(rtrs_iu_post_send);

/* A receive for a peer's RDMA WRITE WITH IMM: no buffer, only the imm. */
int rtrs_post_recv_empty(struct rtrs_con *con, struct ib_cqe *cqe)
{
	struct ib_recv_wr wr = {
		.wr_cqe = cqe,
	};

	return rtrs_post_recv(con, &wr);
}
EXPORT_SYMBOL_GPL(rtrs_post_recv_empty);

/**
 * rtrs_post_write_imm_empty() - send a bare immediate to the peer
 * @con: the connection
 * @cqe: its completion, when @flags has IB_SEND_SIGNALED
 * @imm: the immediate, host order
 * @flags: ib_send_flags
 * @head: work requests to post before it, or NULL
 *
 * A zero-length RDMA WRITE WITH IMM: it consumes one receive of the peer,
 * whose completion carries @imm.
 *
 * Return: 0 or the error of ib_post_send().
 */
int rtrs_post_write_imm_empty(struct rtrs_con *con, struct ib_cqe *cqe,
			      u32 imm, enum ib_send_flags flags,
			      struct ib_send_wr *head)
{
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe = cqe,
			.opcode = IB_WR_RDMA_WRITE_WITH_IMM,
			.send_flags = flags,
			.ex.imm_data = cpu_to_be32(imm),
		},
	};

	return rtrs_post_send_chain(con, head, &wr.wr);
}
EXPORT_SYMBOL_GPL(rtrs_post_write_imm_empty);

static void rtrs_qp_event(struct ib_event *ev, void *ctx)
{
	struct rtrs_con *con = ctx;

	rtrs_path_info(con->path, "connection %u: QP event %s (%d)\n",
		       con->cid, ib_event_msg(ev->event), ev->event);
}

/**
 * rtrs_con_create_qp() - make the completion and queue pair of a connection
 * @con: the connection, whose @cm_id has its device resolved
 * @pd: the protection domain
 * @max_send_wr: send queue depth wanted; clamped to what the device has
 * @max_recv_wr: receive queue depth wanted; clamped likewise
 * @max_send_sge: sg entries per send
 * @poll_ctx: how the completion queue is polled
 *
 * The connections of a path spread over the device's completion vectors
 * by their cid.
 *
 * Return: 0 or a negative errno.
 */
int rtrs_con_create_qp(struct rtrs_con *con, struct ib_pd *pd,
		       u32 max_send_wr, u32 max_recv_wr, u32 max_send_sge,
		       enum ib_poll_context poll_ctx)
{
	struct ib_device *dev = con->cm_id->device;
	struct ib_qp_init_attr init = {};
	u32 max_wr = dev->attrs.max_qp_wr;
	int err;

	max_send_wr = min(max_send_wr, max_wr);
	max_recv_wr = min(max_recv_wr, max_wr);
	con->nr_cqe = max_send_wr + max_recv_wr;
	con->cq = ib_alloc_cq(dev, con, con->nr_cqe,
			      con->cid % dev->num_comp_vectors, poll_ctx);
	if (IS_ERR(con->cq)) {
		err = PTR_ERR(con->cq);
		con->cq = NULL;
		return err;
	}

	init.event_handler = rtrs_qp_event;
	init.qp_context = con;
	init.send_cq = con->cq;
	init.recv_cq = con->cq;
	init.cap.max_send_wr = max_send_wr;
	init.cap.max_recv_wr = max_recv_wr;
	init.cap.max_send_sge = min_t(u32, max_send_sge, dev->attrs.max_send_sge);
	init.cap.max_recv_sge = 1;
	init.sq_sig_type = IB_SIGNAL_REQ_WR;
	init.qp_type = IB_QPT_RC;
	err = rdma_create_qp(con->cm_id, pd, &init);
	if (err) {
		ib_free_cq(con->cq);
		con->cq = NULL;
		return err;
	}
	con->qp = con->cm_id->qp;
	return 0;
}
EXPORT_SYMBOL_GPL(rtrs_con_create_qp);

void rtrs_con_destroy_qp(struct rtrs_con *con)
{
	if (con->qp) {
		rdma_destroy_qp(con->cm_id);
		con->qp = NULL;
	}
	if (con->cq) {
		ib_free_cq(con->cq);
		con->cq = NULL;
	}
}
EXPORT_SYMBOL_GPL(rtrs_con_destroy_qp);

/* Start the disconnection of every connection of the path that has one. */
void rtrs_path_disconnect(struct rtrs_path *path)
{
	unsigned int cid;

	for (cid = 0; cid < path->con_num; cid++)
		if (path->con[cid] && path->con[cid]->cm_id)
			rdma_disconnect(path->con[cid]->cm_id);
}
EXPORT_SYMBOL_GPL(rtrs_path_disconnect);

/*
 * Heartbeats: every hb_interval_ms each side writes an HB_MSG immediate on
 * the admin connection and the peer answers with HB_ACK.  Anything heard
 * from the peer resets the count of unanswered heartbeats; when it reaches
 * hb_missed_max the path is declared dead through hb_err_handler.
 */
static void rtrs_hb_work(struct work_struct *work)
{
	struct rtrs_path *path = container_of(to_delayed_work(work),
					      struct rtrs_path, hb_dwork);
	u32 missed = READ_ONCE(path->hb_missed_cnt);
	int err;

	if (missed >= READ_ONCE(path->hb_missed_max)) {
		rtrs_path_err(path, "%u heartbeats missed, closing the path\n",
			      missed);
		path->hb_err_handler(path);
		return;
	}
	WRITE_ONCE(path->hb_missed_cnt, missed + 1);
	path->hb_last_sent = ktime_get();
	err = rtrs_post_write_imm_empty(path->con[0], path->hb_cqe,
					rtrs_imm(RTRS_HB_MSG_IMM, 0),
					IB_SEND_SIGNALED, NULL);
	if (err) {
		rtrs_path_err(path, "cannot send a heartbeat: %d\n", err);
		path->hb_err_handler(path);
		return;
	}
	queue_delayed_work(path->hb_wq, &path->hb_dwork,
			   msecs_to_jiffies(READ_ONCE(path->hb_interval_ms)));
}

void rtrs_hb_init(struct rtrs_path *path, struct ib_cqe *cqe,
		  void (*err_handler)(struct rtrs_path *path),
		  struct workqueue_struct *wq)
{
	path->hb_cqe = cqe;
	path->hb_err_handler = err_handler;
	path->hb_wq = wq;
	path->hb_interval_ms = RTRS_HB_INTERVAL_MS;
	path->hb_missed_max = RTRS_HB_MISSED_MAX;
	INIT_DELAYED_WORK(&path->hb_dwork, rtrs_hb_work);
}
EXPORT_SYMBOL_GPL(rtrs_hb_init);

/*
 * Heartbeats may be running: the next beat takes the new values, the one
 * already scheduled keeps its time.
 */
void rtrs_hb_set(struct rtrs_path *path, unsigned int interval_ms,
		 unsigned int missed_max)
{
	WRITE_ONCE(path->hb_interval_ms, interval_ms);
	WRITE_ONCE(path->hb_missed_max, missed_max);
}
EXPORT_SYMBOL_GPL(rtrs_hb_set);

void rtrs_hb_start(struct rtrs_path *path)
{
	WRITE_ONCE(path->hb_missed_cnt, 0);
	queue_delayed_work(path->hb_wq, &path->hb_dwork,
			   msecs_to_jiffies(READ_ONCE(path->hb_interval_ms)));
}
EXPORT_SYMBOL_GPL(rtrs_hb_start);

void rtrs_hb_stop(struct rtrs_path *path)
{
	cancel_delayed_work_sync(&path->hb_dwork);
}
EXPORT_SYMBOL_GPL(rtrs_hb_stop);

/* Answer a peer's HB_MSG; called from the completion of its receive. */
void rtrs_hb_send_ack(struct rtrs_path *path)
{
	int err;

	err = rtrs_post_write_imm_empty(path->con[0], path->hb_cqe,
					rtrs_imm(RTRS_HB_ACK_IMM, 0),
					IB_SEND_SIGNALED, NULL);
	/* Not fatal here: the peer counts our silence and closes the path. */
	if (err)
		rtrs_path_err_rl(path, "cannot answer a heartbeat: %d\n", err);
}
EXPORT_SYMBOL_GPL(rtrs_hb_send_ack);

/* The peer spoke: the path is alive. */
void rtrs_hb_heard(struct rtrs_path *path)
{
	WRITE_ONCE(path->hb_missed_cnt, 0);
}
EXPORT_SYMBOL_GPL(rtrs_hb_heard);

/* The peer answered our last heartbeat: that round trip is the latency. */
void rtrs_hb_ack_received(struct rtrs_path *path)
{
	/* Read locklessly by the client's min-latency policy. */
	WRITE_ONCE(path->hb_cur_latency,
		   ktime_sub(ktime_get(), path->hb_last_sent));
	rtrs_hb_heard(path);
}
EXPORT_SYMBOL_GPL(rtrs_hb_ack_received);

MODULE_DESCRIPTION("RDMA Transport (RTRS) core");
MODULE_LICENSE("GPL");
