// SPDX-License-Identifier: GPL-2.0-only
/*
 * RTRS client sysfs: /sys/class/rtrs-client/<sessname>/ and its paths.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/kobject.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "rtrs-clt.h"

static struct rtrs_clt_sess *to_clt_sess(struct device *dev)
{
	return container_of(dev, struct rtrs_clt_sess, dev);
}

static const char * const rtrs_clt_mp_names[] = {
	[RTRS_CLT_MP_ROUND_ROBIN] = "round-robin",
	[RTRS_CLT_MP_MIN_INFLIGHT] = "min-inflight",
	[RTRS_CLT_MP_MIN_LATENCY] = "min-latency",
};

/* The short names upstream prints beside the number. */
static const char * const rtrs_clt_mp_short[] = {
	[RTRS_CLT_MP_ROUND_ROBIN] = "RR",
	[RTRS_CLT_MP_MIN_INFLIGHT] = "MI",
	[RTRS_CLT_MP_MIN_LATENCY] = "ML",
};

static ssize_t mpath_policy_show(struct device *dev,
				 struct device_attribute *attr, char *page)
{
	int policy = READ_ONCE(to_clt_sess(dev)->mp_policy);

	return sysfs_emit(page, "%s (%s: %d)\n", rtrs_clt_mp_names[policy],
			  rtrs_clt_mp_short[policy], policy);
}

/*
 * As upstream takes it: a number in base 10, a short name, or a name at
 * the start of @buf; names in any case.
 */
static int rtrs_clt_parse_mp_policy(const char *buf)
{
	size_t len = strcspn(buf, "\n");
	int i, policy;

	if (!kstrtoint(buf, 10, &policy))
		return policy >= 0 && policy < ARRAY_SIZE(rtrs_clt_mp_names) ?
		       policy : -EINVAL;
	for (i = 0; i < ARRAY_SIZE(rtrs_clt_mp_names); i++) {
		if (!strncasecmp(buf, rtrs_clt_mp_names[i],
				 strlen(rtrs_clt_mp_names[i])) ||
		    (len == 2 && !strncasecmp(buf, rtrs_clt_mp_short[i], 2)))
			return i;
	}
	return -EINVAL;
}

