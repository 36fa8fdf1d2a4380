/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RNBD server: what the server side's files share.
 */
#ifndef RNBD_SRV_H
#define RNBD_SRV_H

#include <linux/kobject.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/percpu-refcount.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <rnbd-compat.h>

#include "rnbd-proto.h"
#include "rtrs.h"

#define rnbd_srv_err(sess, fmt, ...)					\
	pr_err("%s: " fmt, (sess)->sessname, ##__VA_ARGS__)
#define rnbd_srv_err_rl(sess, fmt, ...)					\
	pr_err_ratelimited("%s: " fmt, (sess)->sessname, ##__VA_ARGS__)
#define rnbd_srv_info(sess, fmt, ...)					\
	pr_info("%s: " fmt, (sess)->sessname, ##__VA_ARGS__)

/**
 * struct rnbd_srv_session - an RTRS session and the devices it opened
 * @entry: in the global list of sessions
 * @rtrs: the RTRS session
 * @sessname: its name
 * @ver: the RNBD major version agreed in SESS_INFO
 * @lock: protects @sess_devs' membership changes and @closing
 * @sess_devs: device id -> struct rnbd_srv_sess_dev; lookups under RCU
 * @next_id: where the search for a free id starts, under @lock: ids go
 *	     round, so that a client that still uses the id of a device
 *	     the server closed (force_close) does not reach the next one
 * @closing: the session is going away: no more OPENs
 * @open_mutex: serialises OPENs with the checks of new paths against the
 *		access rules of the devices open, so that neither misses
 *		the other
 */
struct rnbd_srv_session {
	struct list_head entry;
	struct rtrs_srv_sess *rtrs;
	char sessname[NAME_MAX];
	u8 ver;
	struct mutex lock;	/* protects sess_devs changes, closing */
	struct xarray sess_devs;
	u32 next_id;
	bool closing;
	struct mutex open_mutex;	/* serialises OPENs and path checks */
};

/**
 * struct rnbd_srv_dev - an exported block device, shared by the sessions
 *			 that opened it
 * @entry: in the global list of devices
 * @name: its path as mapped, relative to dev_search_path
 * @kref: one per struct rnbd_srv_sess_dev
 * @sess_devs: of struct rnbd_srv_sess_dev, under rnbd_srv_devs_mutex
 * @write_cnt: sessions with it open for writing, under rnbd_srv_devs_mutex
 * @kobj: /sys/class/rnbd-server/ctl/devices/<name>
 * @sessions_kobj: its sessions/ directory
 */
struct rnbd_srv_dev {
	struct list_head entry;
	char name[NAME_MAX];
	struct kref kref;
	struct list_head sess_devs;
	int write_cnt;
	struct kobject kobj;
	struct kobject *sessions_kobj;
};

/**
 * struct rnbd_srv_sess_dev - a device as one session opened it
 * @sess: the session
 * @dev: the device
 * @dev_entry: in @dev's @sess_devs
 * @bdev: the open block device
 * @device_id: its id on the wire
 * @access_mode: an enum rnbd_access_mode
 * @mapping_path: the path the client asked for
 * @inflight: one per IO in flight; killed on close
 * @inflight_done: completed when @inflight dropped to zero after the kill
 * @kobj: /sys/class/rnbd-server/ctl/devices/<dev>/sessions/<sess>
 * @close_work: closes it on a force_close
 * @rcu: frees the structure after the RCU readers of @sess->sess_devs
 */
struct rnbd_srv_sess_dev {
	struct rnbd_srv_session *sess;
	struct rnbd_srv_dev *dev;
	struct list_head dev_entry;
	struct rnbd_bdev bdev;
	u32 device_id;
	enum rnbd_access_mode access_mode;
	char mapping_path[NAME_MAX];
	struct percpu_ref inflight;
	struct completion inflight_done;
	struct kobject kobj;
	struct work_struct close_work;
	struct rcu_head rcu;
};

extern char rnbd_srv_dev_search_path[];

/* rnbd-srv.c */
void rnbd_srv_force_close(struct rnbd_srv_sess_dev *sess_dev);

/* rnbd-srv-dev.c */
bool rnbd_srv_path_escapes(const char *name);
void rnbd_srv_squeeze_slashes(char *path);
int rnbd_srv_check_new_path(struct rnbd_srv_session *sess,
			    const struct sockaddr *peer);
int rnbd_srv_open_sess_dev(struct rnbd_srv_session *sess,
			   const struct rnbd_msg_open *msg,
			   struct rnbd_srv_sess_dev **out);
void rnbd_srv_release_sess_dev(struct rnbd_srv_sess_dev *sess_dev);
void rnbd_srv_fill_open_rsp(struct rnbd_srv_sess_dev *sess_dev,
			    struct rnbd_msg_open_rsp *rsp);
int rnbd_srv_submit_io(struct rnbd_srv_sess_dev *sess_dev,
		       const struct rnbd_msg_io *msg, struct rtrs_srv_op *id,
		       void *data, size_t datalen);
int rnbd_srv_dev_init(void);
void rnbd_srv_dev_exit(void);

/* rnbd-srv-access.c */
int rnbd_srv_rule_add(const char *buf);
int rnbd_srv_rule_del(const char *buf);
ssize_t rnbd_srv_rules_show(char *buf);
void rnbd_srv_rules_exit(void);
int rnbd_srv_access_check(struct rnbd_srv_session *sess, const char *path,
			  enum rnbd_access_mode mode, bool *excl);
int rnbd_srv_access_check_peer(struct rnbd_srv_session *sess,
			       const struct sockaddr *peer, const char *path,
			       enum rnbd_access_mode mode);

/* rnbd-srv-sysfs.c */
int rnbd_srv_sysfs_init(void);
void rnbd_srv_sysfs_exit(void);
int rnbd_srv_dev_sysfs_add(struct rnbd_srv_dev *dev,
			   struct block_device *bdev);
void rnbd_srv_dev_sysfs_del(struct rnbd_srv_dev *dev);
int rnbd_srv_sess_dev_sysfs_add(struct rnbd_srv_sess_dev *sess_dev);
void rnbd_srv_sess_dev_sysfs_del(struct rnbd_srv_sess_dev *sess_dev);

#endif /* RNBD_SRV_H */
