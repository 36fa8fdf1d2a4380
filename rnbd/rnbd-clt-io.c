// SPDX-License-Identifier: GPL-2.0-only
/*
 * RNBD client: the block layer's requests, sent as RNBD IO messages over
 * the session's RTRS permits and answered through blk-mq's completion.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/rcupdate.h>
#include <linux/scatterlist.h>

#include "rnbd-clt.h"

/**
 * struct rnbd_clt_iu - what a request of a mapped device carries
 * @permit: its RTRS permit
 * @msg: its user header
 * @errno: the transport's answer
 * @sg: its data, up to the session's max_segments entries
 */
struct rnbd_clt_iu {
	struct rtrs_permit *permit;
	struct rnbd_msg_io msg;
	int errno;
	struct scatterlist sg[];
};

static int rnbd_clt_rq_op(const struct rnbd_clt_dev *dev, struct request *rq,
			  u32 *rw)
{
	switch (req_op(rq)) {
	case REQ_OP_READ:
		*rw = RNBD_OP_READ;
		break;
	case REQ_OP_WRITE:
		*rw = RNBD_OP_WRITE;
		break;
	case REQ_OP_FLUSH:
		*rw = RNBD_OP_FLUSH;
		break;
	case REQ_OP_DISCARD:
		*rw = RNBD_OP_DISCARD;
		break;
	case REQ_OP_SECURE_ERASE:
		*rw = RNBD_OP_SECURE_ERASE;
		break;
	case REQ_OP_WRITE_ZEROES:
		*rw = RNBD_OP_WRITE_ZEROES;
		break;
	default:
		return -EOPNOTSUPP;
	}
	return 0;
}

/*
 * The flags of @rq.  A server of 2.0 (Linux 6.1) knows SYNC and FUA only;
 * PREFLUSH and NOUNMAP go to a server that offered WRITE_ZEROES.  blk-mq
 * turns a PREFLUSH into a FLUSH of its own when the queue has a write
 * cache, so a 2.0 server loses nothing.
 */
static u32 rnbd_clt_rq_flags(const struct rnbd_clt_dev *dev,
			     struct request *rq)
{
	u32 flags = 0;

	if (op_is_sync(rq->cmd_flags))
		flags |= RNBD_F_SYNC;
	if (rq->cmd_flags & REQ_FUA)
		flags |= RNBD_F_FUA;
	if (!dev->new_flags)
		return flags;
	if (rq->cmd_flags & REQ_PREFLUSH)
		flags |= RNBD_F_PREFLUSH;
	if (req_op(rq) == REQ_OP_WRITE_ZEROES && (rq->cmd_flags & REQ_NOUNMAP))
		flags |= RNBD_F_NOUNMAP;
	return flags;
}

static int rnbd_clt_fill_msg(struct rnbd_clt_dev *dev, struct request *rq,
			     struct rnbd_msg_io *msg)
{
	u32 rw;
	int err;

	err = rnbd_clt_rq_op(dev, rq, &rw);
	if (err)
		return err;
	msg->hdr.type = cpu_to_le16(RNBD_MSG_IO);
	msg->hdr.__padding = 0;
	msg->device_id = cpu_to_le32(dev->device_id);
	msg->sector = cpu_to_le64(blk_rq_pos(rq));
	msg->bi_size = cpu_to_le32(blk_rq_bytes(rq));
	msg->rw = cpu_to_le32(rw | rnbd_clt_rq_flags(dev, rq));
	msg->prio = cpu_to_le16(req_get_ioprio(rq));
	memset(msg->reserved, 0, sizeof(msg->reserved));
	return 0;
}

static void rnbd_clt_io_conf(void *priv, int errno)
{
	struct rnbd_clt_iu *iu = priv;

	iu->errno = errno;
	blk_mq_complete_request(blk_mq_rq_from_pdu(iu));
}

/*
 * A request that came back because the session lost its last path waits
 * for the session's next epoch, unless the device goes or the session
 * waited for a path long enough.
 */
static bool rnbd_clt_may_retry(const struct rnbd_clt_dev *dev, int errno)
{
	return errno == -ECONNABORTED &&
	       rnbd_clt_dev_state(dev) == RNBD_CLT_DEV_MAPPED &&
	       rnbd_clt_sess_state(dev->sess) != RNBD_CLT_SESS_FAILING;
}

