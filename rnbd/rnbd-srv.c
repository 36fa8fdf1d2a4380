// SPDX-License-Identifier: GPL-2.0-only
/*
 * RNBD server: exports local block devices to RNBD clients over RTRS.
 *
 * Each RTRS session of a client is an RNBD session.  Its messages come as
 * the user header of RTRS requests: SESS_INFO and OPEN are READs whose
 * data is our answer, CLOSE and the IO of READ and WRITE carry their
 * header, and the data of the IO.  Nothing in them is trusted.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/kdev_t.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "rnbd-srv.h"
#define CREATE_TRACE_POINTS
#include "rnbd-srv-trace.h"

static u16 rnbd_srv_port = RNBD_DEFAULT_PORT;
char rnbd_srv_dev_search_path[PATH_MAX] = "/";

static int rnbd_srv_set_port(const char *val, const struct kernel_param *kp)
{
	u16 port;

	if (kstrtou16(val, 0, &port) || !port) {
		pr_err_ratelimited("port_nr must be 1 to 65535, got '%s'\n", val);
		return -EINVAL;
	}
	*(u16 *)kp->arg = port;
	return 0;
}

static const struct kernel_param_ops rnbd_srv_port_ops = {
	.set = rnbd_srv_set_port,
	.get = param_get_ushort,
};

static int rnbd_srv_set_search_path(const char *val,
				    const struct kernel_param *kp)
{
	size_t len = strcspn(val, "\n");

	if (val[0] != '/' || len >= PATH_MAX) {
		pr_err_ratelimited("dev_search_path must be an absolute path shorter than %d characters\n",
				   PATH_MAX);
		return -EINVAL;
	}
	memcpy(rnbd_srv_dev_search_path, val, len);
	rnbd_srv_dev_search_path[len] = '\0';
	return 0;
}

static int rnbd_srv_get_search_path(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", rnbd_srv_dev_search_path);
}

static const struct kernel_param_ops rnbd_srv_search_path_ops = {
	.set = rnbd_srv_set_search_path,
	.get = rnbd_srv_get_search_path,
};

module_param_cb(port_nr, &rnbd_srv_port_ops, &rnbd_srv_port, 0444);
MODULE_PARM_DESC(port_nr, "The port RNBD clients connect to (default 1234)");
module_param_cb(dev_search_path, &rnbd_srv_search_path_ops, NULL, 0444);
MODULE_PARM_DESC(dev_search_path,
		 "Directory the clients' device paths are relative to; %SESSNAME% stands for the session's name (default /)");

static struct rtrs_srv_ctx *rnbd_srv_rtrs;
/*
 * Runs the force_closes of sysfs.  The close of a session, in RTRS's
 * WQ_MEM_RECLAIM work, waits for them: it is WQ_MEM_RECLAIM too.
 */
static struct workqueue_struct *rnbd_srv_wq;

/* Protects rnbd_srv_sessions. */
static DEFINE_MUTEX(rnbd_srv_sessions_mutex);
static LIST_HEAD(rnbd_srv_sessions);

/* Sessions */

static int rnbd_srv_sess_connected(struct rtrs_srv_sess *rtrs)
{
	struct rnbd_srv_session *sess;
	int err;

	sess = kzalloc(sizeof(*sess), GFP_KERNEL);
	if (!sess)
		return -ENOMEM;
	err = rtrs_srv_get_path_name(rtrs, sess->sessname,
				     sizeof(sess->sessname));
	if (err) {
		kfree(sess);
		return err;
	}
	sess->rtrs = rtrs;
	mutex_init(&sess->lock);
	mutex_init(&sess->open_mutex);
	xa_init_flags(&sess->sess_devs, XA_FLAGS_ALLOC);
	mutex_lock(&rnbd_srv_sessions_mutex);
	list_add(&sess->entry, &rnbd_srv_sessions);
	mutex_unlock(&rnbd_srv_sessions_mutex);
	rtrs_srv_set_sess_priv(rtrs, sess);
	rnbd_srv_info(sess, "session up\n");
	trace_create_sess(sess);
	return 0;
}

/*
 * Three can close a device: the client's CLOSE, force_close in sysfs and
 * the session going away.  Whoever takes it out of the session's map
 * closes it; the others find it gone.  @want, where given, is the device
 * the caller saw: its id may have been given to a new one since.
 */
static struct rnbd_srv_sess_dev *
rnbd_srv_take_sess_dev(struct rnbd_srv_session *sess, u32 device_id,
		       struct rnbd_srv_sess_dev *want)
{
	struct rnbd_srv_sess_dev *sess_dev;

