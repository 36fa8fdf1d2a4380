// SPDX-License-Identifier: GPL-2.0-only
/*
 * RNBD client: maps block devices of an RNBD server as /dev/rnbdN.
 *
 * Devices mapped with the same session name share one RTRS session and one
 * tag set.  A session starts with SESS_INFO; a device is opened with OPEN
 * and closed with CLOSE.  Both SESS_INFO and OPEN are READ requests whose
 * data is the server's answer.  A remap OPENs a mapped device again, under
 * its disk, and takes the server's new id, size and limits.
 *
 * When the session loses its last path the server closes its devices.
 * Their IO waits meanwhile, queues quiesced, for at most reconnect_timeout
 * seconds, then fails; once RTRS has a path again, the session's link work
 * sends SESS_INFO and OPENs each device again, and the IO goes on with the
 * new ids.  The locks and the rules between them are described at struct
 * rnbd_clt_session.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/hdreg.h>
#include <linux/idr.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "rnbd-clt.h"

/* Minors per device: the disk and its partitions. */
#define RNBD_CLT_PART_BITS	6

/* Block major of /dev/rnbdN, assigned at load. */
static int rnbd_clt_major;

/* Indexes N of /dev/rnbdN. */
static DEFINE_IDA(rnbd_clt_ida);

/*
 * Serialises map and unmap; protects rnbd_clt_sessions and, with each
 * session's lock, their devs (see struct rnbd_clt_session).
 */
static DEFINE_MUTEX(rnbd_clt_mutex);
static LIST_HEAD(rnbd_clt_sessions);

/* The sessions' link and fail works, and the devices' limits works. */
static struct workqueue_struct *rnbd_clt_wq;

/* At most a day: a bound, not a way to wait for ever. */
#define RNBD_CLT_MAX_RECONNECT_TIMEOUT	86400

/* Seconds the IO of a session without a path waits for one. */
static unsigned int rnbd_clt_reconnect_timeout = 30;

static int rnbd_clt_set_reconnect_timeout(const char *val,
					  const struct kernel_param *kp)
{
	unsigned int sec;

	if (kstrtouint(val, 0, &sec) || sec > RNBD_CLT_MAX_RECONNECT_TIMEOUT) {
		pr_err_ratelimited("reconnect_timeout must be 0 to %u seconds, got '%.*s'\n",
				   RNBD_CLT_MAX_RECONNECT_TIMEOUT, (int)strcspn(val, "\n"),
				   val);
		return -EINVAL;
	}
	WRITE_ONCE(*(unsigned int *)kp->arg, sec);
	return 0;
}

static const struct kernel_param_ops rnbd_clt_reconnect_timeout_ops = {
	.set = rnbd_clt_set_reconnect_timeout,
	.get = param_get_uint,
};

module_param_cb(reconnect_timeout, &rnbd_clt_reconnect_timeout_ops,
		&rnbd_clt_reconnect_timeout, 0644);
MODULE_PARM_DESC(reconnect_timeout,
		 "Seconds the IO of a session that lost its last path waits for one before it fails, 0 to 86400; a change applies from the next loss (default 30)");

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

/* The states each state of a device is entered from: enum rnbd_clt_dev_state */
static const u8 rnbd_clt_dev_from[] = {
	[RNBD_CLT_DEV_MAPPING] = 0,
	[RNBD_CLT_DEV_MAPPED] = BIT(RNBD_CLT_DEV_MAPPING) |
				BIT(RNBD_CLT_DEV_MAPPED) |
				BIT(RNBD_CLT_DEV_CLOSED),
	[RNBD_CLT_DEV_CLOSED] = BIT(RNBD_CLT_DEV_MAPPED) |
				BIT(RNBD_CLT_DEV_CLOSED),
	[RNBD_CLT_DEV_UNMAPPING] = BIT(RNBD_CLT_DEV_MAPPED) |
				   BIT(RNBD_CLT_DEV_CLOSED),
};

/* Return: whether the table let @dev go to @to. */
static bool rnbd_clt_dev_change_state(struct rnbd_clt_dev *dev,
				      enum rnbd_clt_dev_state to)
{
	lockdep_assert_held(&dev->lock);
	if (!(rnbd_clt_dev_from[to] & BIT(dev->state)))
		return false;
	WRITE_ONCE(dev->state, to);
	return true;
}

/* Mapped, open on the server or closed: not mapping nor unmapping. */
static bool rnbd_clt_dev_is_mapped(const struct rnbd_clt_dev *dev)
{
	enum rnbd_clt_dev_state state = rnbd_clt_dev_state(dev);

	return state == RNBD_CLT_DEV_MAPPED || state == RNBD_CLT_DEV_CLOSED;
}

/* The states each state of a session is entered from: enum rnbd_clt_sess_state */
static const u8 rnbd_clt_sess_from[] = {
	[RNBD_CLT_SESS_LIVE] = BIT(RNBD_CLT_SESS_REOPENING),
	[RNBD_CLT_SESS_WAITING] = BIT(RNBD_CLT_SESS_LIVE) |
				  BIT(RNBD_CLT_SESS_REOPENING),
	[RNBD_CLT_SESS_FAILING] = BIT(RNBD_CLT_SESS_WAITING),
	[RNBD_CLT_SESS_REOPENING] = BIT(RNBD_CLT_SESS_WAITING) |
				    BIT(RNBD_CLT_SESS_FAILING),
	[RNBD_CLT_SESS_CLOSING] = BIT(RNBD_CLT_SESS_LIVE) |
				  BIT(RNBD_CLT_SESS_WAITING) |
				  BIT(RNBD_CLT_SESS_FAILING) |
				  BIT(RNBD_CLT_SESS_REOPENING),
};

