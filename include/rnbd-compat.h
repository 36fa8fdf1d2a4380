/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel API differences RNBD meets between the kernels the modules
 * build for (Debian's 6.1 and 6.12), in one place, so the code reads as one
 * kernel's.  RTRS's are in rtrs-compat.h.
 */
#ifndef RNBD_COMPAT_H
#define RNBD_COMPAT_H

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/version.h>

/*
 * An open block device, held exclusively where a holder is given.  6.9
 * made the open file the handle (bdev_file_open_by_path()); 6.1 returns
 * the block_device and closes it with the mode it was opened with.  6.5 to
 * 6.8 had a third API that no supported kernel needs.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)

struct rnbd_bdev {
	struct file *file;
};

static inline int rnbd_bdev_open(struct rnbd_bdev *h, const char *path,
				 bool write, void *holder)
{
	blk_mode_t mode = BLK_OPEN_READ | (write ? BLK_OPEN_WRITE : 0);

	h->file = bdev_file_open_by_path(path, mode, holder, NULL);
	return PTR_ERR_OR_ZERO(h->file);
}

static inline struct block_device *rnbd_bdev(const struct rnbd_bdev *h)
{
	return file_bdev(h->file);
}

static inline void rnbd_bdev_close(struct rnbd_bdev *h)
{
	fput(h->file);
}

#elif LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)

struct rnbd_bdev {
	struct block_device *bdev;
	fmode_t mode;
};

static inline int rnbd_bdev_open(struct rnbd_bdev *h, const char *path,
				 bool write, void *holder)
{
	h->mode = FMODE_READ | (write ? FMODE_WRITE : 0) |
		  (holder ? FMODE_EXCL : 0);
	h->bdev = blkdev_get_by_path(path, h->mode, holder);
	return PTR_ERR_OR_ZERO(h->bdev);
}

static inline struct block_device *rnbd_bdev(const struct rnbd_bdev *h)
{
	return h->bdev;
}

static inline void rnbd_bdev_close(struct rnbd_bdev *h)
{
	blkdev_put(h->bdev, h->mode);
}

#else
#error "block device API of kernels 6.5 to 6.8 is not supported"
#endif

/**
 * struct rnbd_clt_limits - what a mapped device's queue gets
 * @logical_block_size: in bytes
 * @physical_block_size: in bytes
 * @max_hw_sectors: largest IO
 * @io_opt: optimal IO size, in bytes
 * @max_segments: largest number of segments of an IO
 * @virt_boundary_mask: segments may not cross this boundary
 * @max_discard_sectors: 0 for no DISCARD
 * @discard_granularity: in bytes
 * @discard_alignment: in bytes
 * @max_secure_erase_sectors: 0 for no SECURE_ERASE
 * @max_write_zeroes_sectors: 0 for no WRITE_ZEROES
 * @write_cache: the device has a volatile write cache
 * @fua: it honours FUA
 */
struct rnbd_clt_limits {
	unsigned int logical_block_size;
	unsigned int physical_block_size;
	unsigned int max_hw_sectors;
	unsigned int io_opt;
	unsigned int max_segments;
	unsigned long virt_boundary_mask;
	unsigned int max_discard_sectors;
	unsigned int discard_granularity;
	unsigned int discard_alignment;
	unsigned int max_secure_erase_sectors;
	unsigned int max_write_zeroes_sectors;
	bool write_cache;
	bool fua;
};

/*
 * A blk-mq disk with its queue limits, and new limits for a live one (its
 * queue frozen by the caller): 6.11 takes them, and the write cache and FUA
 * as features (BLK_FEAT_*, new with it), as one struct queue_limits.
 */
#ifdef BLK_FEAT_WRITE_CACHE

static inline void rnbd_compat_fill_limits(struct queue_limits *lim,
					   const struct rnbd_clt_limits *l)
{
	lim->logical_block_size = l->logical_block_size;
	lim->physical_block_size = l->physical_block_size;
	lim->max_hw_sectors = l->max_hw_sectors;
	lim->io_opt = l->io_opt;
	lim->max_segments = l->max_segments;
	lim->virt_boundary_mask = l->virt_boundary_mask;
	lim->max_hw_discard_sectors = l->max_discard_sectors;
	lim->discard_granularity = l->discard_granularity;
	lim->discard_alignment = l->discard_alignment;
	lim->max_secure_erase_sectors = l->max_secure_erase_sectors;
	lim->max_write_zeroes_sectors = l->max_write_zeroes_sectors;
	lim->features &= ~(BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA);
	if (l->write_cache)
		lim->features |= BLK_FEAT_WRITE_CACHE;
	if (l->fua)
		lim->features |= BLK_FEAT_FUA;
}

static inline struct gendisk *
rnbd_compat_alloc_disk(struct blk_mq_tag_set *set,
		       const struct rnbd_clt_limits *l, void *queuedata)
{
	struct queue_limits lim = { };

	rnbd_compat_fill_limits(&lim, l);
	return blk_mq_alloc_disk(set, &lim, queuedata);
}

/* 6.12 wants the queue frozen before the limits' lock is taken. */
static inline int rnbd_compat_update_limits(struct request_queue *q,
					    const struct rnbd_clt_limits *l)
{
	struct queue_limits lim = queue_limits_start_update(q);

	rnbd_compat_fill_limits(&lim, l);
	return queue_limits_commit_update(q, &lim);
}

#else

static inline void rnbd_compat_set_limits(struct request_queue *q,
					  const struct rnbd_clt_limits *l)
{
	blk_queue_logical_block_size(q, l->logical_block_size);
	blk_queue_physical_block_size(q, l->physical_block_size);
	blk_queue_max_hw_sectors(q, l->max_hw_sectors);
	blk_queue_io_opt(q, l->io_opt);
	blk_queue_max_segments(q, l->max_segments);
	blk_queue_virt_boundary(q, l->virt_boundary_mask);
	blk_queue_max_discard_sectors(q, l->max_discard_sectors);
	q->limits.discard_granularity = l->discard_granularity;
	q->limits.discard_alignment = l->discard_alignment;
	blk_queue_max_secure_erase_sectors(q, l->max_secure_erase_sectors);
	blk_queue_max_write_zeroes_sectors(q, l->max_write_zeroes_sectors);
	blk_queue_write_cache(q, l->write_cache, l->fua);
	blk_queue_flag_set(QUEUE_FLAG_NONROT, q);
}

static inline struct gendisk *
rnbd_compat_alloc_disk(struct blk_mq_tag_set *set,
		       const struct rnbd_clt_limits *l, void *queuedata)
{
	struct gendisk *disk = blk_mq_alloc_disk(set, queuedata);

	if (!IS_ERR(disk))
		rnbd_compat_set_limits(disk->queue, l);
	return disk;
}

static inline int rnbd_compat_update_limits(struct request_queue *q,
					    const struct rnbd_clt_limits *l)
{
	rnbd_compat_set_limits(q, l);
	return 0;
}

#endif

#endif /* RNBD_COMPAT_H */
