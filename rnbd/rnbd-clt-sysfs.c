// SPDX-License-Identifier: GPL-2.0-only
/*
 * RNBD client sysfs: /sys/devices/virtual/rnbd-client/ctl/map_device, a
 * link per mapped device in .../ctl/devices/, and /sys/block/rnbdN/rnbd/.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/ctype.h>
#include <linux/device.h>
#include <linux/kobject.h>
#include <linux/parser.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "rnbd-clt.h"

/* /sys/devices/virtual/rnbd-client/: holds the control device. */
static struct class rnbd_clt_class = {
	.name = "rnbd-client",
};

/* /sys/devices/virtual/rnbd-client/ctl: where devices are mapped. */
static struct device *rnbd_clt_ctl_dev;

/* .../ctl/devices/: a link to /sys/block/rnbdN per mapped device. */
static struct kobject *rnbd_clt_devices_kobj;

/* map_device: "key=value" options, split by white space */

enum rnbd_clt_opt {
	RNBD_OPT_SESSNAME,
	RNBD_OPT_PATH,
	RNBD_OPT_DEV_PATH,
	RNBD_OPT_ACCESS_MODE,
	RNBD_OPT_DEST_PORT,
	RNBD_OPT_NR_POLL_QUEUES,
	RNBD_OPT_ERR,
};

static const match_table_t rnbd_clt_opt_tokens = {
	{ RNBD_OPT_SESSNAME,		"sessname=%s"		},
	{ RNBD_OPT_PATH,		"path=%s"		},
	{ RNBD_OPT_DEV_PATH,		"device_path=%s"	},
	{ RNBD_OPT_ACCESS_MODE,		"access_mode=%s"	},
	{ RNBD_OPT_DEST_PORT,		"dest_port=%d"		},
	{ RNBD_OPT_NR_POLL_QUEUES,	"nr_poll_queues=%d"	},
	{ RNBD_OPT_ERR,			NULL			},
};

/* Copy a string option, refusing an empty or truncated one. */
static int rnbd_clt_opt_str(const char *name, substring_t *arg, char *dst,
			    size_t size)
{
	size_t len = arg->to - arg->from;

	if (!len || len >= size) {
		pr_err_ratelimited("map_device: %s must be 1 to %zu characters\n", name,
				   size - 1);
		return -EINVAL;
	}
	match_strlcpy(dst, arg, size);
	return 0;
}

static int rnbd_clt_opt_sessname(struct rnbd_clt_map_opts *opts,
				 substring_t *arg)
{
	int err;

	err = rnbd_clt_opt_str("sessname", arg, opts->sessname,
			       sizeof(opts->sessname));
	if (err)
		return err;
	/* It names directories in sysfs, here and on the server. */
	if (strchr(opts->sessname, '/')) {
		pr_err_ratelimited("map_device: sessname must not contain '/'\n");
		return -EINVAL;
	}
	return 0;
}

/*
 * A path's addresses, parsed where it stands: as upstream's parser, with
 * the dest_port= before it, else the default port.
 */
static int rnbd_clt_opt_path(struct rnbd_clt_map_opts *opts, substring_t *arg)
{
	size_t i = opts->path_cnt;

	if (i >= RNBD_CLT_MAX_PATHS) {
		pr_err_ratelimited("map_device: more than %d path=\n", RNBD_CLT_MAX_PATHS);
		return -EINVAL;
	}
	opts->paths[i].src = &opts->addrs[2 * i];
	opts->paths[i].dst = &opts->addrs[2 * i + 1];
	if (rtrs_addr_to_sockaddr(arg->from, arg->to - arg->from, opts->port,
				  &opts->paths[i]))
		return -EINVAL;
	opts->path_cnt++;
	return 0;
}

static int rnbd_clt_opt_dev_path(struct rnbd_clt_map_opts *opts,
				 substring_t *arg)
{
	return rnbd_clt_opt_str("device_path", arg, opts->pathname,
				sizeof(opts->pathname));
}

static const char * const rnbd_clt_access_modes[] = {
	[RNBD_ACCESS_RO] = "ro",
	[RNBD_ACCESS_RW] = "rw",
	[RNBD_ACCESS_MIGRATION] = "migration",
};

static int rnbd_clt_opt_access_mode(struct rnbd_clt_map_opts *opts,
				    substring_t *arg)
{
	char mode[16];
	int i;

	match_strlcpy(mode, arg, sizeof(mode));
	i = match_string(rnbd_clt_access_modes,
			 ARRAY_SIZE(rnbd_clt_access_modes), mode);
	if (i < 0) {
		pr_err_ratelimited("map_device: access_mode must be ro, rw or migration\n");
		return -EINVAL;
	}
	opts->access_mode = i;
	return 0;
}

