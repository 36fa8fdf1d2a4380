// SPDX-License-Identifier: GPL-2.0-only
/*
 * RNBD client: maps block devices of an RNBD server as /dev/rnbdN.
 *
 * Devices mapped with the same session name share one RTRS session and one
 * tag set.  A session starts with SESS_INFO; a device is opened with OPEN
 * and closed with CLOSE.  Both SESS_INFO and OPEN are READ requests whose
 * data is the server's answer.  A remap OPENs a mapped device again, under
 * its disk, and takes the server's new id, size and limits.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include <rnbd-compat.h>

#include "rnbd-clt.h"

/* Minors per device: the disk and its partitions. */
#define RNBD_CLT_PART_BITS	6

/* Block major of /dev/rnbdN, assigned at load. */
static int rnbd_clt_major;

/* Indexes N of /dev/rnbdN. */
static DEFINE_IDA(rnbd_clt_ida);

/* Serialises map and unmap; protects rnbd_clt_sessions and their devs. */
static DEFINE_MUTEX(rnbd_clt_mutex);
static LIST_HEAD(rnbd_clt_sessions);

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

const char *rnbd_clt_dev_state_str(enum rnbd_clt_dev_state state)
{
	switch (state) {
	case RNBD_CLT_DEV_MAPPING:
		return "init";
	case RNBD_CLT_DEV_MAPPED:
		return "open";
	case RNBD_CLT_DEV_CLOSED:
		return "closed";
	case RNBD_CLT_DEV_UNMAPPING:
		return "unmapped";
	}
	return "unknown";
}

/* Messages of the session: one request, waited for */

struct rnbd_clt_wait {
	struct completion done;
	int errno;
};

static void rnbd_clt_msg_conf(void *priv, int errno)
{
	struct rnbd_clt_wait *wait = priv;

	wait->errno = errno;
	complete(&wait->done);
}

/* Send @msg; for a READ, the server's answer lands in @rsp (kmalloc'ed). */
static int rnbd_clt_send_msg(struct rnbd_clt_session *sess, int dir,
			     void *msg, size_t msg_len, void *rsp,
			     size_t rsp_len)
{
	struct rnbd_clt_wait wait = { .errno = 0 };
	struct rtrs_clt_req_ops ops = {
		.priv = &wait,
		.conf_fn = rnbd_clt_msg_conf,
	};
	struct kvec vec = { .iov_base = msg, .iov_len = msg_len };
	struct rtrs_permit *permit;
	struct scatterlist sg;
	int err;

	init_completion(&wait.done);
	if (rsp)
		sg_init_one(&sg, rsp, rsp_len);
	permit = rtrs_clt_get_permit(sess->rtrs, RTRS_ADMIN_CON,
				     RTRS_PERMIT_WAIT);
	err = rtrs_clt_request(dir, &ops, sess->rtrs, permit, &vec, 1,
			       rsp ? rsp_len : 0, rsp ? &sg : NULL,
			       rsp ? 1 : 0);
	if (!err) {
		wait_for_completion(&wait.done);
		err = wait.errno;
	}
	rtrs_clt_put_permit(sess->rtrs, permit);
	return err;
}

static int rnbd_clt_send_sess_info(struct rnbd_clt_session *sess)
{
	struct rnbd_msg_sess_info msg = {
		.hdr.type = cpu_to_le16(RNBD_MSG_SESS_INFO),
		.ver = RNBD_PROTO_VER_MAJOR,
	};
	struct rnbd_msg_sess_info_rsp *rsp;
	int err;

	rsp = kzalloc(sizeof(*rsp), GFP_KERNEL);
	if (!rsp)
		return -ENOMEM;
	err = rnbd_clt_send_msg(sess, READ, &msg, sizeof(msg), rsp,
				sizeof(*rsp));
	if (!err && le16_to_cpu(rsp->hdr.type) != RNBD_MSG_SESS_INFO_RSP)
		err = -EBADMSG;
	if (!err)
		sess->ver = min_t(u8, rsp->ver, RNBD_PROTO_VER_MAJOR);
	kfree(rsp);
	if (err)
		pr_err("%s: SESS_INFO failed: %d\n", sess->sessname, err);
	return err;
}

