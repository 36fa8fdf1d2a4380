// SPDX-License-Identifier: GPL-2.0-only
/*
 * RNBD server: the exported block devices, their opening by sessions with
 * the access-mode rules, and the IO of the clients on them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/ioprio.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "rnbd-srv.h"

/* Protects rnbd_srv_devs, each device's sess_devs and write_cnt. */
static DEFINE_MUTEX(rnbd_srv_devs_mutex);
static LIST_HEAD(rnbd_srv_devs);

/**
 * struct rnbd_srv_io - an IO of a client on its way through the block layer
 * @id: the RTRS request to answer
 * @sess_dev: holds a reference of its @inflight
 * @bio: the bio, last: the bioset's front padding holds the rest
 */
struct rnbd_srv_io {
	struct rtrs_srv_op *id;
	struct rnbd_srv_sess_dev *sess_dev;
	struct bio bio;
};

static struct bio_set rnbd_srv_bio_set;

static struct block_device *sess_dev_bdev(struct rnbd_srv_sess_dev *sess_dev)
{
	return rnbd_bdev(&sess_dev->bdev);
}

/* Does any component of @name step out of the directory it is under? */
bool rnbd_srv_path_escapes(const char *name)
{
	const char *p = name;
	size_t len;

	while (*p) {
		len = strcspn(p, "/");
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return true;
		p += len;
		p += strspn(p, "/");
	}
	return false;
}

/* @path without repeated slashes, in place. */
void rnbd_srv_squeeze_slashes(char *path)
{
	const char *in;
	char *out = path;

	for (in = path; *in; in++)
		if (*in != '/' || out == path || out[-1] != '/')
			*out++ = *in;
	*out = '\0';
}

#define RNBD_SESSNAME_TAG "%SESSNAME%"

/*
 * dev_search_path, %SESSNAME% replaced, then "/" and the client's path;
 * one slash where that makes several, as the access rules see paths.
 */
static int rnbd_srv_full_path(const struct rnbd_srv_session *sess,
			      const char *name, char *buf, size_t len)
{
	const char *search = rnbd_srv_dev_search_path;
	const char *tag = strstr(search, RNBD_SESSNAME_TAG);
	int n;

	if (tag) {
		if (strchr(sess->sessname, '/') ||
		    rnbd_srv_path_escapes(sess->sessname))
			return -EINVAL;
		n = snprintf(buf, len, "%.*s%s%s/%s", (int)(tag - search),
			     search, sess->sessname,
			     tag + strlen(RNBD_SESSNAME_TAG), name);
	} else {
		n = snprintf(buf, len, "%s/%s", search, name);
	}
	if (n >= len)
		return -ENAMETOOLONG;
	rnbd_srv_squeeze_slashes(buf);
	return 0;
}

static void rnbd_srv_dev_release(struct kref *kref)
{
	struct rnbd_srv_dev *dev = container_of(kref, struct rnbd_srv_dev,
						kref);

	lockdep_assert_held(&rnbd_srv_devs_mutex);
	list_del(&dev->entry);
	rnbd_srv_dev_sysfs_del(dev);
}

/* The entry of the block device, made when it is first opened. */
static struct rnbd_srv_dev *rnbd_srv_get_dev(struct block_device *bdev)
{
	struct rnbd_srv_dev *dev;
	char name[NAME_MAX];

	lockdep_assert_held(&rnbd_srv_devs_mutex);
	snprintf(name, sizeof(name), "%pg", bdev);
	list_for_each_entry(dev, &rnbd_srv_devs, entry) {
		if (!strcmp(dev->name, name)) {
			kref_get(&dev->kref);
			return dev;
		}
	}
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return ERR_PTR(-ENOMEM);
	strscpy(dev->name, name, sizeof(dev->name));
	kref_init(&dev->kref);
	INIT_LIST_HEAD(&dev->sess_devs);
	if (rnbd_srv_dev_sysfs_add(dev, bdev)) {
		/* The kobject's release frees it. */
		return ERR_PTR(-ENOMEM);
	}
	list_add(&dev->entry, &rnbd_srv_devs);
	return dev;
}

static int rnbd_srv_check_access(struct rnbd_srv_dev *dev,
				 struct rnbd_srv_sess_dev *sess_dev)
{
	struct rnbd_srv_sess_dev *other;

