// SPDX-License-Identifier: GPL-2.0-only
/*
 * RNBD server sysfs: /sys/class/rnbd-server/ctl/access_{add,del,rules},
 * the access rules;
 * /sys/class/rnbd-server/ctl/devices/<device>/block_dev, a link to the
 * block device, and .../sessions/<session>/{read_only, access_mode,
 * mapping_path, force_close} for each session that opened it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/kdev_t.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "rnbd-srv.h"

static struct class rnbd_srv_class = {
	.name = "rnbd-server",
};

/* /sys/class/rnbd-server/ctl and its devices/ directory. */
static struct device *rnbd_srv_ctl_dev;
static struct kobject *rnbd_srv_devices_kobj;

static void rnbd_srv_dev_kobj_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct rnbd_srv_dev, kobj));
}

static const struct kobj_type rnbd_srv_dev_ktype = {
	.sysfs_ops = &kobj_sysfs_ops,
	.release = rnbd_srv_dev_kobj_release,
};

/* On failure the device is freed, through its kobject. */
int rnbd_srv_dev_sysfs_add(struct rnbd_srv_dev *dev,
			   struct block_device *bdev)
{
	int err;

	err = kobject_init_and_add(&dev->kobj, &rnbd_srv_dev_ktype,
				   rnbd_srv_devices_kobj, "%s", dev->name);
	if (err)
		goto out_put;
	err = sysfs_create_link(&dev->kobj, &bdev->bd_device.kobj,
				"block_dev");
	if (err)
		goto out_del;
	dev->sessions_kobj = kobject_create_and_add("sessions", &dev->kobj);
	if (!dev->sessions_kobj) {
		err = -ENOMEM;
		goto out_remove_link;
	}
	return 0;

out_remove_link:
	sysfs_remove_link(&dev->kobj, "block_dev");
out_del:
	kobject_del(&dev->kobj);
out_put:
	pr_err("cannot add device %s to sysfs: %d\n", dev->name, err);
	kobject_put(&dev->kobj);
	return err;
}

void rnbd_srv_dev_sysfs_del(struct rnbd_srv_dev *dev)
{
	kobject_del(dev->sessions_kobj);
	kobject_put(dev->sessions_kobj);
	sysfs_remove_link(&dev->kobj, "block_dev");
	kobject_del(&dev->kobj);
	kobject_put(&dev->kobj);
}

static struct rnbd_srv_sess_dev *kobj_to_sess_dev(struct kobject *kobj)
{
	return container_of(kobj, struct rnbd_srv_sess_dev, kobj);
}

static ssize_t read_only_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", kobj_to_sess_dev(kobj)->access_mode ==
					RNBD_ACCESS_RO);
}

static ssize_t access_mode_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n",
			  rnbd_access_mode_str(kobj_to_sess_dev(kobj)->access_mode));
}

static ssize_t mapping_path_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", kobj_to_sess_dev(kobj)->mapping_path);
}

static ssize_t force_close_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "Usage: echo 1 > %s\n", attr->attr.name);
}

static ssize_t force_close_store(struct kobject *kobj,
				 struct kobj_attribute *attr, const char *buf,
				 size_t count)
{
	struct rnbd_srv_sess_dev *sess_dev = kobj_to_sess_dev(kobj);

	if (!sysfs_streq(buf, "1")) {
		rnbd_srv_err_rl(sess_dev->sess, "force_close: write 1, not '%.*s'\n",
				(int)strcspn(buf, "\n"), buf);
		return -EINVAL;
	}
	rnbd_srv_force_close(sess_dev);
	return count;
}

static struct kobj_attribute read_only_attr = __ATTR_RO(read_only);
static struct kobj_attribute access_mode_attr = __ATTR_RO(access_mode);
static struct kobj_attribute mapping_path_attr = __ATTR_RO(mapping_path);
static struct kobj_attribute force_close_attr =
	__ATTR_RW_MODE(force_close, 0644);

