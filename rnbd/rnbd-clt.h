/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RNBD client: what its files share (rnbd-clt.c, rnbd-clt-io.c,
 * rnbd-clt-sysfs.c).
 */
#ifndef RNBD_CLT_H
#define RNBD_CLT_H

#include <linux/blk-mq.h>
#include <linux/kobject.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include <rnbd-compat.h>

#include "rnbd-proto.h"
#include "rtrs.h"

/* At most so many path= in one map_device. */
#define RNBD_CLT_MAX_PATHS	6

/*
 * A request unanswered this long is overdue: RTRS reaps its polled queue
 * or closes its path, which sends it again on another.  The block layer's
 * default, as Linux's client has it.
 */
#define RNBD_CLT_IO_TIMEOUT	(30 * HZ)

/**
 * struct rnbd_clt_map_opts - what map_device was told
 * @sessname: the session's name
 * @pathname: the device's path on the server
 * @path_cnt: number of path=
 * @port: the server's port
 * @access_mode: an enum rnbd_access_mode
 * @nr_poll_queues: polled queues asked for
 * @addrs: source and destination of each path
 * @paths: @path_cnt paths pointing into @addrs
 */
struct rnbd_clt_map_opts {
	char sessname[NAME_MAX];
	char pathname[NAME_MAX];
	size_t path_cnt;
	u16 port;
	enum rnbd_access_mode access_mode;
	u32 nr_poll_queues;
	struct sockaddr_storage addrs[2 * RNBD_CLT_MAX_PATHS];
	struct rtrs_addr paths[RNBD_CLT_MAX_PATHS];
};

/*
 * The state of a session, changed only by rnbd_clt_sess_change_state()
 * under its @ev_lock, which allows these transitions:
 *
 *   LIVE ------> WAITING ------> FAILING
 *    ^            ^   |             |
 *    |            |   v             |
 *    +-------- REOPENING <----------+
 *
 *   and from every state but itself: CLOSING.
 *
 * LIVE: a path; the devices opened in the session's @epoch take IO.
 * WAITING: RTRS lost the last path: the ids of the devices are void, their
 *	IO waits for reconnect_timeout at most.
 * FAILING: no path for reconnect_timeout: their IO fails.
 * REOPENING: a path again: the link work opens the devices again, then the
 *	session is LIVE, unless it lost its path meanwhile.
 * CLOSING: the session is being released: link events queue no work, the
 *	link and fail works do nothing.
 */
enum rnbd_clt_sess_state {
	RNBD_CLT_SESS_LIVE,
	RNBD_CLT_SESS_WAITING,
	RNBD_CLT_SESS_FAILING,
	RNBD_CLT_SESS_REOPENING,
	RNBD_CLT_SESS_CLOSING,
};

/**
 * struct rnbd_clt_session - an RTRS session and the devices mapped over it
 * @entry: in the list of sessions
 * @kref: one per device, and one while a device is being mapped
 * @sessname: its name
 * @rtrs: the transport's session
 * @tag_set: shared by its devices' queues
 * @nr_poll_queues: hardware queues of @tag_set that are polled, after one
 *		    per CPU; a device mapped on the session asks for as many
 * @queue_depth: requests in flight, the transport's IO permits: the tags
 *		 of @tag_set, shared by all its hardware queues
 * @max_io_size: largest IO in bytes
 * @max_segments: largest number of segments of an IO
 * @ver: the protocol's major version both sides speak
 * @lock: see below
 * @devs: its devices
 * @ev_lock: see below
 * @state: an enum rnbd_clt_sess_state
 * @epoch: how many times the session lost its last path
 * @wait_sec: how long IO waits in the last loss, reconnect_timeout then
 * @fail_deadline: when IO starts to fail in that loss, in jiffies
 * @link_work: parks the devices in WAITING, opens them again in REOPENING
 * @fail_work: FAILING once the session waited @wait_sec
 *
 * The devices of a session are opened on the server in one epoch of it,
 * the span between two losses of its last path: the server closes a
 * session's devices when its last path goes, so their ids are void in the
 * next epoch (struct rnbd_clt_dev's @open_epoch).
 *
 * Locks, outermost first:
 * rnbd_clt_mutex (rnbd-clt.c) protects the list of sessions and
 * serialises map and unmap; a session is released under it.
 * A disk's open_mutex: a normal unmap holds it while it looks at the
 * disk's openers and marks the device unmapped.
 * @lock protects the @parked of each device (the link and fail works
 * quiesce and unquiesce the queues under it); it and rnbd_clt_mutex both
 * protect @devs: map and unmap change it holding both, others read it
 * under either.  The link and fail works run under @lock, never
 * rnbd_clt_mutex, so that the release cancels them under rnbd_clt_mutex.
 * A device's lock (struct rnbd_clt_dev) serialises its remap, resize and
 * reopen.
 * @ev_lock, a spinlock, protects @state, @epoch, @wait_sec and
 * @fail_deadline, and orders the queueing of the works with the session's
 * release; the IO path reads @state and @epoch without it.
 * rnbd_clt_link_ev() takes no other lock: RTRS calls it in its own work,
 * which rtrs_clt_close() waits for.
 *
 * The IO of a session without a path drains only through the link and
 * fail works: nothing waits for a device's IO (a queue freeze, a
 * del_gendisk()) holding @lock or a device's lock.  A remap freezes the
 * queue before it takes the device's lock; a map waits for its partition
 * scan under rnbd_clt_mutex only.
 */