	lockdep_assert_held(&rnbd_srv_devs_mutex);
	list_for_each_entry(other, &dev->sess_devs, dev_entry) {
		if (other->sess == sess_dev->sess) {
			rnbd_srv_err_rl(sess_dev->sess, "%s is already mapped by this session\n",
					dev->name);
			return -EEXIST;
		}
	}
	if ((sess_dev->access_mode == RNBD_ACCESS_RW && dev->write_cnt) ||
	    (sess_dev->access_mode == RNBD_ACCESS_MIGRATION &&
	     dev->write_cnt > 1)) {
		rnbd_srv_err_rl(sess_dev->sess, "%s has %d writers: mode %s refused\n",
				dev->name, dev->write_cnt,
				rnbd_access_mode_str(sess_dev->access_mode));
		return -EPERM;
	}
	return 0;
}

/* Join the device's users, if the access-mode rules allow. */
static int rnbd_srv_attach(struct rnbd_srv_sess_dev *sess_dev)
{
	struct rnbd_srv_dev *dev;
	int err;

	mutex_lock(&rnbd_srv_devs_mutex);
	dev = rnbd_srv_get_dev(sess_dev_bdev(sess_dev));
	if (IS_ERR(dev)) {
		err = PTR_ERR(dev);
		goto out;
	}
	err = rnbd_srv_check_access(dev, sess_dev);
	if (err) {
		kref_put(&dev->kref, rnbd_srv_dev_release);
		goto out;
	}
	if (sess_dev->access_mode != RNBD_ACCESS_RO)
		dev->write_cnt++;
	list_add(&sess_dev->dev_entry, &dev->sess_devs);
	sess_dev->dev = dev;
out:
	mutex_unlock(&rnbd_srv_devs_mutex);
	return err;
}

static void rnbd_srv_detach(struct rnbd_srv_sess_dev *sess_dev)
{
	struct rnbd_srv_dev *dev = sess_dev->dev;

	mutex_lock(&rnbd_srv_devs_mutex);
	list_del(&sess_dev->dev_entry);
	if (sess_dev->access_mode != RNBD_ACCESS_RO)
		dev->write_cnt--;
	kref_put(&dev->kref, rnbd_srv_dev_release);
	mutex_unlock(&rnbd_srv_devs_mutex);
}

static void rnbd_srv_inflight_done(struct percpu_ref *ref)
{
	struct rnbd_srv_sess_dev *sess_dev =
		container_of(ref, struct rnbd_srv_sess_dev, inflight);

	complete(&sess_dev->inflight_done);
}

static int rnbd_srv_check_open(struct rnbd_srv_session *sess,
			       const struct rnbd_msg_open *msg)
{
	const char *name = (const char *)msg->dev_name;

	if (msg->access_mode > RNBD_ACCESS_MIGRATION) {
		rnbd_srv_err_rl(sess, "OPEN with access mode %u\n",
				msg->access_mode);
		return -EINVAL;
	}
	if (!memchr(name, '\0', sizeof(msg->dev_name)) || !name[0]) {
		rnbd_srv_err_rl(sess, "OPEN without a NUL-terminated device path\n");
		return -EINVAL;
	}
	if (rnbd_srv_path_escapes(name)) {
		rnbd_srv_err_rl(sess, "device path '%s' leaves dev_search_path\n",
				name);
		return -EINVAL;
	}
	return 0;
}

static struct rnbd_srv_sess_dev *
rnbd_srv_alloc_sess_dev(struct rnbd_srv_session *sess,
			const struct rnbd_msg_open *msg)
{
	struct rnbd_srv_sess_dev *sess_dev;

	sess_dev = kzalloc(sizeof(*sess_dev), GFP_KERNEL);
	if (!sess_dev)
		return NULL;
	if (percpu_ref_init(&sess_dev->inflight, rnbd_srv_inflight_done, 0,
			    GFP_KERNEL)) {
		kfree(sess_dev);
		return NULL;
	}
	init_completion(&sess_dev->inflight_done);
	sess_dev->sess = sess;
	sess_dev->access_mode = msg->access_mode;
	strscpy(sess_dev->mapping_path, (const char *)msg->dev_name,
		sizeof(sess_dev->mapping_path));
	return sess_dev;
}