static int rnbd_clt_send_open(struct rnbd_clt_dev *dev,
			      struct rnbd_msg_open_rsp *rsp)
{
	struct rnbd_msg_open msg = {
		.hdr.type = cpu_to_le16(RNBD_MSG_OPEN),
		.access_mode = dev->access_mode,
	};
	int err;

	strscpy(msg.dev_name, dev->pathname, sizeof(msg.dev_name));
	err = rnbd_clt_send_msg(dev->sess, READ, &msg, sizeof(msg), rsp,
				sizeof(*rsp));
	if (!err && le16_to_cpu(rsp->hdr.type) != RNBD_MSG_OPEN_RSP)
		err = -EBADMSG;
	return err;
}

/* What the IO path needs of the server's answer to an OPEN. */
static void rnbd_clt_take_open_rsp(struct rnbd_clt_dev *dev,
				   const struct rnbd_msg_open_rsp *rsp)
{
	dev->device_id = le32_to_cpu(rsp->device_id);
	dev->nsectors = le64_to_cpu(rsp->nsectors);
	dev->new_flags = rsp->max_write_zeroes_sectors != 0;
}

static void rnbd_clt_send_close(struct rnbd_clt_dev *dev)
{
	struct rnbd_msg_close msg = {
		.hdr.type = cpu_to_le16(RNBD_MSG_CLOSE),
		.device_id = cpu_to_le32(dev->device_id),
	};
	int err;

	err = rnbd_clt_send_msg(dev->sess, WRITE, &msg, sizeof(msg), NULL, 0);
	if (err)
		pr_warn("%s: CLOSE of %s failed: %d\n", dev->sess->sessname,
			dev->pathname, err);
}

/* IO */

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

static void rnbd_clt_complete_rq(struct request *rq)
{
	struct rnbd_clt_dev *dev = rq->q->queuedata;
	struct rnbd_clt_iu *iu = blk_mq_rq_to_pdu(rq);

	rtrs_clt_put_permit(dev->sess->rtrs, iu->permit);
	blk_mq_end_request(rq, errno_to_blk_status(iu->errno));
}

static int rnbd_clt_send_io(struct rnbd_clt_dev *dev, struct request *rq,
			    struct rnbd_clt_iu *iu)
{
	struct rtrs_clt_req_ops ops = {
		.priv = iu,
		.conf_fn = rnbd_clt_io_conf,
	};
	struct kvec vec = { .iov_base = &iu->msg, .iov_len = sizeof(iu->msg) };
	unsigned int sg_cnt = 0;
	int err;

	err = rnbd_clt_fill_msg(dev, rq, &iu->msg);
	if (err)
		return err;
	if (req_op(rq) == REQ_OP_READ || req_op(rq) == REQ_OP_WRITE) {
		sg_init_table(iu->sg, dev->sess->max_segments);
		sg_cnt = blk_rq_map_sg(rq->q, rq, iu->sg);
	}
	return rtrs_clt_request(rq_data_dir(rq), &ops, dev->sess->rtrs,
				iu->permit, &vec, 1,
				sg_cnt ? blk_rq_bytes(rq) : 0, iu->sg, sg_cnt);
}

static blk_status_t rnbd_clt_queue_rq(struct blk_mq_hw_ctx *hctx,
				      const struct blk_mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct rnbd_clt_dev *dev = rq->q->queuedata;
	struct rnbd_clt_iu *iu = blk_mq_rq_to_pdu(rq);
	int err;

	if (READ_ONCE(dev->state) != RNBD_CLT_DEV_MAPPED)
		return BLK_STS_IOERR;
	iu->permit = rtrs_clt_get_permit(dev->sess->rtrs, RTRS_IO_CON,
					 RTRS_PERMIT_NOWAIT);
	if (!iu->permit)
		return BLK_STS_RESOURCE;
	blk_mq_start_request(rq);
	err = rnbd_clt_send_io(dev, rq, iu);
	if (err) {
		rtrs_clt_put_permit(dev->sess->rtrs, iu->permit);
		pr_err_ratelimited("%s: IO to %s failed: %d\n",
				   dev->sess->sessname, dev->gd->disk_name,
				   err);
		return err == -EOPNOTSUPP ? BLK_STS_NOTSUPP : BLK_STS_IOERR;
	}
	return BLK_STS_OK;
}

