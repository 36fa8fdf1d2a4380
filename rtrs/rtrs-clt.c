// SPDX-License-Identifier: GPL-2.0-only
/*
 * RTRS client: sessions of paths to one server, multipath and fail-over.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/module.h>

/* Parent of the per-session directories, /sys/class/rtrs-client/<sess>. */
static struct class rtrs_clt_class = {
	.name = "rtrs-client",
};

static int __init rtrs_clt_init(void)
{
	int err;

	err = class_register(&rtrs_clt_class);
	if (err)
		pr_err("cannot register class %s: %d\n", rtrs_clt_class.name,
		       err);
	return err;
}

static void __exit rtrs_clt_exit(void)
{
	class_unregister(&rtrs_clt_class);
}

module_init(rtrs_clt_init);
module_exit(rtrs_clt_exit);

MODULE_DESCRIPTION("RDMA Transport (RTRS) client");
MODULE_LICENSE("GPL");