	mutex_lock(&sess->lock);
	sess_dev = xa_load(&sess->sess_devs, device_id);
	if (sess_dev && (!want || sess_dev == want))
		xa_erase(&sess->sess_devs, device_id);
	else
		sess_dev = NULL;
	mutex_unlock(&sess->lock);
	return sess_dev;
}

/* Unmaps a device its caller took from its session; waits for its IO. */
static void rnbd_srv_close_sess_dev(struct rnbd_srv_sess_dev *sess_dev)
{
	percpu_ref_kill(&sess_dev->inflight);
	wait_for_completion(&sess_dev->inflight_done);
	rnbd_srv_info(sess_dev->sess, "device %s closed\n",
		      sess_dev->mapping_path);
	rnbd_srv_sess_dev_sysfs_del(sess_dev);
	rnbd_srv_release_sess_dev(sess_dev);
}

static void rnbd_srv_close_work(struct work_struct *work)
{
	rnbd_srv_close_sess_dev(container_of(work, struct rnbd_srv_sess_dev,
					     close_work));
}

/**
 * rnbd_srv_force_close() - unmap a device from its session, from sysfs
 * @sess_dev: the device
 *
 * The close removes the device's sysfs directory, which waits for the
 * writer of force_close to return: it runs in a work, which the session
 * waits for before it goes.  Context: process, a store of @sess_dev's
 * sysfs, which keeps it alive.
 */
void rnbd_srv_force_close(struct rnbd_srv_sess_dev *sess_dev)
{
	struct rnbd_srv_session *sess = sess_dev->sess;

	if (rnbd_srv_take_sess_dev(sess, sess_dev->device_id, sess_dev)) {
		rnbd_srv_info(sess, "force_close of %s\n",
			      sess_dev->mapping_path);
		INIT_WORK(&sess_dev->close_work, rnbd_srv_close_work);
		queue_work(rnbd_srv_wq, &sess_dev->close_work);
	}
}

static void rnbd_srv_sess_disconnected(struct rnbd_srv_session *sess)
{
	struct rnbd_srv_sess_dev *sess_dev;
	unsigned long id;

	trace_destroy_sess(sess);
	mutex_lock(&rnbd_srv_sessions_mutex);
	list_del(&sess->entry);
	mutex_unlock(&rnbd_srv_sessions_mutex);
	mutex_lock(&sess->lock);
	sess->closing = true;
	mutex_unlock(&sess->lock);
	xa_for_each(&sess->sess_devs, id, sess_dev) {
		sess_dev = rnbd_srv_take_sess_dev(sess, id, sess_dev);
		if (sess_dev)
			rnbd_srv_close_sess_dev(sess_dev);
	}
	/* The force_closes under way still use the session. */
	flush_workqueue(rnbd_srv_wq);
	xa_destroy(&sess->sess_devs);
	rnbd_srv_info(sess, "session closed\n");
	mutex_destroy(&sess->open_mutex);
	mutex_destroy(&sess->lock);
	kfree(sess);
}

static int rnbd_srv_link_ev(struct rtrs_srv_sess *rtrs,
			    enum rtrs_srv_link_ev ev, void *priv)
{
	switch (ev) {
	case RTRS_SRV_LINK_EV_CONNECTED:
		return rnbd_srv_sess_connected(rtrs);
	case RTRS_SRV_LINK_EV_DISCONNECTED:
		rnbd_srv_sess_disconnected(priv);
		return 0;
	}
	return -EINVAL;
}

/* Messages */

static int rnbd_srv_sess_info(struct rnbd_srv_session *sess, const void *usr,
			      size_t usrlen, void *data, size_t datalen)
{
	const struct rnbd_msg_sess_info *msg = usr;
	struct rnbd_msg_sess_info_rsp *rsp = data;

	if (usrlen < sizeof(*msg) || datalen < sizeof(*rsp)) {
		rnbd_srv_err_rl(sess, "SESS_INFO of %zu bytes for %zu\n", usrlen,
				datalen);
		return -EINVAL;
	}
	sess->ver = min_t(u8, msg->ver, RNBD_PROTO_VER_MAJOR);
	trace_process_msg_sess_info(sess, msg);
	/* All of @data goes back: nothing of an earlier request with it. */
	memset(data, 0, datalen);
	rsp->hdr.type = cpu_to_le16(RNBD_MSG_SESS_INFO_RSP);
	rsp->ver = sess->ver;
	return 0;
}

