// SPDX-License-Identifier: GPL-2.0-only
/*
 * RTRS client sysfs: /sys/class/rtrs-client/<sessname>/ and its paths.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/kobject.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "rtrs-clt.h"

static struct rtrs_clt_sess *to_clt_sess(struct device *dev)
{
	return container_of(dev, struct rtrs_clt_sess, dev);
}

static const char * const rtrs_clt_mp_names[] = {
	[RTRS_CLT_MP_ROUND_ROBIN] = "round-robin",
	[RTRS_CLT_MP_MIN_INFLIGHT] = "min-inflight",
};

/* The short names upstream prints beside the number. */
static const char * const rtrs_clt_mp_short[] = {
	[RTRS_CLT_MP_ROUND_ROBIN] = "RR",
	[RTRS_CLT_MP_MIN_INFLIGHT] = "MI",
};

static ssize_t mpath_policy_show(struct device *dev,
				 struct device_attribute *attr, char *page)
{
	int policy = READ_ONCE(to_clt_sess(dev)->mp_policy);

	return sysfs_emit(page, "%s (%s: %d)\n", rtrs_clt_mp_names[policy],
			  rtrs_clt_mp_short[policy], policy);
}

/* A name, a short name or a number. */
static int rtrs_clt_parse_mp_policy(const char *buf)
{
	int policy;

	policy = sysfs_match_string(rtrs_clt_mp_names, buf);
	if (policy < 0)
		policy = sysfs_match_string(rtrs_clt_mp_short, buf);
	if (policy < 0 && (kstrtoint(buf, 0, &policy) || policy < 0 ||
			   policy >= ARRAY_SIZE(rtrs_clt_mp_names)))
		return -EINVAL;
	return policy;
}

static ssize_t mpath_policy_store(struct device *dev,
				  struct device_attribute *attr,
				  const char *buf, size_t count)
{
	int policy = rtrs_clt_parse_mp_policy(buf);

	if (policy < 0) {
		pr_err("mpath_policy: '%.*s' is not round-robin (RR, 0) or min-inflight (MI, 1)\n",
		       (int)strcspn(buf, "\n"), buf);
		return -EINVAL;
	}
	WRITE_ONCE(to_clt_sess(dev)->mp_policy, policy);
	return count;
}
static DEVICE_ATTR_RW(mpath_policy);

static ssize_t queue_depth_show(struct device *dev,
				struct device_attribute *attr, char *page)
{
	return sysfs_emit(page, "%u\n", to_clt_sess(dev)->queue_depth);
}
static DEVICE_ATTR_RO(queue_depth);

static struct attribute *rtrs_clt_sess_attrs[] = {
	&dev_attr_mpath_policy.attr,
	&dev_attr_queue_depth.attr,
	NULL,
};

static const struct attribute_group rtrs_clt_sess_group = {
	.attrs = rtrs_clt_sess_attrs,
};

const struct attribute_group *rtrs_clt_sess_groups[] = {
	&rtrs_clt_sess_group,
	NULL,
};

int rtrs_clt_sysfs_add_sess(struct rtrs_clt_sess *sess)
{
	sess->paths_kobj = kobject_create_and_add("paths", &sess->dev.kobj);
	return sess->paths_kobj ? 0 : -ENOMEM;
}

void rtrs_clt_sysfs_del_sess(struct rtrs_clt_sess *sess)
{
	kobject_del(sess->paths_kobj);
	kobject_put(sess->paths_kobj);
}

/* paths/<src@dst>/ */

static struct rtrs_clt_path *to_clt_path_kobj(struct kobject *kobj)
{
	return container_of(kobj, struct rtrs_clt_path, kobj);
}

static ssize_t state_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *page)
{
	struct rtrs_clt_path *path = to_clt_path_kobj(kobj);

	return sysfs_emit(page, "%s\n",
			  rtrs_clt_path_state(path) == RTRS_CLT_CONNECTED ?
			  "connected" : "disconnected");
}

static struct kobj_attribute rtrs_clt_state_attr = __ATTR_RO(state);

static ssize_t hca_name_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *page)
{
	return sysfs_emit(page, "%s\n", to_clt_path_kobj(kobj)->hca_name);
}

static struct kobj_attribute rtrs_clt_hca_name_attr = __ATTR_RO(hca_name);

static ssize_t hca_port_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *page)
{
	return sysfs_emit(page, "%u\n", to_clt_path_kobj(kobj)->hca_port);
}

static struct kobj_attribute rtrs_clt_hca_port_attr = __ATTR_RO(hca_port);

static ssize_t rtrs_clt_emit_addr(char *page,
				  const struct sockaddr_storage *addr)
{
	int len;

	len = rtrs_sockaddr_to_str((const struct sockaddr *)addr, page,
				   PAGE_SIZE - 1);
	if (len < 0)
		return len;
	return len + sysfs_emit_at(page, len, "\n");
}

static ssize_t src_addr_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *page)
{
	return rtrs_clt_emit_addr(page, &to_clt_path_kobj(kobj)->s.src_addr);
}

static struct kobj_attribute rtrs_clt_src_addr_attr = __ATTR_RO(src_addr);

static ssize_t dst_addr_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *page)
{
	return rtrs_clt_emit_addr(page, &to_clt_path_kobj(kobj)->s.dst_addr);
}

static struct kobj_attribute rtrs_clt_dst_addr_attr = __ATTR_RO(dst_addr);

static struct attribute *rtrs_clt_path_attrs[] = {
	&rtrs_clt_state_attr.attr,
	&rtrs_clt_hca_name_attr.attr,
	&rtrs_clt_hca_port_attr.attr,
	&rtrs_clt_src_addr_attr.attr,
	&rtrs_clt_dst_addr_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(rtrs_clt_path);

static void rtrs_clt_path_release(struct kobject *kobj)
{
	rtrs_clt_free_path(to_clt_path_kobj(kobj));
}

static const struct kobj_type rtrs_clt_path_ktype = {
	.sysfs_ops = &kobj_sysfs_ops,
	.release = rtrs_clt_path_release,
	.default_groups = rtrs_clt_path_groups,
};

void rtrs_clt_sysfs_init_path(struct rtrs_clt_path *path)
{
	kobject_init(&path->kobj, &rtrs_clt_path_ktype);
}

int rtrs_clt_sysfs_add_path(struct rtrs_clt_path *path)
{
	return kobject_add(&path->kobj, path->sess->paths_kobj, "%s",
			   path->name);
}

/* The last reference of a path: its release frees it. */
void rtrs_clt_sysfs_put_path(struct rtrs_clt_path *path)
{
	if (path->kobj.state_in_sysfs)
		kobject_del(&path->kobj);
	kobject_put(&path->kobj);
}
