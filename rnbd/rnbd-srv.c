// SPDX-License-Identifier: GPL-2.0-only
/*
 * RNBD server: exports local block devices to RNBD clients over RTRS.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/kdev_t.h>
#include <linux/module.h>

#include "rnbd-proto.h"

/* /sys/class/rnbd-server/: holds the control device. */
static struct class rnbd_srv_class = {
	.name = "rnbd-server",
};

/* /sys/class/rnbd-server/ctl: parent of the exported devices. */
static struct device *rnbd_srv_ctl_dev;

static int __init rnbd_srv_init(void)
{
	int err;

	err = class_register(&rnbd_srv_class);
	if (err) {
		pr_err("cannot register class %s: %d\n", rnbd_srv_class.name,
		       err);
		return err;
	}
	rnbd_srv_ctl_dev = device_create(&rnbd_srv_class, NULL, MKDEV(0, 0),
					 NULL, "ctl");
	if (IS_ERR(rnbd_srv_ctl_dev)) {
		err = PTR_ERR(rnbd_srv_ctl_dev);
		pr_err("cannot create the ctl device: %d\n", err);
		class_unregister(&rnbd_srv_class);
		return err;
	}
	return 0;
}

static void __exit rnbd_srv_exit(void)
{
	device_unregister(rnbd_srv_ctl_dev);
	class_unregister(&rnbd_srv_class);
}

module_init(rnbd_srv_init);
module_exit(rnbd_srv_exit);

MODULE_DESCRIPTION("RDMA Network Block Device (RNBD) server");
MODULE_LICENSE("GPL");