/*
 * An id for a device being opened, reserved: until the device is published
 * under it, a CLOSE or an IO of that id (any client can guess the next
 * one) finds nothing.
 */
static int rnbd_srv_reserve_id(struct rnbd_srv_session *sess, u32 *id)
{
	int err = -ECONNRESET;

	mutex_lock(&sess->lock);
	if (!sess->closing)
		err = xa_alloc_cyclic(&sess->sess_devs, id, NULL, xa_limit_32b,
				      &sess->next_id, GFP_KERNEL);
	mutex_unlock(&sess->lock);
	/* 1: the ids went round; the id is free all the same. */
	return err < 0 ? err : 0;
}

/* Its caller may not touch @sess_dev after this: a CLOSE may free it. */
static void rnbd_srv_publish_sess_dev(struct rnbd_srv_sess_dev *sess_dev)
{
	struct rnbd_srv_session *sess = sess_dev->sess;

	mutex_lock(&sess->lock);
	/* Into the reserved slot: allocates nothing, cannot fail. */
	xa_store(&sess->sess_devs, sess_dev->device_id, sess_dev, GFP_KERNEL);
	mutex_unlock(&sess->lock);
}

static int rnbd_srv_open(struct rnbd_srv_session *sess, const void *usr,
			 size_t usrlen, void *data, size_t datalen)
{
	struct rnbd_srv_sess_dev *sess_dev;
	struct rnbd_msg_open msg;
	int err;

	if (usrlen < sizeof(msg) ||
	    datalen < sizeof(struct rnbd_msg_open_rsp)) {
		rnbd_srv_err_rl(sess, "OPEN of %zu bytes for %zu\n", usrlen,
				datalen);
		return -EINVAL;
	}
	/* The answer goes where the message is: keep a copy. */
	memcpy(&msg, usr, sizeof(msg));
	trace_process_msg_open(sess, &msg);
	mutex_lock(&sess->open_mutex);
	err = rnbd_srv_open_sess_dev(sess, &msg, &sess_dev);
	if (err)
		goto out_unlock;
	err = rnbd_srv_reserve_id(sess, &sess_dev->device_id);
	if (err) {
		rnbd_srv_release_sess_dev(sess_dev);
		goto out_unlock;
	}
	rnbd_srv_sess_dev_sysfs_add(sess_dev);
	/* All of @data goes back: nothing of an earlier request with it. */
	memset(data, 0, datalen);
	rnbd_srv_fill_open_rsp(sess_dev, data);
	rnbd_srv_info(sess, "device %s opened %s as %u\n",
		      sess_dev->mapping_path,
		      rnbd_access_mode_str(sess_dev->access_mode),
		      sess_dev->device_id);
	rnbd_srv_publish_sess_dev(sess_dev);
out_unlock:
	mutex_unlock(&sess->open_mutex);
	return err;
}

/* The device of an id, with a reference of its IO in flight. */
static struct rnbd_srv_sess_dev *
rnbd_srv_get_sess_dev(struct rnbd_srv_session *sess, u32 device_id)
{
	struct rnbd_srv_sess_dev *sess_dev;

	rcu_read_lock();
	sess_dev = xa_load(&sess->sess_devs, device_id);
	if (sess_dev && !percpu_ref_tryget_live(&sess_dev->inflight))
		sess_dev = NULL;
	rcu_read_unlock();
	return sess_dev;
}

static int rnbd_srv_close(struct rnbd_srv_session *sess, const void *usr,
			  size_t usrlen)
{
	const struct rnbd_msg_close *msg = usr;
	struct rnbd_srv_sess_dev *sess_dev;

	if (usrlen < sizeof(*msg))
		return -EINVAL;
	trace_process_msg_close(sess, msg);
	sess_dev = rnbd_srv_take_sess_dev(sess, le32_to_cpu(msg->device_id),
					  NULL);
	if (!sess_dev) {
		rnbd_srv_err_rl(sess, "CLOSE of unknown device %u\n",
				le32_to_cpu(msg->device_id));
		return -EINVAL;
	}
	rnbd_srv_close_sess_dev(sess_dev);
	return 0;
}