static const struct blk_mq_ops rnbd_clt_mq_ops = {
	.queue_rq = rnbd_clt_queue_rq,
	.complete = rnbd_clt_complete_rq,
};

/* Block device */

static const struct block_device_operations rnbd_clt_fops = {
	.owner = THIS_MODULE,
};

static void rnbd_clt_limits(const struct rnbd_clt_dev *dev,
			    const struct rnbd_msg_open_rsp *rsp,
			    struct rnbd_clt_limits *lim)
{
	const struct rnbd_clt_session *sess = dev->sess;

	*lim = (struct rnbd_clt_limits) {
		.logical_block_size = le16_to_cpu(rsp->logical_block_size),
		.physical_block_size = le16_to_cpu(rsp->physical_block_size),
		.max_hw_sectors = min(le32_to_cpu(rsp->max_hw_sectors),
				      sess->max_io_size >> SECTOR_SHIFT),
		.max_segments = sess->max_segments,
		/* A READ's pages go into one memory registration. */
		.virt_boundary_mask = SZ_4K - 1,
		.max_discard_sectors = le32_to_cpu(rsp->max_discard_sectors),
		.discard_granularity = le32_to_cpu(rsp->discard_granularity),
		.discard_alignment = le32_to_cpu(rsp->discard_alignment),
		.max_secure_erase_sectors = le16_to_cpu(rsp->secure_discard),
		.max_write_zeroes_sectors =
			le32_to_cpu(rsp->max_write_zeroes_sectors),
		.write_cache = rsp->cache_policy & RNBD_WRITEBACK,
		.fua = rsp->cache_policy & RNBD_FUA,
	};
	if (!lim->logical_block_size)
		lim->logical_block_size = SECTOR_SIZE;
}

static int rnbd_clt_add_disk(struct rnbd_clt_dev *dev,
			     const struct rnbd_msg_open_rsp *rsp)
{
	struct rnbd_clt_limits lim;
	struct gendisk *gd;
	int err;

	rnbd_clt_limits(dev, rsp, &lim);
	gd = rnbd_compat_alloc_disk(&dev->sess->tag_set, &lim, dev);
	if (IS_ERR(gd))
		return PTR_ERR(gd);
	gd->major = rnbd_clt_major;
	gd->first_minor = dev->index << RNBD_CLT_PART_BITS;
	gd->minors = 1 << RNBD_CLT_PART_BITS;
	gd->fops = &rnbd_clt_fops;
	gd->private_data = dev;
	snprintf(gd->disk_name, sizeof(gd->disk_name), "rnbd%d", dev->index);
	set_capacity(gd, dev->nsectors);
	set_disk_ro(gd, dev->access_mode == RNBD_ACCESS_RO);
	dev->gd = gd;
	/* Open for IO before add_disk(), which reads the partition table. */
	WRITE_ONCE(dev->state, RNBD_CLT_DEV_MAPPED);
	err = add_disk(gd);
	if (err) {
		WRITE_ONCE(dev->state, RNBD_CLT_DEV_UNMAPPING);
		put_disk(gd);
		dev->gd = NULL;
	}
	return err;
}

/* Sessions */

static void rnbd_clt_link_ev(void *priv, enum rtrs_clt_link_ev ev)
{
	struct rnbd_clt_session *sess = priv;

	/* The server closed the session's devices with its last path. */
	if (ev == RTRS_CLT_LINK_EV_DISCONNECTED)
		pr_warn("%s: lost its last path: IO fails until a path is back and the devices are remapped\n",
			sess->sessname);
	else
		pr_info("%s: a path is back: remap_device opens the devices again\n",
			sess->sessname);
}

static int rnbd_clt_alloc_tag_set(struct rnbd_clt_session *sess)
{
	struct blk_mq_tag_set *set = &sess->tag_set;

	set->ops = &rnbd_clt_mq_ops;
	set->nr_hw_queues = nr_cpu_ids;
	set->queue_depth = sess->queue_depth;
	set->numa_node = NUMA_NO_NODE;
	set->flags = BLK_MQ_F_SHOULD_MERGE;
	set->cmd_size = struct_size((struct rnbd_clt_iu *)NULL, sg,
				    sess->max_segments);
	set->driver_data = sess;
	return blk_mq_alloc_tag_set(set);
}