/*
 * The holder of the devices the server opens exclusively: one for all
 * sessions, which share them.
 */
static int rnbd_srv_holder;

static int rnbd_srv_open_bdev(struct rnbd_srv_sess_dev *sess_dev)
{
	struct rnbd_srv_session *sess = sess_dev->sess;
	bool excl;
	char *path;
	int err;

	path = kmalloc(PATH_MAX, GFP_KERNEL);
	if (!path)
		return -ENOMEM;
	err = rnbd_srv_full_path(sess, sess_dev->mapping_path, path, PATH_MAX);
	if (err) {
		rnbd_srv_err_rl(sess, "no valid path for '%s' under '%s'\n",
				sess_dev->mapping_path, rnbd_srv_dev_search_path);
		goto out;
	}
	err = rnbd_srv_access_check(sess, path, sess_dev->access_mode, &excl);
	if (err)
		goto out;
	err = rnbd_bdev_open(&sess_dev->bdev, path,
			     sess_dev->access_mode != RNBD_ACCESS_RO,
			     excl ? &rnbd_srv_holder : NULL);
	if (err == -EBUSY && excl)
		rnbd_srv_err_rl(sess, "%s is in use on the server, which no access rule allows\n",
				path);
	else if (err)
		rnbd_srv_err_rl(sess, "cannot open %s: %d\n", path, err);
out:
	kfree(path);
	return err;
}

/**
 * rnbd_srv_check_new_path() - may a path that came up join the session?
 * @sess: the session
 * @peer: the client's address of the path
 *
 * The access rules must allow @peer for every device the session has
 * open, as they allowed the session's other paths when it opened them.
 *
 * Return: 0, -EACCES (logged) or -ENOMEM.
 */
int rnbd_srv_check_new_path(struct rnbd_srv_session *sess,
			    const struct sockaddr *peer)
{
	struct rnbd_srv_sess_dev *sess_dev;
	unsigned long id;
	char *path;
	int err = 0;

	path = kmalloc(PATH_MAX, GFP_KERNEL);
	if (!path)
		return -ENOMEM;
	mutex_lock(&sess->open_mutex);
	mutex_lock(&sess->lock);
	xa_for_each(&sess->sess_devs, id, sess_dev) {
		/* It was made once: it fits again. */
		rnbd_srv_full_path(sess, sess_dev->mapping_path, path,
				   PATH_MAX);
		err = rnbd_srv_access_check_peer(sess, peer, path,
						 sess_dev->access_mode);
		if (err)
			break;
	}
	mutex_unlock(&sess->lock);
	mutex_unlock(&sess->open_mutex);
	kfree(path);
	return err;
}

/**
 * rnbd_srv_open_sess_dev() - open a device for a session, as OPEN asks
 * @sess: the session
 * @msg: the OPEN message, copied out of the chunk
 * @out: the opened device
 *
 * Return: 0, or a negative errno for the client.
 */
int rnbd_srv_open_sess_dev(struct rnbd_srv_session *sess,
			   const struct rnbd_msg_open *msg,
			   struct rnbd_srv_sess_dev **out)
{
	struct rnbd_srv_sess_dev *sess_dev;
	int err;

	err = rnbd_srv_check_open(sess, msg);
	if (err)
		return err;
	sess_dev = rnbd_srv_alloc_sess_dev(sess, msg);
	if (!sess_dev)
		return -ENOMEM;
	err = rnbd_srv_open_bdev(sess_dev);
	if (err)
		goto out_free;
	err = rnbd_srv_attach(sess_dev);
	if (err)
		goto out_close_bdev;
	*out = sess_dev;
	return 0;

out_close_bdev:
	rnbd_bdev_close(&sess_dev->bdev);
out_free:
	percpu_ref_exit(&sess_dev->inflight);
	kfree(sess_dev);
	return err;
}

/* The last of a session's device, after its IO has drained. */
void rnbd_srv_release_sess_dev(struct rnbd_srv_sess_dev *sess_dev)
{
	rnbd_srv_detach(sess_dev);
	rnbd_bdev_close(&sess_dev->bdev);
	percpu_ref_exit(&sess_dev->inflight);
	kfree_rcu(sess_dev, rcu);
}