static void rnbd_clt_complete_rq(struct request *rq)
{
	struct rnbd_clt_dev *dev = rq->q->queuedata;
	struct rnbd_clt_iu *iu = blk_mq_rq_to_pdu(rq);

	rtrs_clt_put_permit(dev->sess->rtrs, iu->permit);
	/*
	 * Back to the queue, which the link work quiesces (or has): it goes
	 * out again when the device is open in the next epoch, or fails.
	 */
	if (rnbd_clt_may_retry(dev, iu->errno)) {
		blk_mq_requeue_request(rq, true);
		return;
	}
	blk_mq_end_request(rq, errno_to_blk_status(iu->errno));
}

static int rnbd_clt_send_io(struct rnbd_clt_dev *dev, struct request *rq,
			    struct rnbd_clt_iu *iu)
{
	struct rtrs_clt_io io = {
		.dir = rq_data_dir(rq),
		.conf = rnbd_clt_io_conf,
		.priv = iu,
		.usr = &iu->msg,
		.usr_len = sizeof(iu->msg),
		.sg = iu->sg,
	};
	int err;

	err = rnbd_clt_fill_msg(dev, rq, &iu->msg);
	if (err)
		return err;
	if ((req_op(rq) == REQ_OP_READ || req_op(rq) == REQ_OP_WRITE) &&
	    blk_rq_nr_phys_segments(rq)) {
		/* Its own entries: all max_segments of them are 4 KiB to clear. */
		sg_init_table(iu->sg, blk_rq_nr_phys_segments(rq));
		io.sg_cnt = blk_rq_map_sg(rq->q, rq, iu->sg);
	}
	if (io.sg_cnt)
		io.len = blk_rq_bytes(rq);
	return rtrs_clt_request(dev->sess->rtrs, iu->permit, &io);
}

/*
 * The request of a device whose id is void: it waits, the link work
 * quiescing the queue soon if it has not yet (BLK_STS_RESOURCE has blk-mq
 * try again a few milliseconds later, as NVMe's fabrics do for a
 * controller that is not live), or fails once the session waited for a
 * path long enough.
 */
static blk_status_t rnbd_clt_no_id(struct rnbd_clt_dev *dev)
{
	return rnbd_clt_sess_state(dev->sess) == RNBD_CLT_SESS_FAILING ?
	       BLK_STS_IOERR : BLK_STS_RESOURCE;
}

/* The polled queues come after one per CPU, see rnbd_clt_map_queues(). */
static unsigned int rnbd_clt_poll_queue(const struct blk_mq_hw_ctx *hctx)
{
	return hctx->queue_num - nr_cpu_ids;
}

static blk_status_t rnbd_clt_queue_rq(struct blk_mq_hw_ctx *hctx,
				      const struct blk_mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct rnbd_clt_dev *dev = rq->q->queuedata;
	struct rnbd_clt_iu *iu = blk_mq_rq_to_pdu(rq);
	blk_status_t sts = BLK_STS_OK;
	int err;

	if (rnbd_clt_dev_state(dev) != RNBD_CLT_DEV_MAPPED)
		return BLK_STS_IOERR;
	/* None only from a server of fewer than 3 permits: struct rtrs_attrs */
	iu->permit = rtrs_clt_get_permit(dev->sess->rtrs, RTRS_IO_CON,
					 RTRS_PERMIT_NOWAIT);
	if (!iu->permit)
		return BLK_STS_RESOURCE;
	if (hctx->type == HCTX_TYPE_POLL)
		rtrs_permit_set_poll_queue(iu->permit,
					   rnbd_clt_poll_queue(hctx));
	/* The id is sent in the epoch it is valid in: rnbd_clt_send_msg(). */
	rcu_read_lock();
	if (!rnbd_clt_dev_id_valid(dev)) {
		rcu_read_unlock();
		sts = rnbd_clt_no_id(dev);
		goto out_put_permit;
	}
	blk_mq_start_request(rq);
	err = rnbd_clt_send_io(dev, rq, iu);
	rcu_read_unlock();
	if (!err)
		return BLK_STS_OK;
	if (err == -ECONNABORTED) {
		/* No path: the loss is on its way to the link work. */
		sts = rnbd_clt_no_id(dev);
		goto out_put_permit;
	}
	pr_err_ratelimited("%s: IO to %s failed: %d\n", dev->sess->sessname,
			   dev->gd->disk_name, err);
	sts = err == -EOPNOTSUPP ? BLK_STS_NOTSUPP : BLK_STS_IOERR;
out_put_permit:
	rtrs_clt_put_permit(dev->sess->rtrs, iu->permit);
	return sts;
}

