// SPDX-License-Identifier: GPL-2.0-only
/*
 * RTRS server sysfs: /sys/class/rtrs-server/<session>/paths/<path>/.
 *
 * A path's directory is named "<client address>@<server address>".
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/sysfs.h>

#include "rtrs-srv.h"
#include "rtrs-srv-trace.h"

struct class rtrs_srv_class = {
	.name = "rtrs-server",
};

static struct rtrs_srv_path *kobj_to_path(struct kobject *kobj)
{
	return container_of(kobj, struct rtrs_srv_path, kobj);
}

static ssize_t disconnect_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "Usage: echo 1 > %s\n", attr->attr.name);
}

static ssize_t disconnect_store(struct kobject *kobj,
				struct kobj_attribute *attr, const char *buf,
				size_t count)
{
	struct rtrs_srv_path *path = kobj_to_path(kobj);

	if (rtrs_sysfs_write_one(&path->s, kobject_name(kobj),
				 attr->attr.name, buf))
		return -EINVAL;
	rtrs_path_info(&path->s, "disconnect requested through sysfs\n");
	rtrs_srv_close_path(path);
	return count;
}

static ssize_t hca_name_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	struct rtrs_srv_path *path = kobj_to_path(kobj);

	return sysfs_emit(buf, "%s\n", dev_name(&path->s.dev->ib_dev->dev));
}

static ssize_t hca_port_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	struct rtrs_srv_path *path = kobj_to_path(kobj);

	return sysfs_emit(buf, "%u\n", path->hca_port);
}

static ssize_t addr_show(char *buf, const struct sockaddr_storage *addr)
{
	int len = rtrs_sockaddr_to_str((const struct sockaddr *)addr, buf,
				       PAGE_SIZE - 1);

	if (len < 0)
		return len;
	return len + sysfs_emit_at(buf, len, "\n");
}

/* The path's source is the client, as the client names the path. */
static ssize_t src_addr_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	return addr_show(buf, &kobj_to_path(kobj)->s.dst_addr);
}

static ssize_t dst_addr_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	return addr_show(buf, &kobj_to_path(kobj)->s.src_addr);
}

static struct kobj_attribute disconnect_attr = __ATTR_RW_MODE(disconnect, 0644);
static struct kobj_attribute hca_name_attr = __ATTR_RO(hca_name);
static struct kobj_attribute hca_port_attr = __ATTR_RO(hca_port);
static struct kobj_attribute src_addr_attr = __ATTR_RO(src_addr);
static struct kobj_attribute dst_addr_attr = __ATTR_RO(dst_addr);

static struct attribute *rtrs_srv_path_attrs[] = {
	&disconnect_attr.attr,
	&hca_name_attr.attr,
	&hca_port_attr.attr,
	&src_addr_attr.attr,
	&dst_addr_attr.attr,
	NULL,
};

/*
 * stats/rdma: "<reads> <read bytes> <writes> <written bytes>", the bytes of
 * the user headers and the data, as Linux's RTRS counts them; "1" resets
 * it.  stats/ is a named group of the path's kobject, not a kobject of its
 * own: kobj is the path's.
 */
static ssize_t rdma_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	struct rtrs_srv_path *path = kobj_to_path(kobj);

	return sysfs_emit(buf, "%llu %llu %llu %llu\n",
			  atomic64_read(&path->stats_read_cnt),
			  atomic64_read(&path->stats_read_bytes),
			  atomic64_read(&path->stats_write_cnt),
			  atomic64_read(&path->stats_write_bytes));
}

/*
 * A stats file's write: "1" resets what @reset resets, nothing else.  An IO
 * counted meanwhile may be left half counted: these are statistics.
 */
static ssize_t rtrs_srv_stats_store(struct kobject *kobj,
				    struct kobj_attribute *attr,
				    const char *buf, size_t count,
				    void (*reset)(struct rtrs_srv_path *path))
{
	struct rtrs_srv_path *path = kobj_to_path(kobj);
	char file[32];

	snprintf(file, sizeof(file), "stats/%s", attr->attr.name);
	if (rtrs_sysfs_write_one(&path->s, kobject_name(kobj), file, buf))
		return -EINVAL;
	reset(path);
	return count;
}

static void rtrs_srv_stats_reset_rdma(struct rtrs_srv_path *path)
{
	atomic64_set(&path->stats_read_cnt, 0);
	atomic64_set(&path->stats_read_bytes, 0);
	atomic64_set(&path->stats_write_cnt, 0);
	atomic64_set(&path->stats_write_bytes, 0);
}

static ssize_t rdma_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t count)
{
	return rtrs_srv_stats_store(kobj, attr, buf, count,
				    rtrs_srv_stats_reset_rdma);
}

static struct kobj_attribute rdma_attr = __ATTR_RW_MODE(rdma, 0644);

/* stats/wr_counts: "<posted> <reaped>" (rtrs_wr_stats_show()); "1" resets. */
static ssize_t wr_counts_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return rtrs_wr_stats_show(&kobj_to_path(kobj)->s, buf);
}

static void rtrs_srv_stats_reset_wr(struct rtrs_srv_path *path)
{
	rtrs_wr_stats_reset(&path->s);
}