static int rnbd_clt_open_rtrs(struct rnbd_clt_session *sess,
			      const struct rnbd_clt_map_opts *opts)
{
	struct rtrs_clt_ops ops = {
		.priv = sess,
		.link_ev = rnbd_clt_link_ev,
	};
	struct rtrs_clt_open_args args = {
		.sessname = sess->sessname,
		.paths = opts->paths,
		.path_cnt = opts->path_cnt,
		.port = opts->port,
		.max_reconnect_attempts = -1,
	};
	struct rtrs_attrs attrs;

	sess->rtrs = rtrs_clt_open(&ops, &args);
	if (IS_ERR(sess->rtrs))
		return PTR_ERR(sess->rtrs);
	rtrs_clt_query(sess->rtrs, &attrs);
	sess->queue_depth = attrs.queue_depth;
	sess->max_io_size = attrs.max_io_size;
	sess->max_segments = attrs.max_segments;
	return 0;
}

static struct rnbd_clt_session *
rnbd_clt_create_sess(const struct rnbd_clt_map_opts *opts)
{
	struct rnbd_clt_session *sess;
	int err;

	sess = kzalloc(sizeof(*sess), GFP_KERNEL);
	if (!sess)
		return ERR_PTR(-ENOMEM);
	strscpy(sess->sessname, opts->sessname, sizeof(sess->sessname));
	kref_init(&sess->kref);
	INIT_LIST_HEAD(&sess->devs);
	err = rnbd_clt_open_rtrs(sess, opts);
	if (err)
		goto out_free_sess;
	err = rnbd_clt_alloc_tag_set(sess);
	if (err)
		goto out_close_rtrs;
	err = rnbd_clt_send_sess_info(sess);
	if (err)
		goto out_free_tag_set;
	list_add_tail(&sess->entry, &rnbd_clt_sessions);
	return sess;

out_free_tag_set:
	blk_mq_free_tag_set(&sess->tag_set);
out_close_rtrs:
	rtrs_clt_close(sess->rtrs);
out_free_sess:
	kfree(sess);
	return ERR_PTR(err);
}

static struct rnbd_clt_session *
rnbd_clt_get_sess(const struct rnbd_clt_map_opts *opts)
{
	struct rnbd_clt_session *sess;

	lockdep_assert_held(&rnbd_clt_mutex);
	list_for_each_entry(sess, &rnbd_clt_sessions, entry) {
		if (!strcmp(sess->sessname, opts->sessname)) {
			kref_get(&sess->kref);
			return sess;
		}
	}
	return rnbd_clt_create_sess(opts);
}

static void rnbd_clt_sess_release(struct kref *kref)
{
	struct rnbd_clt_session *sess = container_of(kref,
						     struct rnbd_clt_session,
						     kref);

	lockdep_assert_held(&rnbd_clt_mutex);
	list_del(&sess->entry);
	rtrs_clt_close(sess->rtrs);
	blk_mq_free_tag_set(&sess->tag_set);
	kfree(sess);
}

static void rnbd_clt_put_sess(struct rnbd_clt_session *sess)
{
	lockdep_assert_held(&rnbd_clt_mutex);
	kref_put(&sess->kref, rnbd_clt_sess_release);
}

/* Mapping and unmapping */

/* The same path, or one whose link in ctl/devices/ would have its name. */
static bool rnbd_clt_dev_exists(struct rnbd_clt_session *sess,
				const char *pathname)
{
	struct rnbd_clt_dev *dev;

	lockdep_assert_held(&rnbd_clt_mutex);
	list_for_each_entry(dev, &sess->devs, entry) {
		if (rnbd_clt_sysfs_link_name_eq(dev->pathname, pathname))
			return true;
	}
	return false;
}

/* Freed by the release of its kobject. */
void rnbd_clt_free_dev(struct rnbd_clt_dev *dev)
{
	if (dev->index >= 0)
		ida_free(&rnbd_clt_ida, dev->index);
	mutex_destroy(&dev->lock);
	kfree(dev);
}

