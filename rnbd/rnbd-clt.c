// SPDX-License-Identifier: GPL-2.0-only
/*
 * RNBD client: maps block devices of an RNBD server as /dev/rnbdN.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/device.h>
#include <linux/module.h>

#include "rnbd-proto.h"

/* Block major of /dev/rnbdN, assigned at load. */
static int rnbd_clt_major;

/* /sys/devices/virtual/rnbd-client/: holds the control device. */
static struct class rnbd_clt_class = {
	.name = "rnbd-client",
};

/* /sys/devices/virtual/rnbd-client/ctl: where devices are mapped. */
static struct device *rnbd_clt_ctl_dev;

static int __init rnbd_clt_init(void)
{
	int err;

	rnbd_clt_major = register_blkdev(0, "rnbd");
	if (rnbd_clt_major < 0) {
		pr_err("cannot register a block major: %d\n", rnbd_clt_major);
		return rnbd_clt_major;
	}
	err = class_register(&rnbd_clt_class);
	if (err) {
		pr_err("cannot register class %s: %d\n", rnbd_clt_class.name,
		       err);
		goto out_unregister_blkdev;
	}
	rnbd_clt_ctl_dev = device_create(&rnbd_clt_class, NULL, MKDEV(0, 0),
					 NULL, "ctl");
	if (IS_ERR(rnbd_clt_ctl_dev)) {
		err = PTR_ERR(rnbd_clt_ctl_dev);
		pr_err("cannot create the ctl device: %d\n", err);
		goto out_unregister_class;
	}
	return 0;

out_unregister_class:
	class_unregister(&rnbd_clt_class);
out_unregister_blkdev:
	unregister_blkdev(rnbd_clt_major, "rnbd");
	return err;
}

static void __exit rnbd_clt_exit(void)
{
	device_unregister(rnbd_clt_ctl_dev);
	class_unregister(&rnbd_clt_class);
	unregister_blkdev(rnbd_clt_major, "rnbd");
}

module_init(rnbd_clt_init);
module_exit(rnbd_clt_exit);

MODULE_DESCRIPTION("RDMA Network Block Device (RNBD) client");
MODULE_LICENSE("GPL");