static ssize_t mpath_policy_store(struct device *dev,
				  struct device_attribute *attr,
				  const char *buf, size_t count)
{
	int policy = rtrs_clt_parse_mp_policy(buf);

	if (policy < 0) {
		pr_err_ratelimited("mpath_policy: '%.*s' is not round-robin (RR, 0), min-inflight (MI, 1) or min-latency (ML, 2)\n",
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

static ssize_t max_reconnect_attempts_show(struct device *dev,
					   struct device_attribute *attr,
					   char *page)
{
	return sysfs_emit(page, "%d\n",
			  READ_ONCE(to_clt_sess(dev)->max_reconnect_attempts));
}

static ssize_t max_reconnect_attempts_store(struct device *dev,
					    struct device_attribute *attr,
					    const char *buf, size_t count)
{
	int val;

	if (kstrtoint(buf, 10, &val) || val < RTRS_CLT_RECONNECT_FOREVER ||
	    val > RTRS_CLT_MAX_RECONNECT_ATTEMPTS) {
		pr_err_ratelimited("max_reconnect_attempts: '%.*s' is not -1 (for ever) to %d\n",
				   (int)strcspn(buf, "\n"), buf,
				   RTRS_CLT_MAX_RECONNECT_ATTEMPTS);
		return -EINVAL;
	}
	WRITE_ONCE(to_clt_sess(dev)->max_reconnect_attempts, val);
	return count;
}
static DEVICE_ATTR_RW(max_reconnect_attempts);

/* @buf as a number from @min to @max, or -EINVAL and a line naming @name. */
static int rtrs_clt_parse_hb(const char *name, const char *buf,
			     unsigned int min, unsigned int max,
			     unsigned int *val)
{
	if (!kstrtouint(buf, 10, val) && *val >= min && *val <= max)
		return 0;
	pr_err_ratelimited("%s: '%.*s' is not %u to %u\n", name,
			   (int)strcspn(buf, "\n"), buf, min, max);
	return -EINVAL;
}

/*
 * Heartbeats: how often each path of the session sends one, and how many
 * unanswered in a row close the path.  The defaults close a path that
 * stopped answering after 25 to 30 s, as upstream's; 1000 and 3 after 3
 * to 4 s.  A change applies from each path's next heartbeat.
 */
static ssize_t hb_interval_ms_show(struct device *dev,
				   struct device_attribute *attr, char *page)
{
	return sysfs_emit(page, "%u\n",
			  READ_ONCE(to_clt_sess(dev)->hb_interval_ms));
}

static ssize_t hb_interval_ms_store(struct device *dev,
				    struct device_attribute *attr,
				    const char *buf, size_t count)
{
	unsigned int val;
	int err;

	err = rtrs_clt_parse_hb(attr->attr.name, buf,
				RTRS_CLT_HB_INTERVAL_MIN_MS,
				RTRS_CLT_HB_INTERVAL_MAX_MS, &val);
	if (err)
		return err;
	rtrs_clt_set_hb(to_clt_sess(dev), val, 0);
	return count;
}
static DEVICE_ATTR_RW(hb_interval_ms);

static ssize_t hb_missed_max_show(struct device *dev,
				  struct device_attribute *attr, char *page)
{
	return sysfs_emit(page, "%u\n",
			  READ_ONCE(to_clt_sess(dev)->hb_missed_max));
}

static ssize_t hb_missed_max_store(struct device *dev,
				   struct device_attribute *attr,
				   const char *buf, size_t count)
{
	unsigned int val;
	int err;

	err = rtrs_clt_parse_hb(attr->attr.name, buf, 1,
				RTRS_CLT_HB_MISSED_MAX, &val);
	if (err)
		return err;
	rtrs_clt_set_hb(to_clt_sess(dev), 0, val);
	return count;
}
static DEVICE_ATTR_RW(hb_missed_max);

static ssize_t add_path_show(struct device *dev,
			     struct device_attribute *attr, char *page)
{
	return sysfs_emit(page,
			  "Usage: echo [<source addr>@]<destination addr> > %s\n\n"
			  "*addr ::= [ ip:<ipv4|ipv6> | gid:<gid> ]\n",
			  attr->attr.name);
}

static ssize_t add_path_store(struct device *dev,
			      struct device_attribute *attr,
			      const char *buf, size_t count)
{
	struct rtrs_clt_sess *sess = to_clt_sess(dev);
	struct sockaddr_storage src, dst;
	struct rtrs_addr addr = { .src = &src, .dst = &dst };
	size_t len = strcspn(buf, "\n");
	int err;

	/* It logs what it could not parse: one line for the administrator. */
	err = rtrs_addr_to_sockaddr(buf, len, sess->port, &addr);
	if (err)
		return err;
	err = rtrs_clt_add_path_sysfs(sess, &addr);
	return err ?: count;
}
static DEVICE_ATTR_RW(add_path);

static struct attribute *rtrs_clt_sess_attrs[] = {
	&dev_attr_add_path.attr,
	&dev_attr_hb_interval_ms.attr,
	&dev_attr_hb_missed_max.attr,
	&dev_attr_max_reconnect_attempts.attr,
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

static ssize_t cur_latency_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *page)
{
	struct rtrs_clt_path *path = to_clt_path_kobj(kobj);

	return sysfs_emit(page, "%lld ns\n",
			  ktime_to_ns(READ_ONCE(path->s.hb_cur_latency)));
}

static struct kobj_attribute rtrs_clt_cur_latency_attr = __ATTR_RO(cur_latency);

/* The usage line of the files that take "1". */
static ssize_t rtrs_clt_usage_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *page)
{
	return sysfs_emit(page, "Usage: echo 1 > %s\n", attr->attr.name);
}

static ssize_t disconnect_store(struct kobject *kobj,
				struct kobj_attribute *attr,
				const char *buf, size_t count)
{
	struct rtrs_clt_path *path = to_clt_path_kobj(kobj);

	if (rtrs_sysfs_write_one(&path->s, path->name, attr->attr.name, buf))
		return -EINVAL;
	return rtrs_clt_disconnect_path(path) ?: count;
}

static struct kobj_attribute rtrs_clt_disconnect_attr =
	__ATTR(disconnect, 0644, rtrs_clt_usage_show, disconnect_store);

static ssize_t reconnect_store(struct kobject *kobj,
			       struct kobj_attribute *attr,
			       const char *buf, size_t count)
{
	struct rtrs_clt_path *path = to_clt_path_kobj(kobj);

	if (rtrs_sysfs_write_one(&path->s, path->name, attr->attr.name, buf))
		return -EINVAL;
	return rtrs_clt_reconnect_path(path) ?: count;
}

static struct kobj_attribute rtrs_clt_reconnect_attr =
	__ATTR(reconnect, 0644, rtrs_clt_usage_show, reconnect_store);

static ssize_t remove_path_store(struct kobject *kobj,
				 struct kobj_attribute *attr,
				 const char *buf, size_t count)
{
	struct rtrs_clt_path *path = to_clt_path_kobj(kobj);

	if (rtrs_sysfs_write_one(&path->s, path->name, attr->attr.name, buf))
		return -EINVAL;
	return rtrs_clt_remove_path(path, &attr->attr) ?: count;
}

static struct kobj_attribute rtrs_clt_remove_path_attr =
	__ATTR(remove_path, 0644, rtrs_clt_usage_show, remove_path_store);

static struct attribute *rtrs_clt_path_attrs[] = {
	&rtrs_clt_state_attr.attr,
	&rtrs_clt_cur_latency_attr.attr,
	&rtrs_clt_disconnect_attr.attr,
	&rtrs_clt_reconnect_attr.attr,
	&rtrs_clt_remove_path_attr.attr,
	&rtrs_clt_hca_name_attr.attr,
	&rtrs_clt_hca_port_attr.attr,
	&rtrs_clt_src_addr_attr.attr,
	&rtrs_clt_dst_addr_attr.attr,
	NULL,
};

static const struct attribute_group rtrs_clt_path_group = {
	.attrs = rtrs_clt_path_attrs,
};

/* The path's files, and its stats/ with them. */
static const struct attribute_group *rtrs_clt_path_groups[] = {
	&rtrs_clt_path_group,
	&rtrs_clt_stats_group,
	NULL,
};

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
