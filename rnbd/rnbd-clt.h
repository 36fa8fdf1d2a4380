/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RNBD client: what its files share (rnbd-clt.c, rnbd-clt-sysfs.c).
 */
#ifndef RNBD_CLT_H
#define RNBD_CLT_H

#include <linux/blk-mq.h>
#include <linux/kobject.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/socket.h>

#include "rnbd-proto.h"
#include "rtrs.h"

/* At most so many path= in one map_device. */
#define RNBD_CLT_MAX_PATHS	6
/* Bytes of the text of one path=. */
#define RNBD_CLT_PATH_LEN	128

/**
 * struct rnbd_clt_map_opts - what map_device was told
 * @sessname: the session's name
 * @pathname: the device's path on the server
 * @path_str: the text of each path=
 * @path_cnt: number of path=
 * @port: the server's port
 * @access_mode: an enum rnbd_access_mode
 * @nr_poll_queues: polled queues asked for: none, the only choice yet
 * @addrs: source and destination of each path
 * @paths: @path_cnt paths pointing into @addrs
 */
struct rnbd_clt_map_opts {
	char sessname[NAME_MAX];
	char pathname[NAME_MAX];
	char path_str[RNBD_CLT_MAX_PATHS][RNBD_CLT_PATH_LEN];
	size_t path_cnt;
	u16 port;
	enum rnbd_access_mode access_mode;
	u32 nr_poll_queues;
	struct sockaddr_storage addrs[2 * RNBD_CLT_MAX_PATHS];
	struct rtrs_addr paths[RNBD_CLT_MAX_PATHS];
};

/**
 * struct rnbd_clt_session - an RTRS session and the devices mapped over it
 * @entry: in the list of sessions
 * @kref: one per device, and one while a device is being mapped
 * @sessname: its name
 * @rtrs: the transport's session
 * @tag_set: shared by its devices' queues
 * @queue_depth: requests in flight, the transport's permits
 * @max_io_size: largest IO in bytes
 * @max_segments: largest number of segments of an IO
 * @ver: the protocol's major version both sides speak
 * @devs: its devices
 *
 * The list of sessions and @devs are protected by rnbd_clt_mutex.
 */
struct rnbd_clt_session {
	struct list_head entry;
	struct kref kref;
	char sessname[NAME_MAX];
	struct rtrs_clt_sess *rtrs;
	struct blk_mq_tag_set tag_set;
	u32 queue_depth;
	u32 max_io_size;
	u32 max_segments;
	u8 ver;
	struct list_head devs;
};

/*
 * CLOSED: a remap closed the device on the server and could not open it
 * again; IO fails until a remap succeeds.
 */
enum rnbd_clt_dev_state {
	RNBD_CLT_DEV_MAPPING,
	RNBD_CLT_DEV_MAPPED,
	RNBD_CLT_DEV_CLOSED,
	RNBD_CLT_DEV_UNMAPPING,
};

/**
 * struct rnbd_clt_dev - a mapped device, /dev/rnbd<index>
 * @sess: its session
 * @entry: in @sess's devices
 * @kobj: /sys/block/rnbd<index>/rnbd; its release frees the device
 * @link_name: its link in /sys/devices/virtual/rnbd-client/ctl/devices/
 * @gd: the disk
 * @index: N of rnbdN
 * @device_id: the server's id of the device
 * @nsectors: the device's size in sectors, as the server last said
 * @pathname: the device's path on the server
 * @access_mode: an enum rnbd_access_mode
 * @nr_poll_queues: what map_device asked for
 * @lock: serialises remap and resize; protects @state
 * @state: an enum rnbd_clt_dev_state
 * @new_flags: the server takes RNBD_F_PREFLUSH and RNBD_F_NOUNMAP (it
 *	       offers WRITE_ZEROES, which came in the same version)
 *
 * @device_id, @nsectors and @new_flags change under @lock with the queue
 * frozen, so that the IO path reads them without a lock.
 */
struct rnbd_clt_dev {
	struct rnbd_clt_session *sess;
	struct list_head entry;
	struct kobject kobj;
	char *link_name;
	struct gendisk *gd;
	int index;
	u32 device_id;
	u64 nsectors;
	char pathname[NAME_MAX];
	enum rnbd_access_mode access_mode;
	u32 nr_poll_queues;
	struct mutex lock;	/* protects state; serialises remap, resize */
	enum rnbd_clt_dev_state state;
	bool new_flags;
};

const char *rnbd_clt_dev_state_str(enum rnbd_clt_dev_state state);
int rnbd_clt_map(struct rnbd_clt_map_opts *opts);
int rnbd_clt_unmap(struct rnbd_clt_dev *dev, bool force,
		   const struct attribute *self);
void rnbd_clt_free_dev(struct rnbd_clt_dev *dev);
int rnbd_clt_remap(struct rnbd_clt_dev *dev);
int rnbd_clt_resize(struct rnbd_clt_dev *dev, u64 nsectors);

/* rnbd-clt-sysfs.c */
int rnbd_clt_sysfs_init(void);
void rnbd_clt_sysfs_exit(void);
void rnbd_clt_sysfs_init_dev(struct rnbd_clt_dev *dev);
int rnbd_clt_sysfs_add_dev(struct rnbd_clt_dev *dev);
bool rnbd_clt_sysfs_link_name_eq(const char *a, const char *b);
void rnbd_clt_sysfs_del_dev(struct rnbd_clt_dev *dev);

#endif /* RNBD_CLT_H */