static int rnbd_clt_opt_dest_port(struct rnbd_clt_map_opts *opts,
				  substring_t *arg)
{
	int port;

	if (match_int(arg, &port) || port <= 0 || port > U16_MAX) {
		pr_err_ratelimited("map_device: dest_port must be 1 to %u\n", U16_MAX);
		return -EINVAL;
	}
	opts->port = port;
	return 0;
}

static int rnbd_clt_opt_nr_poll_queues(struct rnbd_clt_map_opts *opts,
				       substring_t *arg)
{
	int nr;

	if (match_int(arg, &nr) || nr < -1 || nr > (int)nr_cpu_ids) {
		pr_err_ratelimited("map_device: nr_poll_queues must be -1 to %u\n",
				   nr_cpu_ids);
		return -EINVAL;
	}
	/* As upstream: -1 is a polled queue per CPU. */
	opts->nr_poll_queues = nr < 0 ? nr_cpu_ids : nr;
	return 0;
}

typedef int (*rnbd_clt_opt_fn)(struct rnbd_clt_map_opts *opts,
			       substring_t *arg);

static const rnbd_clt_opt_fn rnbd_clt_opt_fns[] = {
	[RNBD_OPT_SESSNAME] = rnbd_clt_opt_sessname,
	[RNBD_OPT_PATH] = rnbd_clt_opt_path,
	[RNBD_OPT_DEV_PATH] = rnbd_clt_opt_dev_path,
	[RNBD_OPT_ACCESS_MODE] = rnbd_clt_opt_access_mode,
	[RNBD_OPT_DEST_PORT] = rnbd_clt_opt_dest_port,
	[RNBD_OPT_NR_POLL_QUEUES] = rnbd_clt_opt_nr_poll_queues,
};

/*
 * One option of @p.  @seen: the options met so far; each but path= may be
 * given once (a second one would silently win).
 */
static int rnbd_clt_parse_opt(struct rnbd_clt_map_opts *opts, char *p,
			      unsigned long *seen)
{
	substring_t args[MAX_OPT_ARGS];
	const char *name;
	int token;

	token = match_token(p, rnbd_clt_opt_tokens, args);
	if (token == RNBD_OPT_ERR) {
		pr_err_ratelimited("map_device: unknown option or missing value '%s'\n", p);
		return -EINVAL;
	}
	if (token != RNBD_OPT_PATH && __test_and_set_bit(token, seen)) {
		name = rnbd_clt_opt_tokens[token].pattern;
		pr_err_ratelimited("map_device: %.*s given more than once\n",
				   (int)strcspn(name, "=") + 1, name);
		return -EINVAL;
	}
	return rnbd_clt_opt_fns[token](opts, args);
}

/* path= is not: a session that exists has its paths (rnbd_clt_map()). */
static int rnbd_clt_check_opts(const struct rnbd_clt_map_opts *opts)
{
	const char *missing = NULL;

	if (!opts->sessname[0])
		missing = "sessname=";
	else if (!opts->pathname[0])
		missing = "device_path=";
	if (missing) {
		pr_err_ratelimited("map_device: %s is mandatory\n", missing);
		return -EINVAL;
	}
	return 0;
}

static int rnbd_clt_parse_map(char *buf, struct rnbd_clt_map_opts *opts)
{
	char *p, *rest = strstrip(buf);
	unsigned long seen = 0;
	int err;

	opts->port = RNBD_DEFAULT_PORT;
	opts->access_mode = RNBD_ACCESS_RW;
	while ((p = strsep(&rest, " \t\n"))) {
		if (!*p)
			continue;
		err = rnbd_clt_parse_opt(opts, p, &seen);
		if (err)
			return err;
	}
	return rnbd_clt_check_opts(opts);
}

static ssize_t map_device_show(struct device *dev,
			       struct device_attribute *attr, char *page)
{
	return sysfs_emit(page,
			  "Usage: echo \"[dest_port=<port>] sessname=<session> [path=<[src@]dst>]... device_path=<path on the server> [access_mode=ro|rw|migration] [nr_poll_queues=<n>]\" > %s\n"
			  "  up to %d path= options, needed when the session is new; src and dst are ip:<IPv4 or IPv6 address> or gid:<GID>, src@dst also written src,dst; dest_port= is the port of the path= options after it\n",
			  attr->attr.name, RNBD_CLT_MAX_PATHS);
}

static ssize_t map_device_store(struct device *dev,
				struct device_attribute *attr,
				const char *buf, size_t count)
{
	struct rnbd_clt_map_opts *opts;
	char *options;
	int err;

	opts = kzalloc(sizeof(*opts), GFP_KERNEL);
	options = kstrndup(buf, count, GFP_KERNEL);
	err = -ENOMEM;
	if (!opts || !options)
		goto out_free;
	err = rnbd_clt_parse_map(options, opts);
	if (!err)
		err = rnbd_clt_map(opts);
out_free:
	kfree(options);
	kfree(opts);
	return err ?: count;
}
static DEVICE_ATTR_RW(map_device);