/*
 * Entering WAITING voids the ids of the devices (a new epoch) and starts
 * the wait for a path.  Return: whether the table let @sess go to @to.
 */
static bool rnbd_clt_sess_change_state(struct rnbd_clt_session *sess,
				       enum rnbd_clt_sess_state to)
{
	lockdep_assert_held(&sess->ev_lock);
	if (!(rnbd_clt_sess_from[to] & BIT(sess->state)))
		return false;
	if (to == RNBD_CLT_SESS_WAITING) {
		WRITE_ONCE(sess->epoch, sess->epoch + 1);
		sess->wait_sec = READ_ONCE(rnbd_clt_reconnect_timeout);
		sess->fail_deadline = jiffies +
			msecs_to_jiffies(sess->wait_sec * MSEC_PER_SEC);
	}
	WRITE_ONCE(sess->state, to);
	return true;
}

/**
 * rnbd_clt_dev_state_name() - the state of a device, for sysfs
 * @dev: the device
 *
 * A mapped device whose session lost its paths since it was opened is not
 * open on the server: "closed", as Linux's client says then too.
 *
 * Return: "init", "open", "closed" or "unmapped".
 */
const char *rnbd_clt_dev_state_name(const struct rnbd_clt_dev *dev)
{
	enum rnbd_clt_dev_state state = rnbd_clt_dev_state(dev);

	if (state == RNBD_CLT_DEV_MAPPED && !rnbd_clt_dev_id_valid(dev))
		state = RNBD_CLT_DEV_CLOSED;
	return rnbd_clt_dev_state_str(state);
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

/*
 * Send @msg; with @rsp (kmalloc'ed), as a READ whose answer from the
 * server lands in @rsp, else as a WRITE.  With @epoch, only while the
 * session is still in that epoch: a message naming a device by its id must
 * not reach the next epoch's server session, where the id may be another
 * device's.  The check and the send are one RCU read section, which RTRS
 * waits for after it said the session lost its last path (rtrs.h).
 */
static int rnbd_clt_send_msg(struct rnbd_clt_session *sess, void *msg,
			     size_t msg_len, void *rsp, size_t rsp_len,
			     const u32 *epoch)
{
	struct rnbd_clt_wait wait = { .errno = 0 };
	struct scatterlist sg;
	struct rtrs_clt_io io = {
		.dir = rsp ? READ : WRITE,
		.conf = rnbd_clt_msg_conf,
		.priv = &wait,
		.usr = msg,
		.usr_len = msg_len,
		.sg = rsp ? &sg : NULL,
		.sg_cnt = rsp ? 1 : 0,
		.len = rsp ? rsp_len : 0,
	};
	struct rtrs_permit *permit;
	int err;

	init_completion(&wait.done);
	if (rsp)
		sg_init_one(&sg, rsp, rsp_len);
	permit = rtrs_clt_get_permit(sess->rtrs, RTRS_ADMIN_CON,
				     RTRS_PERMIT_WAIT);
	rcu_read_lock();
	if (epoch && *epoch != READ_ONCE(sess->epoch))
		err = -ESTALE;
	else
		err = rtrs_clt_request(sess->rtrs, permit, &io);
	rcu_read_unlock();
	if (!err) {
		/* As blk-mq's timeout does for the IO. */
		while (!wait_for_completion_timeout(&wait.done,
						    RNBD_CLT_IO_TIMEOUT))
			rtrs_clt_overdue(sess->rtrs, permit, &wait,
					 RNBD_CLT_IO_TIMEOUT);
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
	err = rnbd_clt_send_msg(sess, &msg, sizeof(msg), rsp,
				sizeof(*rsp), NULL);
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
	err = rnbd_clt_send_msg(dev->sess, &msg, sizeof(msg), rsp,
				sizeof(*rsp), NULL);
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

/*
 * CLOSE the device's id.  @any_epoch: the server has it open whatever the
 * epoch (it said so); else only in the epoch the id was given in, as the
 * server closed the device with the session otherwise.
 */
static void rnbd_clt_send_close(struct rnbd_clt_dev *dev, bool any_epoch)
{
	struct rnbd_msg_close msg = {
		.hdr.type = cpu_to_le16(RNBD_MSG_CLOSE),
		.device_id = cpu_to_le32(dev->device_id),
	};
	int err;

	err = rnbd_clt_send_msg(dev->sess, &msg, sizeof(msg), NULL, 0,
				any_epoch ? NULL : &dev->open_epoch);
	if (err && err != -ESTALE)
		pr_warn("%s: CLOSE of %s failed: %d\n", dev->sess->sessname,
			dev->pathname, err);
}

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
	rnbd_clt_send_close(dev, true);
	rnbd_clt_dev_change_state(dev, RNBD_CLT_DEV_CLOSED);
	return rnbd_clt_send_open(dev, rsp);
}

/* Block device */

/*
 * A made-up geometry, for the tools that still ask: Linux's client
 * answers 4 heads of 16 sectors, whatever the size.
 */
static int rnbd_clt_getgeo(struct block_device *bdev, struct hd_geometry *geo)
{
	geo->heads = 4;
	geo->sectors = 16;
	geo->cylinders = get_capacity(bdev->bd_disk) / (4 * 16);
	geo->start = 0;
	return 0;
}

static const struct block_device_operations rnbd_clt_fops = {
	.owner = THIS_MODULE,
	.getgeo = rnbd_clt_getgeo,
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
		/* As upstream: the largest IO the session carries in one. */
		.io_opt = sess->max_io_size,
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

static bool rnbd_clt_limits_eq(const struct rnbd_clt_limits *a,
			       const struct rnbd_clt_limits *b)
{
	return a->logical_block_size == b->logical_block_size &&
	       a->physical_block_size == b->physical_block_size &&
	       a->max_hw_sectors == b->max_hw_sectors &&
	       a->io_opt == b->io_opt &&
	       a->max_segments == b->max_segments &&
	       a->virt_boundary_mask == b->virt_boundary_mask &&
	       a->max_discard_sectors == b->max_discard_sectors &&
	       a->discard_granularity == b->discard_granularity &&
	       a->discard_alignment == b->discard_alignment &&
	       a->max_secure_erase_sectors == b->max_secure_erase_sectors &&
	       a->max_write_zeroes_sectors == b->max_write_zeroes_sectors &&
	       a->write_cache == b->write_cache && a->fua == b->fua;
}

/* New limits for the disk; its queue is frozen. */
static int rnbd_clt_apply_limits(struct rnbd_clt_dev *dev,
				 const struct rnbd_clt_limits *lim)
{
	int err;

	lockdep_assert_held(&dev->lock);
	err = rnbd_compat_update_limits(dev->gd->queue, lim);
	if (err) {
		pr_err("%s: %s keeps its queue limits, the server's new ones are refused: %d\n",
		       dev->sess->sessname, dev->gd->disk_name, err);
		return err;
	}
	dev->lim = *lim;
	dev->lim_pending = false;
	return 0;
}

/*
 * The limits the server gave at a reconnect, which happened under a
 * quiesced queue that cannot be frozen: its waiting requests hold it.
 * Here the freeze waits for them without a lock, then the limits apply.
 */
static void rnbd_clt_limits_work(struct work_struct *work)
{
	struct rnbd_clt_dev *dev = container_of(work, struct rnbd_clt_dev,
						limits_work);
	struct request_queue *q = dev->gd->queue;

	blk_mq_freeze_queue(q);
	mutex_lock(&dev->lock);
	if (dev->lim_pending && rnbd_clt_dev_state(dev) == RNBD_CLT_DEV_MAPPED &&
	    !rnbd_clt_apply_limits(dev, &dev->new_lim))
		pr_info("%s: %s takes the server's new queue limits\n",
			dev->sess->sessname, dev->gd->disk_name);
	dev->lim_pending = false;
	mutex_unlock(&dev->lock);
	blk_mq_unfreeze_queue(q);
}

static int rnbd_clt_alloc_disk(struct rnbd_clt_dev *dev,
			       const struct rnbd_msg_open_rsp *rsp)
{
	struct gendisk *gd;

	rnbd_clt_limits(dev, rsp, &dev->lim);
	gd = rnbd_compat_alloc_disk(&dev->sess->tag_set, &dev->lim, dev);
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
	return 0;
}

/* Sessions: the loss of the last path and the reconnect */

/*
 * RTRS's word that the session lost its last path or has one again, from
 * RTRS's work: the state changes, the link work acts on it.  It is queued
 * under @ev_lock, so that none is queued once the session is CLOSING.
 * RTRS waits for an RCU grace period after a loss (rtrs.h): whoever sends
 * a device's id of the past epoch is done before a path is back, and the
 * id cannot reach the next server session.
 */
static void rnbd_clt_link_ev(void *priv, enum rtrs_clt_link_ev ev)
{
	struct rnbd_clt_session *sess = priv;
	bool lost = ev == RTRS_CLT_LINK_EV_DISCONNECTED;
	unsigned int sec;
	bool changed;

	spin_lock(&sess->ev_lock);
	changed = rnbd_clt_sess_change_state(sess, lost ?
					     RNBD_CLT_SESS_WAITING :
					     RNBD_CLT_SESS_REOPENING);
	if (changed)
		mod_delayed_work(rnbd_clt_wq, &sess->link_work, 0);
	sec = sess->wait_sec;
	spin_unlock(&sess->ev_lock);
	if (!changed || !lost)
		return;
	if (sec)
		pr_warn("%s: lost its last path: IO waits up to %u s for it to come back\n",
			sess->sessname, sec);
	else
		pr_warn("%s: lost its last path: IO fails until it comes back\n",
			sess->sessname);
}

/* Hold the device's requests in its queue. */
static void rnbd_clt_park_dev(struct rnbd_clt_dev *dev)
{
	lockdep_assert_held(&dev->sess->lock);
	if (dev->parked || rnbd_clt_dev_state(dev) == RNBD_CLT_DEV_UNMAPPING)
		return;
	blk_mq_quiesce_queue(dev->gd->queue);
	dev->parked = true;
}

/* Let them go: sent, or failed, by queue_rq.  Return: whether it was parked. */
static bool rnbd_clt_unpark_dev(struct rnbd_clt_dev *dev)
{
	lockdep_assert_held(&dev->sess->lock);
	if (!dev->parked)
		return false;
	dev->parked = false;
	blk_mq_unquiesce_queue(dev->gd->queue);
	blk_mq_kick_requeue_list(dev->gd->queue);
	return true;
}

static void rnbd_clt_unpark_devs(struct rnbd_clt_session *sess)
{
	struct rnbd_clt_dev *dev;

	list_for_each_entry(dev, &sess->devs, entry)
		rnbd_clt_unpark_dev(dev);
}

/* Jiffies from now to @deadline, 0 once it passed. */
static unsigned long rnbd_clt_until(unsigned long deadline)
{
	return time_after(deadline, jiffies) ? deadline - jiffies : 0;
}

/*
 * WAITING: the ids of the open devices are void, their IO waits from now
 * on, and fails from the deadline.  Again for the same loss, this parks
 * nothing more and keeps the deadline.
 */
static void rnbd_clt_sess_down(struct rnbd_clt_session *sess,
			       unsigned long deadline)
{
	struct rnbd_clt_dev *dev;

	lockdep_assert_held(&sess->lock);
	list_for_each_entry(dev, &sess->devs, entry) {
		if (dev->parked ||
		    rnbd_clt_dev_state(dev) != RNBD_CLT_DEV_MAPPED)
			continue;
		rnbd_clt_park_dev(dev);
		/* As Linux's client tells udev: the disk is unreachable. */
		kobject_uevent(&disk_to_dev(dev->gd)->kobj, KOBJ_OFFLINE);
	}
	mod_delayed_work(rnbd_clt_wq, &sess->fail_work,
			 rnbd_clt_until(deadline));
}

/*
 * The session waited long enough for a path: FAILING, the IO of devices
 * without a valid id fails, waiting and new, until a path is back.  Early
 * for a later loss, it waits for that one's deadline.
 */
static void rnbd_clt_fail_work(struct work_struct *work)
{
	struct rnbd_clt_session *sess = container_of(to_delayed_work(work),
						     struct rnbd_clt_session,
						     fail_work);
	unsigned long left;
	unsigned int sec;
	bool fail = false;

	mutex_lock(&sess->lock);
	spin_lock(&sess->ev_lock);
	left = rnbd_clt_until(sess->fail_deadline);
	if (left && sess->state == RNBD_CLT_SESS_WAITING)
		mod_delayed_work(rnbd_clt_wq, &sess->fail_work, left);
	else if (!left)
		fail = rnbd_clt_sess_change_state(sess, RNBD_CLT_SESS_FAILING);
	sec = sess->wait_sec;
	spin_unlock(&sess->ev_lock);
	if (fail) {
		if (sec)
			pr_err("%s: no path for %u s: IO fails until one is back\n",
			       sess->sessname, sec);
		rnbd_clt_unpark_devs(sess);
	}
	mutex_unlock(&sess->lock);
}

/* Is @dev to be opened on the server again in @epoch? */
static bool rnbd_clt_dev_stale(const struct rnbd_clt_dev *dev, u32 epoch)
{
	switch (rnbd_clt_dev_state(dev)) {
	case RNBD_CLT_DEV_MAPPED:
		return READ_ONCE(dev->open_epoch) != epoch;
	case RNBD_CLT_DEV_CLOSED:
		return true;
	default:
		return false;
	}
}

/*
 * The device is open again, in @epoch: its new id and size (a resize is
 * undone: the size is the server's again).  @lim: the server's limits,
 * which the caller applies as its queue allows.
 */
static void rnbd_clt_take_reopen_rsp(struct rnbd_clt_dev *dev,
				     const struct rnbd_msg_open_rsp *rsp,
				     u32 epoch, struct rnbd_clt_limits *lim)
{
	lockdep_assert_held(&dev->lock);
	rnbd_clt_take_open_rsp(dev, rsp);
	WRITE_ONCE(dev->open_epoch, epoch);
	rnbd_clt_dev_change_state(dev, RNBD_CLT_DEV_MAPPED);
	set_capacity_and_notify(dev->gd, dev->nsectors);
	rnbd_clt_limits(dev, rsp, lim);
}

/*
 * The answer to the OPEN of a reconnect; the queue is parked.  New limits
 * need a frozen queue: the limits work's.
 */
static void rnbd_clt_take_reconnect_rsp(struct rnbd_clt_dev *dev,
					const struct rnbd_msg_open_rsp *rsp,
					u32 epoch)
{
	struct rnbd_clt_limits lim;

	rnbd_clt_take_reopen_rsp(dev, rsp, epoch, &lim);
	if (rnbd_clt_limits_eq(&lim, &dev->lim))
		return;
	dev->new_lim = lim;
	dev->lim_pending = true;
	queue_work(rnbd_clt_wq, &dev->limits_work);
}

/*
 * OPEN a parked device again in @epoch.  Return: 0, -ECONNABORTED when the
 * session lost its path again (the device waits for the next epoch),
 * -ENODEV when it is being unmapped, else the server's errno, and the
 * device is closed.
 */
static int rnbd_clt_reopen_dev(struct rnbd_clt_dev *dev, u32 epoch,
			       struct rnbd_msg_open_rsp *rsp)
{
	int err;

	mutex_lock(&dev->lock);
	if (!rnbd_clt_dev_stale(dev, epoch)) {
		err = rnbd_clt_dev_state(dev) == RNBD_CLT_DEV_UNMAPPING ?
		      -ENODEV : 0;
		goto out_unlock;
	}
	err = rnbd_clt_reopen(dev, rsp);
	if (!err) {
		rnbd_clt_take_reconnect_rsp(dev, rsp, epoch);
	} else if (err != -ECONNABORTED) {
		rnbd_clt_dev_change_state(dev, RNBD_CLT_DEV_CLOSED);
		pr_err("%s: %s (%s) cannot be opened again: %d; its IO fails until a remap_device\n",
		       dev->sess->sessname, dev->gd->disk_name, dev->pathname,
		       err);
	}
out_unlock:
	mutex_unlock(&dev->lock);
	return err;
}

/* The server answered SESS_INFO with an error: no device can be opened. */
static void rnbd_clt_close_stale(struct rnbd_clt_session *sess, u32 epoch)
{
	struct rnbd_clt_dev *dev;

	list_for_each_entry(dev, &sess->devs, entry) {
		mutex_lock(&dev->lock);
		if (rnbd_clt_dev_stale(dev, epoch))
			rnbd_clt_dev_change_state(dev, RNBD_CLT_DEV_CLOSED);
		mutex_unlock(&dev->lock);
	}
}

/* Return: the number of devices opened, -ECONNABORTED or -ENOMEM. */
static int rnbd_clt_reopen_devs(struct rnbd_clt_session *sess, u32 epoch)
{
	struct rnbd_msg_open_rsp *rsp;
	struct rnbd_clt_dev *dev;
	int err, n = 0;

	rsp = kmalloc(sizeof(*rsp), GFP_KERNEL);
	if (!rsp)
		return -ENOMEM;
	list_for_each_entry(dev, &sess->devs, entry) {
		if (!rnbd_clt_dev_stale(dev, epoch))
			continue;
		memset(rsp, 0, sizeof(*rsp));
		err = rnbd_clt_reopen_dev(dev, epoch, rsp);
		if (err == -ECONNABORTED) {
			n = err;
			break;
		}
		if (!err)
			n++;
	}
	kfree(rsp);
	return n;
}

/*
 * LIVE: the devices let go; those open again say so to udev, as Linux's
 * client does.
 */
static void rnbd_clt_sess_live(struct rnbd_clt_session *sess, int n)
{
	struct rnbd_clt_dev *dev;

	list_for_each_entry(dev, &sess->devs, entry) {
		if (rnbd_clt_unpark_dev(dev) &&
		    rnbd_clt_dev_state(dev) == RNBD_CLT_DEV_MAPPED)
			kobject_uevent(&disk_to_dev(dev->gd)->kobj,
				       KOBJ_ONLINE);
	}
	pr_info("%s: reconnected, %d devices reopened\n", sess->sessname, n);
}

/*
 * REOPENING, in @epoch: SESS_INFO, then OPEN each of the devices without
 * a valid id again, and the session is LIVE.  Should the path go again
 * meanwhile, the devices stay parked for the next epoch.  A retry a second
 * later covers an RTRS that had no path for a message but sent no event
 * of it.
 */
static void rnbd_clt_sess_up(struct rnbd_clt_session *sess, u32 epoch)
{
	struct rnbd_clt_dev *dev;
	bool live;
	int n;

	lockdep_assert_held(&sess->lock);
	list_for_each_entry(dev, &sess->devs, entry) {
		if (rnbd_clt_dev_stale(dev, epoch))
			rnbd_clt_park_dev(dev);
	}
	n = rnbd_clt_send_sess_info(sess);
	if (!n) {
		n = rnbd_clt_reopen_devs(sess, epoch);
	} else if (n != -ECONNABORTED && n != -ENOMEM) {
		pr_err("%s: the server refused SESS_INFO: the devices are closed\n",
		       sess->sessname);
		rnbd_clt_close_stale(sess, epoch);
		n = 0;
	}
	if (n < 0) {
		/* No path, or no memory: not later than an event queued meanwhile. */
		queue_delayed_work(rnbd_clt_wq, &sess->link_work, HZ);
		return;
	}
	spin_lock(&sess->ev_lock);
	live = sess->epoch == epoch &&
	       rnbd_clt_sess_change_state(sess, RNBD_CLT_SESS_LIVE);
	spin_unlock(&sess->ev_lock);
	if (live)
		rnbd_clt_sess_live(sess, n);
}

/* What the last link event asks for: see enum rnbd_clt_sess_state. */
static void rnbd_clt_link_work(struct work_struct *work)
{
	struct rnbd_clt_session *sess = container_of(to_delayed_work(work),
						     struct rnbd_clt_session,
						     link_work);
	enum rnbd_clt_sess_state state;
	unsigned long deadline;
	unsigned int noio;
	u32 epoch;

	/* Reclaim must not wait for IO that waits for this work. */
	noio = memalloc_noio_save();
	mutex_lock(&sess->lock);
	spin_lock(&sess->ev_lock);
	state = sess->state;
	epoch = sess->epoch;
	deadline = sess->fail_deadline;
	spin_unlock(&sess->ev_lock);
	if (state == RNBD_CLT_SESS_WAITING)
		rnbd_clt_sess_down(sess, deadline);
	else if (state == RNBD_CLT_SESS_REOPENING)
		rnbd_clt_sess_up(sess, epoch);
	mutex_unlock(&sess->lock);
	memalloc_noio_restore(noio);
}

/*
 * Close the RTRS session of a session being released, without devices.
 * Once CLOSING, no link event queues the link work, which queues the fail
 * work: cancelled in that order, they stay so, and RTRS's session is theirs
 * no more.
 */
static void rnbd_clt_close_rtrs(struct rnbd_clt_session *sess)
{
	spin_lock(&sess->ev_lock);
	rnbd_clt_sess_change_state(sess, RNBD_CLT_SESS_CLOSING);
	spin_unlock(&sess->ev_lock);
	cancel_delayed_work_sync(&sess->link_work);
	cancel_delayed_work_sync(&sess->fail_work);
	rtrs_clt_close(sess->rtrs);
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
		.nr_poll_queues = opts->nr_poll_queues,
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
rnbd_clt_alloc_sess(const struct rnbd_clt_map_opts *opts)
{
	struct rnbd_clt_session *sess;

	sess = kzalloc(sizeof(*sess), GFP_KERNEL);
	if (!sess)
		return NULL;
	strscpy(sess->sessname, opts->sessname, sizeof(sess->sessname));
	sess->nr_poll_queues = opts->nr_poll_queues;
	kref_init(&sess->kref);
	mutex_init(&sess->lock);
	INIT_LIST_HEAD(&sess->devs);
	spin_lock_init(&sess->ev_lock);
	/* rtrs_clt_open() returns with every path connected. */
	sess->state = RNBD_CLT_SESS_LIVE;
	INIT_DELAYED_WORK(&sess->link_work, rnbd_clt_link_work);
	INIT_DELAYED_WORK(&sess->fail_work, rnbd_clt_fail_work);
	return sess;
}

static void rnbd_clt_free_sess(struct rnbd_clt_session *sess)
{
	mutex_destroy(&sess->lock);
	kfree(sess);
}

static struct rnbd_clt_session *
rnbd_clt_create_sess(const struct rnbd_clt_map_opts *opts)
{
	struct rnbd_clt_session *sess;
	int err;

	if (!opts->path_cnt) {
		pr_err_ratelimited("map_device: path= is mandatory: no session %s yet\n",
				   opts->sessname);
		return ERR_PTR(-EINVAL);
	}
	sess = rnbd_clt_alloc_sess(opts);
	if (!sess)
		return ERR_PTR(-ENOMEM);
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
	rnbd_clt_close_rtrs(sess);
out_free_sess:
	rnbd_clt_free_sess(sess);
	return ERR_PTR(err);
}

static struct rnbd_clt_session *
rnbd_clt_get_sess(const struct rnbd_clt_map_opts *opts)
{
	struct rnbd_clt_session *sess;

	lockdep_assert_held(&rnbd_clt_mutex);
	list_for_each_entry(sess, &rnbd_clt_sessions, entry) {
		if (strcmp(sess->sessname, opts->sessname))
			continue;
		/* Its devices share one tag set, hence its polled queues. */
		if (sess->nr_poll_queues != opts->nr_poll_queues) {
			pr_err_ratelimited("map_device: session %s has %u polled queues, not %u\n",
					   sess->sessname, sess->nr_poll_queues,
					   opts->nr_poll_queues);
			return ERR_PTR(-EINVAL);
		}
		kref_get(&sess->kref);
		return sess;
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
	rnbd_clt_close_rtrs(sess);
	blk_mq_free_tag_set(&sess->tag_set);
	rnbd_clt_free_sess(sess);
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
	INIT_WORK(&dev->limits_work, rnbd_clt_limits_work);
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

/*
 * A device opened on the server joins its session, open for IO, unless the
 * session lost its last path since the OPEN: the server closed it then.
 * From here the link work sees it; a loss while its disk is added parks
 * the partition scan's IO like any other.
 */
static int rnbd_clt_list_dev(struct rnbd_clt_dev *dev)
{
	struct rnbd_clt_session *sess = dev->sess;
	int err = 0;

	lockdep_assert_held(&rnbd_clt_mutex);
	mutex_lock(&sess->lock);
	if (!rnbd_clt_dev_id_valid(dev)) {
		pr_err("%s: lost its last path while %s was being mapped\n",
		       sess->sessname, dev->pathname);
		err = -ECONNABORTED;
		goto out_unlock;
	}
	mutex_lock(&dev->lock);
	rnbd_clt_dev_change_state(dev, RNBD_CLT_DEV_MAPPED);
	mutex_unlock(&dev->lock);
	list_add_tail(&dev->entry, &sess->devs);
out_unlock:
	mutex_unlock(&sess->lock);
	return err;
}

/*
 * The link work is to leave the device alone and let its IO fail: it is
 * "unmapped".  Nothing of it waits in the queue any more.
 */
static void rnbd_clt_release_dev_io(struct rnbd_clt_dev *dev)
{
	struct rnbd_clt_session *sess = dev->sess;

	mutex_lock(&sess->lock);
	rnbd_clt_unpark_dev(dev);
	mutex_unlock(&sess->lock);
	cancel_work_sync(&dev->limits_work);
}

/* Undo rnbd_clt_list_dev(), for a map that failed after it. */
static void rnbd_clt_unlist_dev(struct rnbd_clt_dev *dev)
{
	struct rnbd_clt_session *sess = dev->sess;

	lockdep_assert_held(&rnbd_clt_mutex);
	mutex_lock(&dev->lock);
	rnbd_clt_dev_change_state(dev, RNBD_CLT_DEV_UNMAPPING);
	mutex_unlock(&dev->lock);
	rnbd_clt_release_dev_io(dev);
	mutex_lock(&sess->lock);
	list_del(&dev->entry);
	mutex_unlock(&sess->lock);
}

/*
 * OPEN the device in the session's current epoch.  Return: 0, or a
 * negative errno, logged.
 */
static int rnbd_clt_open_dev(struct rnbd_clt_dev *dev,
			     struct rnbd_msg_open_rsp *rsp)
{
	int err;

	dev->open_epoch = READ_ONCE(dev->sess->epoch);
	err = rnbd_clt_send_open(dev, rsp);
	if (err) {
		pr_err("%s: cannot open %s on the server: %d\n",
		       dev->sess->sessname, dev->pathname, err);
		return err;
	}
	rnbd_clt_take_open_rsp(dev, rsp);
	return 0;
}

/* Open the device on the server and add its disk. */
static int rnbd_clt_setup_dev(struct rnbd_clt_dev *dev)
{
	struct rnbd_msg_open_rsp *rsp;
	int err;

	rsp = kzalloc(sizeof(*rsp), GFP_KERNEL);
	if (!rsp)
		return -ENOMEM;
	err = rnbd_clt_open_dev(dev, rsp);
	if (err)
		goto out_free_rsp;
	err = rnbd_clt_alloc_disk(dev, rsp);
	if (err)
		goto out_close;
	err = rnbd_clt_list_dev(dev);
	if (err)
		goto out_put_disk;
	err = add_disk(dev->gd);
	if (err)
		goto out_unlist;
	pr_info("%s: %s mapped as %s (%llu sectors, %s)\n",
		dev->sess->sessname, dev->pathname, dev->gd->disk_name,
		dev->nsectors, rnbd_access_mode_str(dev->access_mode));
	kfree(rsp);
	return 0;

out_unlist:
	rnbd_clt_unlist_dev(dev);
out_put_disk:
	put_disk(dev->gd);
	dev->gd = NULL;
out_close:
	rnbd_clt_send_close(dev, false);
out_free_rsp:
	kfree(rsp);
	return err;
}

/* @close: the device is open on the server (not "closed"). */
static void rnbd_clt_del_disk(struct rnbd_clt_dev *dev, bool close)
{
	del_gendisk(dev->gd);
	if (close)
		rnbd_clt_send_close(dev, false);
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
		pr_err_ratelimited("%s: %s is mapped already\n", sess->sessname,
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
	mutex_unlock(&rnbd_clt_mutex);
	return 0;

out_del_disk:
	rnbd_clt_unlist_dev(dev);
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
 * new IO.  The disk's open_mutex keeps openers out while we look; a force
 * unmap does not look, nor wait there for an opener that waits for IO
 * (a partition scan of a session without a path).  @close says whether
 * the server has the device open, to be closed.
 */
static int rnbd_clt_start_unmap(struct rnbd_clt_dev *dev, bool force,
				bool *close)
{
	int err = 0;

	if (!force)
		mutex_lock(&dev->gd->open_mutex);
	mutex_lock(&dev->lock);
	*close = rnbd_clt_dev_state(dev) == RNBD_CLT_DEV_MAPPED;
	if (!rnbd_clt_dev_is_mapped(dev))
		err = -EALREADY;
	else if (!force && disk_openers(dev->gd))
		err = -EBUSY;
	else
		rnbd_clt_dev_change_state(dev, RNBD_CLT_DEV_UNMAPPING);
	mutex_unlock(&dev->lock);
	if (!force)
		mutex_unlock(&dev->gd->open_mutex);
	return err;
}

/**
 * rnbd_clt_unmap() - unmap a device
 * @dev: the device
 * @force: unmap it even while it is open
 * @self: the sysfs file of @dev this is written through
 *
 * The IO of the device that waits for its session's reconnect fails.
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
	if (err == -EBUSY)
		pr_err_ratelimited("%s: %s is open: not unmapped unless forced\n",
				   sess->sessname, dev->gd->disk_name);
	if (err)
		return err;
	rnbd_clt_release_dev_io(dev);
	sysfs_remove_file_self(&dev->kobj, self);
	pr_info("%s: unmapping %s (%s)\n", sess->sessname, dev->gd->disk_name,
		dev->pathname);
	rnbd_clt_sysfs_del_dev(dev);
	rnbd_clt_del_disk(dev, close);

	mutex_lock(&rnbd_clt_mutex);
	mutex_lock(&sess->lock);
	list_del(&dev->entry);
	mutex_unlock(&sess->lock);
	kobject_put(&dev->kobj);
	rnbd_clt_put_sess(sess);
	mutex_unlock(&rnbd_clt_mutex);
	module_put(THIS_MODULE);
	return 0;
}

/* Remap and resize */

/*
 * OPEN the device again; its queue is frozen: no IO is in flight or sent
 * while the device changes its id.  Nothing allocated meanwhile may wait
 * for IO to it.
 */
static int rnbd_clt_remap_frozen(struct rnbd_clt_dev *dev,
				 struct rnbd_msg_open_rsp *rsp)
{
	struct rnbd_clt_limits lim;
	unsigned int noio;
	u32 epoch;
	int err;

	lockdep_assert_held(&dev->lock);
	noio = memalloc_noio_save();
	/* An OPEN answered in a later epoch is opened again at its reconnect. */
	epoch = READ_ONCE(dev->sess->epoch);
	err = rnbd_clt_reopen(dev, rsp);
	if (err) {
		pr_err("%s: remap_device: cannot open %s on the server: %d%s\n",
		       dev->sess->sessname, dev->pathname, err,
		       rnbd_clt_dev_state(dev) == RNBD_CLT_DEV_CLOSED ?
		       "; the device is closed" : "");
	} else {
		rnbd_clt_take_reopen_rsp(dev, rsp, epoch, &lim);
		err = rnbd_clt_apply_limits(dev, &lim);
	}
	memalloc_noio_restore(noio);
	return err;
}

/* A path, which the devices are (or are being) opened over again. */
static bool rnbd_clt_sess_has_path(const struct rnbd_clt_session *sess)
{
	enum rnbd_clt_sess_state state = rnbd_clt_sess_state(sess);

	return state == RNBD_CLT_SESS_LIVE || state == RNBD_CLT_SESS_REOPENING;
}

/**
 * rnbd_clt_remap() - open a mapped device on the server again
 * @dev: the device, open or closed by an earlier remap
 *
 * The disk stays; its IO waits meanwhile.  The device takes the server's
 * new id, size and queue limits.
 *
 * Context: process, under a sysfs file of @dev.  The freeze waits for the
 * device's IO without a lock: the session's link work, which may be what
 * that IO waits for, takes @dev's lock.
 * Return: 0, -ENODEV when @dev is being unmapped, -ENOTCONN when its
 * session has no path, or the server's errno; the device is "closed" then
 * if it was closed on the server for the remap.
 */
int rnbd_clt_remap(struct rnbd_clt_dev *dev)
{
	struct request_queue *q = dev->gd->queue;
	struct rnbd_msg_open_rsp *rsp;
	int err;

	if (!rnbd_clt_sess_has_path(dev->sess)) {
		pr_err_ratelimited("%s: remap_device: %s: the session has no path; the device is opened again when it has one\n",
				   dev->sess->sessname, dev->gd->disk_name);
		return -ENOTCONN;
	}
	rsp = kzalloc(sizeof(*rsp), GFP_KERNEL);
	if (!rsp)
		return -ENOMEM;
	blk_mq_freeze_queue(q);
	mutex_lock(&dev->lock);
	if (!rnbd_clt_dev_is_mapped(dev)) {
		pr_err_ratelimited("%s: remap_device: %s is %s\n", dev->sess->sessname,
				   dev->gd->disk_name,
				   rnbd_clt_dev_state_str(rnbd_clt_dev_state(dev)));
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
	blk_mq_unfreeze_queue(q);
	kfree(rsp);
	return err;
}

/**
 * rnbd_clt_resize() - change the capacity of a mapped device
 * @dev: the device
 * @nsectors: its new capacity: 1 to the server's size, in logical blocks
 *
 * The capacity is the client's own: a device whose session lost its paths
 * is resized all the same, within the size the server last reported.
 *
 * Return: 0, -EINVAL for a size out of bounds, -ENOENT when the server
 * could not open @dev again or it is being unmapped.
 */
int rnbd_clt_resize(struct rnbd_clt_dev *dev, u64 nsectors)
{
	unsigned int lbs;
	int err = 0;

	mutex_lock(&dev->lock);
	lbs = queue_logical_block_size(dev->gd->queue) >> SECTOR_SHIFT;
	if (rnbd_clt_dev_state(dev) != RNBD_CLT_DEV_MAPPED) {
		pr_err_ratelimited("%s: resize: %s is %s\n", dev->sess->sessname,
				   dev->gd->disk_name,
				   rnbd_clt_dev_state_str(rnbd_clt_dev_state(dev)));
		err = -ENOENT;
	} else if (!nsectors || nsectors > dev->nsectors ||
		   !IS_ALIGNED(nsectors, lbs)) {
		pr_err_ratelimited("%s: resize: %llu sectors for %s, not 1 to %llu in multiples of %u\n",
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

	/* IO of the devices waits for its works: they may not wait for memory. */
	rnbd_clt_wq = alloc_workqueue("rnbd_clt_wq", WQ_MEM_RECLAIM, 0);
	if (!rnbd_clt_wq)
		return -ENOMEM;
	rnbd_clt_major = register_blkdev(0, "rnbd");
	if (rnbd_clt_major < 0) {
		pr_err("cannot register a block major: %d\n", rnbd_clt_major);
		err = rnbd_clt_major;
		goto out_destroy_wq;
	}
	err = rnbd_clt_sysfs_init();
	if (err)
		goto out_unregister_blkdev;
	return 0;

out_unregister_blkdev:
	unregister_blkdev(rnbd_clt_major, "rnbd");
out_destroy_wq:
	destroy_workqueue(rnbd_clt_wq);
	return err;
}

static void __exit rnbd_clt_exit(void)
{
	rnbd_clt_sysfs_exit();
	/* Each mapped device holds the module: there is none left. */
	WARN_ON(!list_empty(&rnbd_clt_sessions));
	unregister_blkdev(rnbd_clt_major, "rnbd");
	ida_destroy(&rnbd_clt_ida);
	destroy_workqueue(rnbd_clt_wq);
}

module_init(rnbd_clt_init);
module_exit(rnbd_clt_exit);

MODULE_DESCRIPTION("RDMA Network Block Device (RNBD) client");
MODULE_LICENSE("GPL");