static ssize_t wr_counts_store(struct kobject *kobj,
			       struct kobj_attribute *attr, const char *buf,
			       size_t count)
{
	return rtrs_srv_stats_store(kobj, attr, buf, count,
				    rtrs_srv_stats_reset_wr);
}

static struct kobj_attribute wr_counts_attr = __ATTR_RW_MODE(wr_counts, 0644);

/*
 * stats/wc_completion: "<max> <reaped> <polls>", the most completions one
 * poll of the path's CQs reaped, the completions and the polls
 * (rtrs_wc_reaped() says what a poll is); "1" resets.
 */
static ssize_t wc_completion_show(struct kobject *kobj,
				  struct kobj_attribute *attr, char *buf)
{
	struct rtrs_wc_stats sum;

	rtrs_wc_stats_sum(&kobj_to_path(kobj)->s, &sum);
	return sysfs_emit(buf, "%u %llu %llu\n", sum.max, sum.reaped,
			  sum.polls);
}

static void rtrs_srv_stats_reset_wc(struct rtrs_srv_path *path)
{
	rtrs_wc_stats_reset(&path->s);
}

static ssize_t wc_completion_store(struct kobject *kobj,
				   struct kobj_attribute *attr,
				   const char *buf, size_t count)
{
	return rtrs_srv_stats_store(kobj, attr, buf, count,
				    rtrs_srv_stats_reset_wc);
}

static struct kobj_attribute wc_completion_attr =
	__ATTR_RW_MODE(wc_completion, 0644);

static struct attribute *rtrs_srv_stats_attrs[] = {
	&rdma_attr.attr,
	&wr_counts_attr.attr,
	&wc_completion_attr.attr,
	NULL,
};

static const struct attribute_group rtrs_srv_stats_group = {
	.name = "stats",
	.attrs = rtrs_srv_stats_attrs,
};

static const struct attribute_group rtrs_srv_path_group = {
	.attrs = rtrs_srv_path_attrs,
};

static const struct attribute_group *rtrs_srv_path_groups[] = {
	&rtrs_srv_path_group,
	&rtrs_srv_stats_group,
	NULL,
};

static void rtrs_srv_path_release(struct kobject *kobj)
{
	rtrs_srv_path_free(kobj_to_path(kobj));
}

const struct kobj_type rtrs_srv_path_ktype = {
	.sysfs_ops = &kobj_sysfs_ops,
	.release = rtrs_srv_path_release,
	.default_groups = rtrs_srv_path_groups,
};

/* The session's directory, made when its first path comes up. */
int rtrs_srv_sess_sysfs_add(struct rtrs_srv_sess *srv)
{
	int err = 0;

	mutex_lock(&srv->ctx->mutex);
	if (srv->dev_added)
		goto out;
	err = dev_set_name(&srv->dev, "%s", srv->sessname);
	if (!err)
		err = device_add(&srv->dev);
	if (err) {
		pr_err("%s: cannot add the session to sysfs: %d\n",
		       srv->sessname, err);
		goto out;
	}
	srv->paths_kobj = kobject_create_and_add("paths", &srv->dev.kobj);
	if (!srv->paths_kobj) {
		device_del(&srv->dev);
		err = -ENOMEM;
		goto out;
	}
	srv->dev_added = true;
	trace_rtrs_srv_sess_created(srv);
out:
	mutex_unlock(&srv->ctx->mutex);
	return err;
}

void rtrs_srv_sess_sysfs_del(struct rtrs_srv_sess *srv)
{
	if (!srv->dev_added)
		return;
	trace_rtrs_srv_sess_destroyed(srv);
	kobject_del(srv->paths_kobj);
	kobject_put(srv->paths_kobj);
	device_del(&srv->dev);
	srv->dev_added = false;
}

/**
 * rtrs_srv_path_name() - the name of a path's directory
 * @clt: the client's address
 * @srv: ours
 * @buf: where to print "<client address>@<server address>"
 * @len: size of @buf, RTRS_SRV_PATH_NAME_MAX
 *
 * Return: 0, or -EINVAL for an address it cannot print.
 */
int rtrs_srv_path_name(const struct sockaddr_storage *clt,
		       const struct sockaddr_storage *srv, char *buf,
		       size_t len)
{
	int n;

	n = rtrs_sockaddr_to_str((const struct sockaddr *)clt, buf, len);
	if (n < 0 || n + 1 >= len)
		return -EINVAL;
	buf[n++] = '@';
	return rtrs_sockaddr_to_str((const struct sockaddr *)srv, buf + n,
				    len - n) < 0 ? -EINVAL : 0;
}

int rtrs_srv_path_sysfs_add(struct rtrs_srv_path *path)
{
	char name[RTRS_SRV_PATH_NAME_MAX];
	int err;

	err = rtrs_srv_path_name(&path->s.dst_addr, &path->s.src_addr, name,
				 sizeof(name));
	if (err)
		return err;
	err = kobject_add(&path->kobj, path->srv->paths_kobj, "%s", name);
	if (err) {
		rtrs_path_err(&path->s, "cannot add the path to sysfs: %d\n",
			      err);
		return err;
	}
	path->kobj_added = true;
	return 0;
}

void rtrs_srv_path_sysfs_del(struct rtrs_srv_path *path)
{
	if (!path->kobj_added)
		return;
	kobject_del(&path->kobj);
	path->kobj_added = false;
}