static int rnbd_clt_poll(struct blk_mq_hw_ctx *hctx,
			 struct io_comp_batch *iob)
{
	struct rnbd_clt_session *sess = hctx->queue->tag_set->driver_data;

	return rtrs_clt_poll(sess->rtrs, rnbd_clt_poll_queue(hctx));
}

/*
 * A queue per CPU takes the reads and writes of that CPU; the polled
 * queues, when asked for, take the polled IO.
 */
static void rnbd_clt_map_queues(struct blk_mq_tag_set *set)
{
	struct rnbd_clt_session *sess = set->driver_data;
	unsigned int i;

	for (i = 0; i < set->nr_maps; i++) {
		struct blk_mq_queue_map *map = &set->map[i];

		/* Reads share the queues of the default map. */
		map->nr_queues = i == HCTX_TYPE_POLL ? sess->nr_poll_queues :
						       nr_cpu_ids;
		map->queue_offset = i == HCTX_TYPE_POLL ? nr_cpu_ids : 0;
		blk_mq_map_queues(map);
	}
}

/*
 * The request has been in RTRS for RNBD_CLT_IO_TIMEOUT: RTRS reaps it, or
 * closes its path if it waited there that long, which sends it again on
 * another.  Unless that completed it, it stays ours: its completion comes
 * through RTRS, from the path that answers or with the error of the last
 * one, and the timer runs again.
 */
static enum blk_eh_timer_return rnbd_clt_timeout(struct request *rq)
{
	struct rnbd_clt_dev *dev = rq->q->queuedata;
	struct rnbd_clt_iu *iu = blk_mq_rq_to_pdu(rq);

	rtrs_clt_overdue(dev->sess->rtrs, iu->permit, iu, RNBD_CLT_IO_TIMEOUT);
	if (blk_mq_rq_state(rq) != MQ_RQ_IN_FLIGHT)
		return BLK_EH_DONE;
	return BLK_EH_RESET_TIMER;
}

static const struct blk_mq_ops rnbd_clt_mq_ops = {
	.queue_rq = rnbd_clt_queue_rq,
	.complete = rnbd_clt_complete_rq,
	.timeout = rnbd_clt_timeout,
	.map_queues = rnbd_clt_map_queues,
	.poll = rnbd_clt_poll,
};

int rnbd_clt_alloc_tag_set(struct rnbd_clt_session *sess)
{
	struct blk_mq_tag_set *set = &sess->tag_set;

	set->ops = &rnbd_clt_mq_ops;
	set->nr_hw_queues = nr_cpu_ids + sess->nr_poll_queues;
	set->nr_maps = sess->nr_poll_queues ? HCTX_MAX_TYPES : 1;
	/*
	 * One tag per IO permit, shared by the hardware queues of every
	 * device of the session: a request waits for its tag in blk-mq,
	 * where a completion wakes it, rather than for a permit.  Shared
	 * tags would make mq-deadline the default scheduler: none stays.
	 */
	set->queue_depth = sess->queue_depth;
	set->numa_node = NUMA_NO_NODE;
	set->flags = BLK_MQ_F_SHOULD_MERGE | BLK_MQ_F_TAG_HCTX_SHARED |
		     BLK_MQ_F_NO_SCHED_BY_DEFAULT;
	set->timeout = RNBD_CLT_IO_TIMEOUT;
	set->cmd_size = struct_size((struct rnbd_clt_iu *)NULL, sg,
				    sess->max_segments);
	set->driver_data = sess;
	return blk_mq_alloc_tag_set(set);
}
