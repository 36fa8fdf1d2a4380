// SPDX-License-Identifier: GPL-2.0-only
/*
 * RTRS server: what clients may take of it.
 *
 * Anyone who reaches the port may connect, so every resource a connection
 * request makes the server take has a bound: sessions, paths per session,
 * connections per path, paths not up yet and how long they may stay so,
 * and the memory of all sessions' chunks.  Each is a module parameter the
 * admin may change at run time; a change holds for the requests after it.
 * A request past a limit is rejected with the errno of that limit, and
 * one rate-limited line names the limit and the client's address.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sysfs.h>

#include "rtrs-srv.h"

/**
 * struct rtrs_srv_limit - a limit and the values it may take
 * @val: the limit, read without a lock
 * @min: its smallest value
 * @max: its largest value
 */
struct rtrs_srv_limit {
	unsigned int val;
	unsigned int min;
	unsigned int max;
};

static int rtrs_srv_limit_set(const char *s, const struct kernel_param *kp)
{
	struct rtrs_srv_limit *l = kp->arg;
	unsigned int v;

	if (kstrtouint(s, 0, &v) || v < l->min || v > l->max) {
		pr_err_ratelimited("%s must be %u to %u, got '%.*s'\n",
				   kp->name, l->min, l->max,
				   (int)strcspn(s, "\n"), s);
		return -EINVAL;
	}
	WRITE_ONCE(l->val, v);
	return 0;
}

static int rtrs_srv_limit_get(char *buf, const struct kernel_param *kp)
{
	const struct rtrs_srv_limit *l = kp->arg;

	return sysfs_emit(buf, "%u\n", READ_ONCE(l->val));
}

static const struct kernel_param_ops rtrs_srv_limit_ops = {
	.set = rtrs_srv_limit_set,
	.get = rtrs_srv_limit_get,
};

static struct rtrs_srv_limit rtrs_srv_max_sessions = {
	.val = 1024, .min = 1, .max = 65536,
};
module_param_cb(max_sessions, &rtrs_srv_limit_ops, &rtrs_srv_max_sessions, 0644);
MODULE_PARM_DESC(max_sessions,
		 "Sessions at most, those not up yet included (1-65536, default 1024)");

static struct rtrs_srv_limit rtrs_srv_max_paths_per_session = {
	.val = RTRS_MAX_PATHS, .min = 1, .max = RTRS_MAX_PATHS,
};
module_param_cb(max_paths_per_session, &rtrs_srv_limit_ops, &rtrs_srv_max_paths_per_session, 0644);
MODULE_PARM_DESC(max_paths_per_session,
		 "Paths of one session at most (1-128, default 128)");

/* An admin connection, and one per CPU and poll queue of a 512-CPU client. */
static struct rtrs_srv_limit rtrs_srv_max_cons_per_path = {
	.val = 513, .min = 2, .max = RTRS_SRV_MAX_CONS,
};
module_param_cb(max_cons_per_path, &rtrs_srv_limit_ops, &rtrs_srv_max_cons_per_path, 0644);
MODULE_PARM_DESC(max_cons_per_path,
		 "Connections of one path at most (2-4096, default 513)");

static struct rtrs_srv_limit rtrs_srv_max_half_open_paths = {
	.val = 64, .min = 1, .max = 65536,
};
module_param_cb(max_half_open_paths, &rtrs_srv_limit_ops, &rtrs_srv_max_half_open_paths, 0644);
MODULE_PARM_DESC(max_half_open_paths,
		 "Paths whose connections came but which are not up yet, of all sessions, at most (1-65536, default 64)");

static struct rtrs_srv_limit rtrs_srv_half_open_timeout_ms = {
	.val = 30000, .min = 1000, .max = 600000,
};
module_param_cb(half_open_timeout_ms, &rtrs_srv_limit_ops, &rtrs_srv_half_open_timeout_ms, 0644);
MODULE_PARM_DESC(half_open_timeout_ms,
		 "How long a client may take from a path's first connection to asking for its chunks (INFO_REQ), in ms (1000-600000, default 30000)");

/* Set at load when not given: half of the memory. */
static struct rtrs_srv_limit rtrs_srv_max_chunk_memory_mb = {
	.val = 0, .min = 1, .max = UINT_MAX,
};
module_param_cb(max_chunk_memory_mb, &rtrs_srv_limit_ops, &rtrs_srv_max_chunk_memory_mb, 0644);
MODULE_PARM_DESC(max_chunk_memory_mb,
		 "Memory of the chunks of all sessions at most, in MiB (default half of the memory)");

/* The chunks of a session, reserved when it is made. */
static u64 rtrs_srv_sess_bytes(void)
{
	return (u64)rtrs_srv_queue_depth * rtrs_srv_chunk_size;
}