static struct attribute *rnbd_srv_sess_dev_attrs[] = {
	&read_only_attr.attr,
	&access_mode_attr.attr,
	&mapping_path_attr.attr,
	&force_close_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(rnbd_srv_sess_dev);

static void rnbd_srv_sess_dev_kobj_release(struct kobject *kobj)
{
	/* The sess_dev lives on until rnbd_srv_release_sess_dev(). */
}

static const struct kobj_type rnbd_srv_sess_dev_ktype = {
	.sysfs_ops = &kobj_sysfs_ops,
	.release = rnbd_srv_sess_dev_kobj_release,
	.default_groups = rnbd_srv_sess_dev_groups,
};

int rnbd_srv_sess_dev_sysfs_add(struct rnbd_srv_sess_dev *sess_dev)
{
	int err;

	err = kobject_init_and_add(&sess_dev->kobj, &rnbd_srv_sess_dev_ktype,
				   sess_dev->dev->sessions_kobj, "%s",
				   sess_dev->sess->sessname);
	if (err) {
		rnbd_srv_err(sess_dev->sess, "cannot add %s to sysfs: %d\n",
			     sess_dev->mapping_path, err);
		kobject_put(&sess_dev->kobj);
	}
	return err;
}

void rnbd_srv_sess_dev_sysfs_del(struct rnbd_srv_sess_dev *sess_dev)
{
	if (!sess_dev->kobj.state_in_sysfs)
		return;
	kobject_del(&sess_dev->kobj);
	kobject_put(&sess_dev->kobj);
}

static ssize_t access_add_store(struct device *dev,
				struct device_attribute *attr, const char *buf,
				size_t count)
{
	int err = rnbd_srv_rule_add(buf);

	return err ? err : count;
}

static ssize_t access_del_store(struct device *dev,
				struct device_attribute *attr, const char *buf,
				size_t count)
{
	int err = rnbd_srv_rule_del(buf);

	return err ? err : count;
}

static ssize_t access_rules_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return rnbd_srv_rules_show(buf);
}

static DEVICE_ATTR_WO(access_add);
static DEVICE_ATTR_WO(access_del);
static DEVICE_ATTR_RO(access_rules);

static struct attribute *rnbd_srv_ctl_attrs[] = {
	&dev_attr_access_add.attr,
	&dev_attr_access_del.attr,
	&dev_attr_access_rules.attr,
	NULL,
};
ATTRIBUTE_GROUPS(rnbd_srv_ctl);

int rnbd_srv_sysfs_init(void)
{
	int err;

	err = class_register(&rnbd_srv_class);
	if (err) {
		pr_err("cannot register class %s: %d\n", rnbd_srv_class.name,
		       err);
		return err;
	}
	rnbd_srv_ctl_dev = device_create_with_groups(&rnbd_srv_class, NULL,
						     MKDEV(0, 0), NULL,
						     rnbd_srv_ctl_groups,
						     "ctl");
	if (IS_ERR(rnbd_srv_ctl_dev)) {
		err = PTR_ERR(rnbd_srv_ctl_dev);
		goto out_unregister_class;
	}
	rnbd_srv_devices_kobj = kobject_create_and_add("devices",
						       &rnbd_srv_ctl_dev->kobj);
	if (!rnbd_srv_devices_kobj) {
		err = -ENOMEM;
		goto out_unregister_dev;
	}
	return 0;

out_unregister_dev:
	device_unregister(rnbd_srv_ctl_dev);
out_unregister_class:
	class_unregister(&rnbd_srv_class);
	return err;
}

void rnbd_srv_sysfs_exit(void)
{
	kobject_del(rnbd_srv_devices_kobj);
	kobject_put(rnbd_srv_devices_kobj);
	device_unregister(rnbd_srv_ctl_dev);
	class_unregister(&rnbd_srv_class);
}