void rnbd_srv_fill_open_rsp(struct rnbd_srv_sess_dev *sess_dev,
			    struct rnbd_msg_open_rsp *rsp)
{
	struct block_device *bdev = sess_dev_bdev(sess_dev);
	struct request_queue *q = bdev_get_queue(bdev);

	memset(rsp, 0, sizeof(*rsp));
	rsp->hdr.type = cpu_to_le16(RNBD_MSG_OPEN_RSP);
	rsp->device_id = cpu_to_le32(sess_dev->device_id);
	rsp->nsectors = cpu_to_le64(bdev_nr_sectors(bdev));
	rsp->logical_block_size = cpu_to_le16(bdev_logical_block_size(bdev));
	rsp->physical_block_size = cpu_to_le16(bdev_physical_block_size(bdev));
	rsp->max_segments = cpu_to_le16(queue_max_segments(q));
	rsp->max_hw_sectors = cpu_to_le32(queue_max_hw_sectors(q));
	rsp->max_write_zeroes_sectors =
		cpu_to_le32(bdev_write_zeroes_sectors(bdev));
	rsp->max_discard_sectors = cpu_to_le32(bdev_max_discard_sectors(bdev));
	rsp->discard_granularity = cpu_to_le32(bdev_discard_granularity(bdev));
	rsp->discard_alignment = cpu_to_le32(bdev_discard_alignment(bdev));
	rsp->secure_discard =
		cpu_to_le16(min_t(u32, bdev_max_secure_erase_sectors(bdev),
				  U16_MAX));
	if (bdev_write_cache(bdev))
		rsp->cache_policy |= RNBD_WRITEBACK;
	if (bdev_fua(bdev))
		rsp->cache_policy |= RNBD_FUA;
}

static blk_opf_t rnbd_srv_opf(u32 op, u32 flags)
{
	static const blk_opf_t ops[RNBD_OP_LAST] = {
		[RNBD_OP_READ] = REQ_OP_READ,
		[RNBD_OP_WRITE] = REQ_OP_WRITE,
		[RNBD_OP_FLUSH] = REQ_OP_WRITE | REQ_PREFLUSH,
		[RNBD_OP_DISCARD] = REQ_OP_DISCARD,
		[RNBD_OP_SECURE_ERASE] = REQ_OP_SECURE_ERASE,
		[RNBD_OP_WRITE_ZEROES] = REQ_OP_WRITE_ZEROES,
	};
	blk_opf_t opf = ops[op];

	if (flags & RNBD_F_SYNC)
		opf |= REQ_SYNC;
	if (flags & RNBD_F_FUA)
		opf |= REQ_FUA;
	if (flags & RNBD_F_PREFLUSH)
		opf |= REQ_PREFLUSH;
	if (flags & RNBD_F_NOUNMAP && op == RNBD_OP_WRITE_ZEROES)
		opf |= REQ_NOUNMAP;
	return opf;
}

/* May the op run on this device, with that range and that data? */
static int rnbd_srv_check_io(struct rnbd_srv_sess_dev *sess_dev, u32 op,
			     u32 flags, u64 sector, u32 size, size_t datalen)
{
	struct block_device *bdev = sess_dev_bdev(sess_dev);
	u32 lbs = bdev_logical_block_size(bdev);
	bool has_data = op == RNBD_OP_READ || op == RNBD_OP_WRITE;

	if (op >= RNBD_OP_LAST || flags & ~RNBD_F_ALL)
		return -EINVAL;
	/* The block layer takes them on writes only, and warns otherwise. */
	if (flags & (RNBD_F_FUA | RNBD_F_PREFLUSH) &&
	    op != RNBD_OP_WRITE && op != RNBD_OP_FLUSH)
		return -EINVAL;
	if (op != RNBD_OP_READ && sess_dev->access_mode == RNBD_ACCESS_RO)
		return -EROFS;
	if (datalen != (has_data ? size : 0))
		return -EINVAL;
	if (op == RNBD_OP_FLUSH)
		return size ? -EINVAL : 0;
	if (!size || size % lbs || (sector << SECTOR_SHIFT) % lbs ||
	    sector > bdev_nr_sectors(bdev) ||
	    (size >> SECTOR_SHIFT) > bdev_nr_sectors(bdev) - sector)
		return -EINVAL;
	if ((op == RNBD_OP_DISCARD && !bdev_max_discard_sectors(bdev)) ||
	    (op == RNBD_OP_SECURE_ERASE && !bdev_max_secure_erase_sectors(bdev)) ||
	    (op == RNBD_OP_WRITE_ZEROES && !bdev_write_zeroes_sectors(bdev)))
		return -EOPNOTSUPP;
	return 0;
}