struct rnbd_clt_session {
	struct list_head entry;
	struct kref kref;
	char sessname[NAME_MAX];
	struct rtrs_clt_sess *rtrs;
	struct blk_mq_tag_set tag_set;
	u32 nr_poll_queues;
	u32 queue_depth;
	u32 max_io_size;
	u32 max_segments;
	u8 ver;

	struct mutex lock;	/* see above */
	struct list_head devs;

	spinlock_t ev_lock;	/* see above */
	enum rnbd_clt_sess_state state;
	u32 epoch;
	unsigned int wait_sec;
	unsigned long fail_deadline;

	struct delayed_work link_work;
	struct delayed_work fail_work;
};

/*
 * The state of a device, changed only by rnbd_clt_dev_change_state() under
 * its @lock, which allows these transitions:
 *
 *   MAPPING ---> MAPPED <---> CLOSED
 *                  |            |
 *                  +--> UNMAPPING <--+
 *
 *   and MAPPED and CLOSED to themselves (a remap, a reconnect).
 *
 * MAPPING: being opened on the server and its disk added.
 * MAPPED: open on the server in the device's open_epoch; while that is not
 * the session's epoch any more, its IO waits for the session's reconnect,
 * or fails once the session waited reconnect_timeout.
 * CLOSED: a remap or reconnect closed the device on the server and could
 * not open it again; IO fails until a remap or reconnect opens it.
 * UNMAPPING: its IO fails, the link work leaves it alone.
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
 * @lock: serialises remap, resize and reopen; protects @state, @lim,
 *	  @new_lim and @lim_pending (the IO path reads @state without it)
 * @state: an enum rnbd_clt_dev_state
 * @new_flags: the server takes RNBD_F_PREFLUSH and RNBD_F_NOUNMAP (it
 *	       offers WRITE_ZEROES, which came in the same version)
 * @open_epoch: the session's epoch @device_id was given in
 * @parked: the session's link work quiesced the queue (@sess's @lock)
 * @lim: the queue limits the disk has
 * @new_lim: the server's limits at a reconnect, for @limits_work
 * @lim_pending: @new_lim is to be applied
 * @limits_work: applies @new_lim under a frozen queue
 *
 * @device_id, @nsectors, @new_flags and @open_epoch change under @lock
 * with the queue frozen or parked, so that the IO path reads them without
 * a lock.
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
	struct mutex lock;	/* see above */
	enum rnbd_clt_dev_state state;
	bool new_flags;
	u32 open_epoch;
	bool parked;
	struct rnbd_clt_limits lim;
	struct rnbd_clt_limits new_lim;
	bool lim_pending;
	struct work_struct limits_work;
};

/* The states, read without the locks they change under. */
static inline enum rnbd_clt_sess_state
rnbd_clt_sess_state(const struct rnbd_clt_session *sess)
{
	return READ_ONCE(sess->state);
}

static inline enum rnbd_clt_dev_state
rnbd_clt_dev_state(const struct rnbd_clt_dev *dev)
{
	return READ_ONCE(dev->state);
}

/* Was @dev opened on the server in the session's current epoch? */
static inline bool rnbd_clt_dev_id_valid(const struct rnbd_clt_dev *dev)
{
	return READ_ONCE(dev->open_epoch) == READ_ONCE(dev->sess->epoch);
}

const char *rnbd_clt_dev_state_str(enum rnbd_clt_dev_state state);
const char *rnbd_clt_dev_state_name(const struct rnbd_clt_dev *dev);
int rnbd_clt_map(struct rnbd_clt_map_opts *opts);
int rnbd_clt_unmap(struct rnbd_clt_dev *dev, bool force,
		   const struct attribute *self);
void rnbd_clt_free_dev(struct rnbd_clt_dev *dev);
int rnbd_clt_remap(struct rnbd_clt_dev *dev);
int rnbd_clt_resize(struct rnbd_clt_dev *dev, u64 nsectors);

/* rnbd-clt-io.c */
int rnbd_clt_alloc_tag_set(struct rnbd_clt_session *sess);

/* rnbd-clt-sysfs.c */
int rnbd_clt_sysfs_init(void);
void rnbd_clt_sysfs_exit(void);
void rnbd_clt_sysfs_init_dev(struct rnbd_clt_dev *dev);
int rnbd_clt_sysfs_add_dev(struct rnbd_clt_dev *dev);
bool rnbd_clt_sysfs_link_name_eq(const char *a, const char *b);
void rnbd_clt_sysfs_del_dev(struct rnbd_clt_dev *dev);

#endif /* RNBD_CLT_H */