static struct attribute *rnbd_clt_ctl_attrs[] = {
	&dev_attr_map_device.attr,
	NULL,
};
ATTRIBUTE_GROUPS(rnbd_clt_ctl);

/* /sys/block/rnbdN/rnbd/ */

static struct rnbd_clt_dev *to_clt_dev(struct kobject *kobj)
{
	return container_of(kobj, struct rnbd_clt_dev, kobj);
}

static ssize_t state_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *page)
{
	return sysfs_emit(page, "%s\n",
			  rnbd_clt_dev_state_name(to_clt_dev(kobj)));
}

static struct kobj_attribute rnbd_clt_state_attr = __ATTR_RO(state);

static ssize_t session_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *page)
{
	return sysfs_emit(page, "%s\n", to_clt_dev(kobj)->sess->sessname);
}

static struct kobj_attribute rnbd_clt_session_attr = __ATTR_RO(session);

static ssize_t mapping_path_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *page)
{
	return sysfs_emit(page, "%s\n", to_clt_dev(kobj)->pathname);
}

static struct kobj_attribute rnbd_clt_mapping_path_attr =
	__ATTR_RO(mapping_path);

static ssize_t access_mode_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *page)
{
	return sysfs_emit(page, "%s\n",
		rnbd_access_mode_str(to_clt_dev(kobj)->access_mode));
}

static struct kobj_attribute rnbd_clt_access_mode_attr =
	__ATTR_RO(access_mode);

static ssize_t nr_poll_queues_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *page)
{
	return sysfs_emit(page, "%u\n", to_clt_dev(kobj)->nr_poll_queues);
}

static struct kobj_attribute rnbd_clt_nr_poll_queues_attr =
	__ATTR_RO(nr_poll_queues);

static ssize_t unmap_device_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *page)
{
	return sysfs_emit(page, "Usage: echo <normal|force> > %s\n",
			  attr->attr.name);
}

static ssize_t unmap_device_store(struct kobject *kobj,
				  struct kobj_attribute *attr,
				  const char *buf, size_t count)
{
	bool force;
	int err;

	if (sysfs_streq(buf, "normal")) {
		force = false;
	} else if (sysfs_streq(buf, "force")) {
		force = true;
	} else {
		pr_err_ratelimited("unmap_device: '%.*s' is not normal or force\n",
				   (int)strcspn(buf, "\n"), buf);
		return -EINVAL;
	}
	err = rnbd_clt_unmap(to_clt_dev(kobj), force, &attr->attr);
	return err ?: count;
}

static struct kobj_attribute rnbd_clt_unmap_device_attr =
	__ATTR(unmap_device, 0644, unmap_device_show, unmap_device_store);

static ssize_t remap_device_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *page)
{
	return sysfs_emit(page, "Usage: echo 1 > %s\n", attr->attr.name);
}

static ssize_t remap_device_store(struct kobject *kobj,
				  struct kobj_attribute *attr,
				  const char *buf, size_t count)
{
	int err;

	if (!sysfs_streq(buf, "1")) {
		pr_err_ratelimited("remap_device: '%.*s' is not 1\n",
				   (int)strcspn(buf, "\n"), buf);
		return -EINVAL;
	}
	err = rnbd_clt_remap(to_clt_dev(kobj));
	return err ?: count;
}

static struct kobj_attribute rnbd_clt_remap_device_attr =
	__ATTR(remap_device, 0644, remap_device_show, remap_device_store);

static ssize_t resize_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *page)
{
	return sysfs_emit(page, "Usage: echo <new size in sectors> > %s\n",
			  attr->attr.name);
}

static ssize_t resize_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t count)
{
	u64 nsectors;
	int err;

	if (kstrtou64(buf, 0, &nsectors)) {
		pr_err_ratelimited("resize: '%.*s' is not a number of sectors\n",
				   (int)strcspn(buf, "\n"), buf);
		return -EINVAL;
	}
	err = rnbd_clt_resize(to_clt_dev(kobj), nsectors);
	return err ?: count;
}

static struct kobj_attribute rnbd_clt_resize_attr =
	__ATTR(resize, 0644, resize_show, resize_store);

