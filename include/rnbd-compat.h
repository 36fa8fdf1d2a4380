/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel API differences between the kernels the modules build for
 * (Debian's 6.1 and 6.12), in one place, so the code reads as one kernel's.
 */
#ifndef RNBD_COMPAT_H
#define RNBD_COMPAT_H

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/version.h>

/*
 * An open block device.  6.9 made the open file the handle
 * (bdev_file_open_by_path()); 6.1 returns the block_device and closes it
 * with the mode it was opened with.  6.5 to 6.8 had a third API that no
 * supported kernel needs.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)

struct rnbd_bdev {
	struct file *file;
};

static inline int rnbd_bdev_open(struct rnbd_bdev *h, const char *path,
				 bool write, void *holder)
{
	blk_mode_t mode = BLK_OPEN_READ | (write ? BLK_OPEN_WRITE : 0);

	h->file = bdev_file_open_by_path(path, mode, NULL, NULL);
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
	h->mode = FMODE_READ | (write ? FMODE_WRITE : 0);
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

#endif /* RNBD_COMPAT_H */