void rtrs_srv_limits_init(void)
{
	if (!rtrs_srv_max_chunk_memory_mb.val)
		rtrs_srv_max_chunk_memory_mb.val =
			max(1UL, totalram_pages() >> (21 - PAGE_SHIFT));
}

unsigned long rtrs_srv_half_open_timeout(void)
{
	return msecs_to_jiffies(READ_ONCE(rtrs_srv_half_open_timeout_ms.val));
}

/**
 * rtrs_srv_admit_cons() - may a path have this many connections?
 * @cid_num: the connections its requests announce
 *
 * Return: 0, or -EINVAL past max_cons_per_path.
 */
int rtrs_srv_admit_cons(unsigned int cid_num)
{
	unsigned int max = READ_ONCE(rtrs_srv_max_cons_per_path.val);

	if (cid_num <= max)
		return 0;
	pr_err_ratelimited("connection request for a path of %u connections: max_cons_per_path is %u\n",
			   cid_num, max);
	return -EINVAL;
}

/**
 * rtrs_srv_admit_sess() - may a client open a new session?
 * @ctx: where it connects, its mutex held
 * @cm_id: its first connection request
 *
 * On success the session's chunks are reserved in @ctx, until
 * rtrs_srv_release_sess() when it leaves @ctx's list.
 *
 * Return: 0, -EUSERS past max_sessions, -ENOMEM past max_chunk_memory_mb.
 */
int rtrs_srv_admit_sess(struct rtrs_srv_ctx *ctx, struct rdma_cm_id *cm_id)
{
	const struct sockaddr *from = (void *)&cm_id->route.addr.dst_addr;
	unsigned int max = READ_ONCE(rtrs_srv_max_sessions.val), n = 0;
	u64 mem = (u64)READ_ONCE(rtrs_srv_max_chunk_memory_mb.val) << 20;
	struct rtrs_srv_sess *srv;

	lockdep_assert_held(&ctx->mutex);
	list_for_each_entry(srv, &ctx->sess_list, entry)
		n++;
	if (n >= max) {
		pr_err_ratelimited("%pISp: a new session past max_sessions %u\n",
				   from, max);
		return -EUSERS;
	}
	if (ctx->chunk_bytes + rtrs_srv_sess_bytes() > mem) {
		pr_err_ratelimited("%pISp: a new session's chunks past max_chunk_memory_mb %llu\n",
				   from, mem >> 20);
		return -ENOMEM;
	}
	ctx->chunk_bytes += rtrs_srv_sess_bytes();
	return 0;
}

/* A session admitted left @ctx: its chunks are no longer reserved. */
void rtrs_srv_release_sess(struct rtrs_srv_ctx *ctx)
{
	lockdep_assert_held(&ctx->mutex);
	ctx->chunk_bytes -= rtrs_srv_sess_bytes();
}

/* Paths of the context not up yet. */
static unsigned int rtrs_srv_half_open(struct rtrs_srv_ctx *ctx)
{
	struct rtrs_srv_sess *srv;
	struct rtrs_srv_path *path;
	unsigned int n = 0;

	list_for_each_entry(srv, &ctx->sess_list, entry)
		list_for_each_entry(path, &srv->paths, entry)
			n += atomic_read(&path->state) == RTRS_SRV_CONNECTING;
	return n;
}

/**
 * rtrs_srv_admit_path() - may a session have a new path?
 * @srv: the session, its context's mutex held
 * @cm_id: the path's first connection request
 *
 * Return: 0, -EMLINK past max_paths_per_session, -EBUSY past
 * max_half_open_paths.
 */
int rtrs_srv_admit_path(struct rtrs_srv_sess *srv, struct rdma_cm_id *cm_id)
{
	const struct sockaddr *from = (void *)&cm_id->route.addr.dst_addr;
	unsigned int paths = READ_ONCE(rtrs_srv_max_paths_per_session.val);
	unsigned int half_open = READ_ONCE(rtrs_srv_max_half_open_paths.val);
	struct rtrs_srv_path *path;
	unsigned int n = 0;

	lockdep_assert_held(&srv->ctx->mutex);
	list_for_each_entry(path, &srv->paths, entry)
		n++;
	if (n >= paths) {
		pr_err_ratelimited("%pISp: a new path of a session past max_paths_per_session %u\n",
				   from, paths);
		return -EMLINK;
	}
	if (rtrs_srv_half_open(srv->ctx) >= half_open) {
		pr_err_ratelimited("%pISp: a new path past max_half_open_paths %u\n",
				   from, half_open);
		return -EBUSY;
	}
	return 0;
}