/*
 * The I/O priority of a client's request, as this server grants it: a
 * class the block layer knows, with a level where the class has one.  Real
 * time is not for a remote client to take from the server's own
 * processes: it gets best effort at the same level.  Hints are for the
 * client's disks, not ours.
 */
static int rnbd_srv_ioprio(u16 prio, unsigned short *ioprio)
{
	int class = IOPRIO_PRIO_CLASS(prio);
	int level = IOPRIO_PRIO_LEVEL(prio);

	switch (class) {
	case IOPRIO_CLASS_NONE:
		if (level)
			return -EINVAL;
		break;
	case IOPRIO_CLASS_RT:
		class = IOPRIO_CLASS_BE;
		break;
	case IOPRIO_CLASS_BE:
		break;
	case IOPRIO_CLASS_IDLE:
		level = 0;
		break;
	default:
		return -EINVAL;
	}
	*ioprio = IOPRIO_PRIO_VALUE(class, level);
	return 0;
}

static void rnbd_srv_bio_done(struct bio *bio)
{
	struct rnbd_srv_io *io = container_of(bio, struct rnbd_srv_io, bio);
	struct rnbd_srv_sess_dev *sess_dev = io->sess_dev;

	rtrs_srv_resp_rdma(io->id, blk_status_to_errno(bio->bi_status));
	bio_put(bio);
	percpu_ref_put(&sess_dev->inflight);
}

/**
 * rnbd_srv_submit_io() - start an IO of a client
 * @sess_dev: the device, with a reference of its @inflight for the IO
 * @msg: the IO header, copied out of the chunk
 * @id: the RTRS request, answered when the IO ends
 * @data: the chunk's data
 * @datalen: its length
 *
 * Return: 0 when the IO was submitted (it answers and drops the reference
 * when done), else a negative errno and nothing was done.
 */
int rnbd_srv_submit_io(struct rnbd_srv_sess_dev *sess_dev,
		       const struct rnbd_msg_io *msg, struct rtrs_srv_op *id,
		       void *data, size_t datalen)
{
	u32 rw = le32_to_cpu(msg->rw), op = rw & RNBD_OP_MASK;
	u32 size = le32_to_cpu(msg->bi_size);
	u64 sector = le64_to_cpu(msg->sector);
	unsigned short ioprio;
	struct rnbd_srv_io *io;
	struct bio *bio;
	int err;

	err = rnbd_srv_check_io(sess_dev, op, rw & ~RNBD_OP_MASK, sector, size,
				datalen) ?:
		rnbd_srv_ioprio(le16_to_cpu(msg->prio), &ioprio);
	if (err)
		return err;
	bio = bio_alloc_bioset(sess_dev_bdev(sess_dev), datalen ? 1 : 0,
			       rnbd_srv_opf(op, rw & ~RNBD_OP_MASK), GFP_KERNEL,
			       &rnbd_srv_bio_set);
	/* The chunk is physically contiguous: one multi-page bvec. */
	if (datalen && bio_add_page(bio, virt_to_page(data), datalen,
				    offset_in_page(data)) != datalen) {
		bio_put(bio);
		return -EINVAL;
	}
	if (!datalen)
		bio->bi_iter.bi_size = size;
	bio->bi_iter.bi_sector = sector;
	bio->bi_ioprio = ioprio;
	bio->bi_end_io = rnbd_srv_bio_done;
	io = container_of(bio, struct rnbd_srv_io, bio);
	io->id = id;
	io->sess_dev = sess_dev;
	submit_bio(bio);
	return 0;
}

int rnbd_srv_dev_init(void)
{
	return bioset_init(&rnbd_srv_bio_set, BIO_POOL_SIZE,
			   offsetof(struct rnbd_srv_io, bio), BIOSET_NEED_BVECS);
}

void rnbd_srv_dev_exit(void)
{
	bioset_exit(&rnbd_srv_bio_set);
}
