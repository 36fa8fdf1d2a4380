// SPDX-License-Identifier: GPL-2.0-only
/*
 * RTRS server: accepts sessions, lends them memory chunks, serves their IO.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/module.h>

/* Parent of the per-session directories, /sys/class/rtrs-server/<sess>. */
static struct class rtrs_srv_class = {
	.name = "rtrs-server",
};

static int __init rtrs_srv_init(void)
{
	int err;

	err = class_register(&rtrs_srv_class);
	if (err)
		pr_err("cannot register class %s: %d\n", rtrs_srv_class.name,
		       err);
	return err;
}

static void __exit rtrs_srv_exit(void)
{
	class_unregister(&rtrs_srv_class);
}

module_init(rtrs_srv_init);
module_exit(rtrs_srv_exit);

MODULE_DESCRIPTION("RDMA Transport (RTRS) server");
MODULE_LICENSE("GPL");