static struct rnbd_clt_dev *
rnbd_clt_alloc_dev(struct rnbd_clt_session *sess,
		   const struct rnbd_clt_map_opts *opts)
{
	struct rnbd_clt_dev *dev;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return ERR_PTR(-ENOMEM);
	dev->sess = sess;
	strscpy(dev->pathname, opts->pathname, sizeof(dev->pathname));
	dev->access_mode = opts->access_mode;
	dev->nr_poll_queues = opts->nr_poll_queues;
	dev->state = RNBD_CLT_DEV_MAPPING;
	mutex_init(&dev->lock);
	rnbd_clt_sysfs_init_dev(dev);
	dev->index = ida_alloc_max(&rnbd_clt_ida,
				   (1 << (MINORBITS - RNBD_CLT_PART_BITS)) - 1,
				   GFP_KERNEL);
	if (dev->index < 0) {
		int err = dev->index;

		kobject_put(&dev->kobj);
		return ERR_PTR(err);
	}
	return dev;
}

/* Open the device on the server and make its disk. */
static int rnbd_clt_setup_dev(struct rnbd_clt_dev *dev)
{
	struct rnbd_msg_open_rsp *rsp;
	int err;

	rsp = kzalloc(sizeof(*rsp), GFP_KERNEL);
	if (!rsp)
		return -ENOMEM;
	err = rnbd_clt_send_open(dev, rsp);
	if (err) {
		pr_err("%s: cannot open %s on the server: %d\n",
		       dev->sess->sessname, dev->pathname, err);
		goto out_free_rsp;
	}
	rnbd_clt_take_open_rsp(dev, rsp);
	err = rnbd_clt_add_disk(dev, rsp);
	if (err)
		goto out_close;
	pr_info("%s: %s mapped as %s (%llu sectors, %s)\n",
		dev->sess->sessname, dev->pathname, dev->gd->disk_name,
		dev->nsectors, rnbd_access_mode_str(dev->access_mode));
	kfree(rsp);
	return 0;

out_close:
	rnbd_clt_send_close(dev);
out_free_rsp:
	kfree(rsp);
	return err;
}

/* @close: the device is open on the server (not "closed" by a remap). */
static void rnbd_clt_del_disk(struct rnbd_clt_dev *dev, bool close)
{
	del_gendisk(dev->gd);
	if (close)
		rnbd_clt_send_close(dev);
	put_disk(dev->gd);
	dev->gd = NULL;
}

/**
 * rnbd_clt_map() - map a device of a server
 * @opts: what map_device was told
 *
 * Context: process; sleeps until the device is mapped or that failed.
 * Return: 0 or a negative errno.
 */
int rnbd_clt_map(struct rnbd_clt_map_opts *opts)
{
	struct rnbd_clt_session *sess;
	struct rnbd_clt_dev *dev;
	int err;

	/*
	 * A mapped device keeps the module: rmmod is refused rather than
	 * taking the disk away.  Fails while the module is going.
	 */
	if (!try_module_get(THIS_MODULE))
		return -ENODEV;
	mutex_lock(&rnbd_clt_mutex);
	sess = rnbd_clt_get_sess(opts);
	if (IS_ERR(sess)) {
		err = PTR_ERR(sess);
		goto out_unlock;
	}
	if (rnbd_clt_dev_exists(sess, opts->pathname)) {
		pr_err("%s: %s is mapped already\n", sess->sessname,
		       opts->pathname);
		err = -EEXIST;
		goto out_put_sess;
	}
	dev = rnbd_clt_alloc_dev(sess, opts);
	if (IS_ERR(dev)) {
		err = PTR_ERR(dev);
		goto out_put_sess;
	}
	err = rnbd_clt_setup_dev(dev);
	if (err)
		goto out_put_dev;
	err = rnbd_clt_sysfs_add_dev(dev);
	if (err)
		goto out_del_disk;
	list_add_tail(&dev->entry, &sess->devs);
	mutex_unlock(&rnbd_clt_mutex);
	return 0;

out_del_disk:
	WRITE_ONCE(dev->state, RNBD_CLT_DEV_UNMAPPING);
	rnbd_clt_del_disk(dev, true);
out_put_dev:
	kobject_put(&dev->kobj);
out_put_sess:
	rnbd_clt_put_sess(sess);
out_unlock:
	mutex_unlock(&rnbd_clt_mutex);
	module_put(THIS_MODULE);
	return err;
}

/*
 * Refuse a normal unmap while the disk is open; make the device refuse
 * new IO.  The disk's open_mutex keeps openers out while we look.  @close
 * says whether the server has the device open, to be closed.
 */