static int rnbd_srv_io(struct rnbd_srv_session *sess, struct rtrs_srv_op *id,
		       const void *usr, size_t usrlen, void *data,
		       size_t datalen)
{
	struct rnbd_srv_sess_dev *sess_dev;
	struct rnbd_msg_io msg = {};
	int err;

	if (usrlen < offsetofend(struct rnbd_msg_io, prio))
		return -EINVAL;
	/* A READ's data overwrites the header in the chunk: keep a copy. */
	memcpy(&msg, usr, min(usrlen, sizeof(msg)));
	trace_process_rdma(sess, &msg, datalen, usrlen);
	sess_dev = rnbd_srv_get_sess_dev(sess, le32_to_cpu(msg.device_id));
	if (!sess_dev) {
		rnbd_srv_err_rl(sess, "IO on unknown device %u\n",
				le32_to_cpu(msg.device_id));
		return -EINVAL;
	}
	err = rnbd_srv_submit_io(sess_dev, &msg, id, data, datalen);
	if (err) {
		rnbd_srv_err_rl(sess, "IO %#x on %s refused: %d\n",
				le32_to_cpu(msg.rw), sess_dev->mapping_path,
				err);
		percpu_ref_put(&sess_dev->inflight);
	}
	return err;
}

/* A request of a client; answered now, or by the IO it starts. */
static int rnbd_srv_rdma_ev(void *priv, struct rtrs_srv_op *id, void *data,
			    size_t datalen, const void *usr, size_t usrlen)
{
	struct rnbd_srv_session *sess = priv;
	const struct rnbd_msg_hdr *hdr = usr;
	int err;

	if (!sess || usrlen < sizeof(*hdr))
		return -EINVAL;
	switch (le16_to_cpu(hdr->type)) {
	case RNBD_MSG_IO:
		return rnbd_srv_io(sess, id, usr, usrlen, data, datalen);
	case RNBD_MSG_SESS_INFO:
		err = rnbd_srv_sess_info(sess, usr, usrlen, data, datalen);
		break;
	case RNBD_MSG_OPEN:
		err = rnbd_srv_open(sess, usr, usrlen, data, datalen);
		break;
	case RNBD_MSG_CLOSE:
		err = rnbd_srv_close(sess, usr, usrlen);
		break;
	default:
		rnbd_srv_err_rl(sess, "message of unknown type %u\n",
				le16_to_cpu(hdr->type));
		err = -EINVAL;
		break;
	}
	if (!err)
		rtrs_srv_resp_rdma(id, 0);
	return err;
}

static int rnbd_srv_path_up(struct rtrs_srv_sess *rtrs,
			    const struct sockaddr *peer, void *priv)
{
	/* Not ours yet, while its first path announces it: nothing open. */
	if (!priv)
		return 0;
	return rnbd_srv_check_new_path(priv, peer);
}

static const struct rtrs_srv_ops rnbd_srv_ops = {
	.rdma_ev = rnbd_srv_rdma_ev,
	.link_ev = rnbd_srv_link_ev,
	.path_up = rnbd_srv_path_up,
};

static int __init rnbd_srv_init(void)
{
	int err;

	rnbd_srv_wq = alloc_workqueue("rnbd_srv_wq", WQ_MEM_RECLAIM, 0);
	if (!rnbd_srv_wq)
		return -ENOMEM;
	err = rnbd_srv_dev_init();
	if (err)
		goto out_destroy_wq;
	err = rnbd_srv_sysfs_init();
	if (err)
		goto out_dev_exit;
	rnbd_srv_rtrs = rtrs_srv_open(&rnbd_srv_ops, rnbd_srv_port);
	if (IS_ERR(rnbd_srv_rtrs)) {
		err = PTR_ERR(rnbd_srv_rtrs);
		goto out_sysfs_exit;
	}
	pr_info("listening on port %u, devices under %s\n", rnbd_srv_port,
		rnbd_srv_dev_search_path);
	return 0;

out_sysfs_exit:
	rnbd_srv_sysfs_exit();
	rnbd_srv_rules_exit();
out_dev_exit:
	rnbd_srv_dev_exit();
out_destroy_wq:
	destroy_workqueue(rnbd_srv_wq);
	return err;
}

static void __exit rnbd_srv_exit(void)
{
	rtrs_srv_close(rnbd_srv_rtrs);
	WARN_ON(!list_empty(&rnbd_srv_sessions));
	rnbd_srv_sysfs_exit();
	rnbd_srv_rules_exit();
	rnbd_srv_dev_exit();
	destroy_workqueue(rnbd_srv_wq);
}

module_init(rnbd_srv_init);
module_exit(rnbd_srv_exit);

MODULE_DESCRIPTION("RDMA Network Block Device (RNBD) server");
MODULE_LICENSE("GPL");