static struct attribute *rnbd_clt_dev_attrs[] = {
	&rnbd_clt_state_attr.attr,
	&rnbd_clt_session_attr.attr,
	&rnbd_clt_mapping_path_attr.attr,
	&rnbd_clt_access_mode_attr.attr,
	&rnbd_clt_nr_poll_queues_attr.attr,
	&rnbd_clt_unmap_device_attr.attr,
	&rnbd_clt_remap_device_attr.attr,
	&rnbd_clt_resize_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(rnbd_clt_dev);

static void rnbd_clt_dev_release(struct kobject *kobj)
{
	rnbd_clt_free_dev(to_clt_dev(kobj));
}

static const struct kobj_type rnbd_clt_dev_ktype = {
	.sysfs_ops = &kobj_sysfs_ops,
	.release = rnbd_clt_dev_release,
	.default_groups = rnbd_clt_dev_groups,
};

void rnbd_clt_sysfs_init_dev(struct rnbd_clt_dev *dev)
{
	kobject_init(&dev->kobj, &rnbd_clt_dev_ktype);
}

/*
 * ctl/devices/<device_path>@<session>, each '/' a '!' (a session name has
 * none), as Linux names it.
 */
static int rnbd_clt_add_link(struct rnbd_clt_dev *dev)
{
	int err;

	dev->link_name = kasprintf(GFP_KERNEL, "%s@%s", dev->pathname,
				   dev->sess->sessname);
	if (!dev->link_name)
		return -ENOMEM;
	strreplace(dev->link_name, '/', '!');
	err = sysfs_create_link(rnbd_clt_devices_kobj,
				&disk_to_dev(dev->gd)->kobj, dev->link_name);
	if (err) {
		pr_err("%s: cannot add the link %s: %d\n", dev->sess->sessname,
		       dev->link_name, err);
		kfree(dev->link_name);
		dev->link_name = NULL;
	}
	return err;
}

/**
 * rnbd_clt_sysfs_link_name_eq() - would two devices' links have one name?
 * @a: the device_path of one
 * @b: the device_path of the other, of the same session
 *
 * Return: whether @a and @b differ at most in '/' for '!'.
 */
bool rnbd_clt_sysfs_link_name_eq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		if (*a != *b && !(strchr("/!", *a) && strchr("/!", *b)))
			return false;
	}
	return *a == *b;
}

/**
 * rnbd_clt_sysfs_add_dev() - add the sysfs files of a mapped device
 * @dev: the device, its disk added
 *
 * Adds /sys/block/rnbdN/rnbd/ and the device's link in ctl/devices/.
 *
 * Return: 0 or a negative errno; the caller puts @dev's kobject then.
 */
int rnbd_clt_sysfs_add_dev(struct rnbd_clt_dev *dev)
{
	int err;

	err = kobject_add(&dev->kobj, &disk_to_dev(dev->gd)->kobj, "rnbd");
	if (err)
		return err;
	err = rnbd_clt_add_link(dev);
	if (err)
		kobject_del(&dev->kobj);
	return err;
}

/**
 * rnbd_clt_sysfs_del_dev() - remove what rnbd_clt_sysfs_add_dev() added
 * @dev: the device
 *
 * Waits for the device's sysfs writers, but one removing its own file.
 */
void rnbd_clt_sysfs_del_dev(struct rnbd_clt_dev *dev)
{
	sysfs_remove_link(rnbd_clt_devices_kobj, dev->link_name);
	kfree(dev->link_name);
	dev->link_name = NULL;
	kobject_del(&dev->kobj);
}

static int rnbd_clt_add_ctl(void)
{
	rnbd_clt_ctl_dev = device_create_with_groups(&rnbd_clt_class, NULL,
						     MKDEV(0, 0), NULL,
						     rnbd_clt_ctl_groups,
						     "ctl");
	if (IS_ERR(rnbd_clt_ctl_dev))
		return PTR_ERR(rnbd_clt_ctl_dev);
	rnbd_clt_devices_kobj = kobject_create_and_add("devices",
						       &rnbd_clt_ctl_dev->kobj);
	if (!rnbd_clt_devices_kobj) {
		device_unregister(rnbd_clt_ctl_dev);
		return -ENOMEM;
	}
	return 0;
}

/**
 * rnbd_clt_sysfs_init() - add /sys/devices/virtual/rnbd-client/ctl/
 *
 * Return: 0 or a negative errno.
 */
int rnbd_clt_sysfs_init(void)
{
	int err;

	err = class_register(&rnbd_clt_class);
	if (err) {
		pr_err("cannot register class %s: %d\n", rnbd_clt_class.name,
		       err);
		return err;
	}
	err = rnbd_clt_add_ctl();
	if (err) {
		pr_err("cannot create the ctl device: %d\n", err);
		class_unregister(&rnbd_clt_class);
	}
	return err;
}

/**
 * rnbd_clt_sysfs_exit() - remove what rnbd_clt_sysfs_init() added
 *
 * Context: module exit, every device unmapped, their links gone.
 */
void rnbd_clt_sysfs_exit(void)
{
	kobject_put(rnbd_clt_devices_kobj);
	device_unregister(rnbd_clt_ctl_dev);
	class_unregister(&rnbd_clt_class);
}