static int rnbd_clt_start_unmap(struct rnbd_clt_dev *dev, bool force,
				bool *close)
{
	int err = 0;

	mutex_lock(&dev->gd->open_mutex);
	mutex_lock(&dev->lock);
	*close = dev->state == RNBD_CLT_DEV_MAPPED;
	if (dev->state != RNBD_CLT_DEV_MAPPED &&
	    dev->state != RNBD_CLT_DEV_CLOSED)
		err = -EALREADY;
	else if (disk_openers(dev->gd) && !force)
		err = -EBUSY;
	else
		WRITE_ONCE(dev->state, RNBD_CLT_DEV_UNMAPPING);
	mutex_unlock(&dev->lock);
	mutex_unlock(&dev->gd->open_mutex);
	return err;
}

/**
 * rnbd_clt_unmap() - unmap a device
 * @dev: the device
 * @force: unmap it even while it is open
 * @self: the sysfs file of @dev this is written through
 *
 * Return: 0, -EBUSY when @dev is open and not @force, -EALREADY when it
 * is being unmapped already.
 */
int rnbd_clt_unmap(struct rnbd_clt_dev *dev, bool force,
		   const struct attribute *self)
{
	struct rnbd_clt_session *sess = dev->sess;
	bool close;
	int err;

	err = rnbd_clt_start_unmap(dev, force, &close);
	if (err)
		return err;
	sysfs_remove_file_self(&dev->kobj, self);
	pr_info("%s: unmapping %s (%s)\n", sess->sessname, dev->gd->disk_name,
		dev->pathname);
	rnbd_clt_sysfs_del_dev(dev);
	rnbd_clt_del_disk(dev, close);

	mutex_lock(&rnbd_clt_mutex);
	list_del(&dev->entry);
	kobject_put(&dev->kobj);
	rnbd_clt_put_sess(sess);
	mutex_unlock(&rnbd_clt_mutex);
	module_put(THIS_MODULE);
	return 0;
}

/* Remap and resize */

/*
 * OPEN the device again.  Linux's server answers an OPEN of a device the
 * session has open with the id it has; ours refuses it with EEXIST, and
 * the device is closed first then.  The old id is closed in no other case:
 * once the server closed the device (force_close), the id may have gone
 * to another device of the session.
 */
static int rnbd_clt_reopen(struct rnbd_clt_dev *dev,
			   struct rnbd_msg_open_rsp *rsp)
{
	int err;

	lockdep_assert_held(&dev->lock);
	err = rnbd_clt_send_open(dev, rsp);
	if (err != -EEXIST)
		return err;
	rnbd_clt_send_close(dev);
	WRITE_ONCE(dev->state, RNBD_CLT_DEV_CLOSED);
	return rnbd_clt_send_open(dev, rsp);
}

/*
 * The new id, size and limits of the device; its queue is frozen.  The
 * size undoes a resize: it is the server's again.
 */
static int rnbd_clt_take_reopen_rsp(struct rnbd_clt_dev *dev,
				    const struct rnbd_msg_open_rsp *rsp)
{
	struct rnbd_clt_limits lim;
	int err;

	rnbd_clt_take_open_rsp(dev, rsp);
	WRITE_ONCE(dev->state, RNBD_CLT_DEV_MAPPED);
	set_capacity_and_notify(dev->gd, dev->nsectors);
	rnbd_clt_limits(dev, rsp, &lim);
	err = rnbd_compat_update_limits(dev->gd->queue, &lim);
	if (err)
		pr_err("%s: %s keeps its queue limits, the server's new ones are refused: %d\n",
		       dev->sess->sessname, dev->gd->disk_name, err);
	return err;
}

/*
 * No IO is in flight or sent while the device changes its id; nothing
 * allocated meanwhile may wait for IO to it.
 */
static int rnbd_clt_remap_frozen(struct rnbd_clt_dev *dev,
				 struct rnbd_msg_open_rsp *rsp)
{
	struct request_queue *q = dev->gd->queue;
	unsigned int noio;
	int err;

	blk_mq_freeze_queue(q);
	noio = memalloc_noio_save();
	err = rnbd_clt_reopen(dev, rsp);
	if (err)
		pr_err("%s: remap_device: cannot open %s on the server: %d%s\n",
		       dev->sess->sessname, dev->pathname, err,
		       dev->state == RNBD_CLT_DEV_CLOSED ?
		       "; the device is closed" : "");
	else
		err = rnbd_clt_take_reopen_rsp(dev, rsp);
	memalloc_noio_restore(noio);
	blk_mq_unfreeze_queue(q);
	return err;
}

/**
 * rnbd_clt_remap() - open a mapped device on the server again
 * @dev: the device, open or closed by an earlier remap
 *
 * The disk stays; its IO waits meanwhile.  The device takes the server's
 * new id, size and queue limits.
 *
 * Context: process, under a sysfs file of @dev.
 * Return: 0, -ENODEV when @dev is being unmapped, or the server's errno;
 * the device is "closed" then if it was closed on the server for the
 * remap.
 */
int rnbd_clt_remap(struct rnbd_clt_dev *dev)
{
	struct rnbd_msg_open_rsp *rsp;
	int err;

	rsp = kzalloc(sizeof(*rsp), GFP_KERNEL);
	if (!rsp)
		return -ENOMEM;
	mutex_lock(&dev->lock);
	if (dev->state != RNBD_CLT_DEV_MAPPED &&
	    dev->state != RNBD_CLT_DEV_CLOSED) {
		pr_err("%s: remap_device: %s is %s\n", dev->sess->sessname,
		       dev->gd->disk_name, rnbd_clt_dev_state_str(dev->state));
		err = -ENODEV;
		goto out_unlock;
	}
	err = rnbd_clt_remap_frozen(dev, rsp);
	if (!err)
		pr_info("%s: %s remapped: %s is %u now (%llu sectors)\n",
			dev->sess->sessname, dev->gd->disk_name, dev->pathname,
			dev->device_id, dev->nsectors);
out_unlock:
	mutex_unlock(&dev->lock);
	kfree(rsp);
	return err;
}

/**
 * rnbd_clt_resize() - change the capacity of a mapped device
 * @dev: the device
 * @nsectors: its new capacity: 1 to the server's size, in logical blocks
 *
 * Return: 0, -EINVAL for a size out of bounds, -ENOENT when @dev is not
 * open.
 */
int rnbd_clt_resize(struct rnbd_clt_dev *dev, u64 nsectors)
{
	unsigned int lbs;
	int err = 0;

	mutex_lock(&dev->lock);
	lbs = queue_logical_block_size(dev->gd->queue) >> SECTOR_SHIFT;
	if (dev->state != RNBD_CLT_DEV_MAPPED) {
		pr_err("%s: resize: %s is %s\n", dev->sess->sessname,
		       dev->gd->disk_name, rnbd_clt_dev_state_str(dev->state));
		err = -ENOENT;
	} else if (!nsectors || nsectors > dev->nsectors ||
		   !IS_ALIGNED(nsectors, lbs)) {
		pr_err("%s: resize: %llu sectors for %s, not 1 to %llu in multiples of %u\n",
		       dev->sess->sessname, nsectors, dev->gd->disk_name,
		       dev->nsectors, lbs);
		err = -EINVAL;
	} else {
		set_capacity_and_notify(dev->gd, nsectors);
	}
	mutex_unlock(&dev->lock);
	return err;
}

static int __init rnbd_clt_init(void)
{
	int err;

	rnbd_clt_major = register_blkdev(0, "rnbd");
	if (rnbd_clt_major < 0) {
		pr_err("cannot register a block major: %d\n", rnbd_clt_major);
		return rnbd_clt_major;
	}
	err = rnbd_clt_sysfs_init();
	if (err)
		goto out_unregister_blkdev;
	return 0;

out_unregister_blkdev:
	unregister_blkdev(rnbd_clt_major, "rnbd");
	return err;
}

static void __exit rnbd_clt_exit(void)
{
	rnbd_clt_sysfs_exit();
	/* Each mapped device holds the module: there is none left. */
	WARN_ON(!list_empty(&rnbd_clt_sessions));
	unregister_blkdev(rnbd_clt_major, "rnbd");
	ida_destroy(&rnbd_clt_ida);
}

module_init(rnbd_clt_init);
module_exit(rnbd_clt_exit);

MODULE_DESCRIPTION("RDMA Network Block Device (RNBD) client");
MODULE_LICENSE("GPL");
