/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RNBD wire format: the messages the client and the server exchange over
 * RTRS.  Protocol 2.2 (2.0 plus PREFLUSH and NOUNMAP), compatible with the
 * RNBD of upstream Linux.
 *
 * Every multi-byte field is little endian.  The sizes are pinned: a change
 * here is a change of the protocol.
 */
#ifndef RNBD_PROTO_H
#define RNBD_PROTO_H

#include <linux/build_bug.h>
#include <linux/limits.h>
#include <linux/types.h>

#define RNBD_PROTO_VER_MAJOR	2
#define RNBD_PROTO_VER_MINOR	2

/* The port the server listens on unless told otherwise. */
#define RNBD_DEFAULT_PORT	1234

enum rnbd_msg_type {
	RNBD_MSG_SESS_INFO	= 0,
	RNBD_MSG_SESS_INFO_RSP	= 1,
	RNBD_MSG_OPEN		= 2,
	RNBD_MSG_OPEN_RSP	= 3,
	RNBD_MSG_IO		= 4,
	RNBD_MSG_CLOSE		= 5,
};

/**
 * struct rnbd_msg_hdr - first field of every message
 * @type: an enum rnbd_msg_type
 * @__padding: zero
 */
struct rnbd_msg_hdr {
	__le16	type;
	__le16	__padding;
};

enum rnbd_access_mode {
	RNBD_ACCESS_RO		= 0,
	RNBD_ACCESS_RW		= 1,
	/* a second writer, while a device moves between clients */
	RNBD_ACCESS_MIGRATION	= 2,
};

/* The mode's name in map_device and in sysfs. */
static inline const char *rnbd_access_mode_str(enum rnbd_access_mode mode)
{
	switch (mode) {
	case RNBD_ACCESS_RO:
		return "ro";
	case RNBD_ACCESS_RW:
		return "rw";
	case RNBD_ACCESS_MIGRATION:
		return "migration";
	}
	return "unknown";
}

/**
 * struct rnbd_msg_sess_info - the client's protocol version, sent before
 *			       its first OPEN
 * @hdr: type RNBD_MSG_SESS_INFO
 * @ver: the client's major version
 * @reserved: zero
 */
struct rnbd_msg_sess_info {
	struct rnbd_msg_hdr hdr;
	u8	ver;
	u8	reserved[31];
};

/**
 * struct rnbd_msg_sess_info_rsp - the server's answer to SESS_INFO
 * @hdr: type RNBD_MSG_SESS_INFO_RSP
 * @ver: the version both use, the lower of the two
 * @reserved: zero
 */
struct rnbd_msg_sess_info_rsp {
	struct rnbd_msg_hdr hdr;
	u8	ver;
	u8	reserved[31];
};

/**
 * struct rnbd_msg_open - open a device of the server
 * @hdr: type RNBD_MSG_OPEN
 * @access_mode: an enum rnbd_access_mode
 * @resv1: zero
 * @dev_name: path of the device under the server's dev_search_path,
 *	      NUL-terminated
 * @reserved: zero
 */
struct rnbd_msg_open {
	struct rnbd_msg_hdr hdr;
	u8	access_mode;
	u8	resv1;
	s8	dev_name[NAME_MAX];
	u8	reserved[3];
};

/**
 * struct rnbd_msg_close - close a device opened with OPEN
 * @hdr: type RNBD_MSG_CLOSE
 * @device_id: from the OPEN_RSP
 */
struct rnbd_msg_close {
	struct rnbd_msg_hdr hdr;
	__le32	device_id;
};

/* rnbd_msg_open_rsp.cache_policy */
#define RNBD_FUA		BIT(0)
#define RNBD_WRITEBACK		BIT(1)

/**
 * struct rnbd_msg_open_rsp - the device opened, and its queue limits
 * @hdr: type RNBD_MSG_OPEN_RSP
 * @device_id: names the device in IO and CLOSE messages of this session
 * @nsectors: capacity in 512-byte sectors
 * @max_hw_sectors: largest IO, in sectors
 * @max_write_zeroes_sectors: largest WRITE_ZEROES, 0 when not supported
 * @max_discard_sectors: largest DISCARD, 0 when not supported
 * @discard_granularity: in bytes
 * @discard_alignment: in bytes
 * @physical_block_size: in bytes
 * @logical_block_size: in bytes
 * @max_segments: largest number of segments of an IO
 * @secure_discard: largest SECURE_ERASE in sectors, 0 when not supported
 * @obsolete_rotational: ignored
 * @cache_policy: RNBD_FUA and RNBD_WRITEBACK
 * @reserved: zero
 */
struct rnbd_msg_open_rsp {
	struct rnbd_msg_hdr hdr;
	__le32	device_id;
	__le64	nsectors;
	__le32	max_hw_sectors;
	__le32	max_write_zeroes_sectors;
	__le32	max_discard_sectors;
	__le32	discard_granularity;
	__le32	discard_alignment;
	__le16	physical_block_size;
	__le16	logical_block_size;
	__le16	max_segments;
	__le16	secure_discard;
	u8	obsolete_rotational;
	u8	cache_policy;
	u8	reserved[10];
};

/**
 * struct rnbd_msg_io - user header of every IO over RTRS
 * @hdr: type RNBD_MSG_IO
 * @device_id: from the OPEN_RSP
 * @sector: first sector
 * @rw: an RNBD_OP_* with RNBD_F_* flags
 * @bi_size: length in bytes (of the range, for DISCARD and WRITE_ZEROES)
 * @prio: IO priority
 * @reserved: zero; the natural padding of upstream's layout
 */
struct rnbd_msg_io {
	struct rnbd_msg_hdr hdr;
	__le32	device_id;
	__le64	sector;
	__le32	rw;
	__le32	bi_size;
	__le16	prio;
	u8	reserved[6];
};

/* rnbd_msg_io.rw: the operation in the low bits, flags above. */
#define RNBD_OP_BITS		8
#define RNBD_OP_MASK		((1U << RNBD_OP_BITS) - 1)

enum rnbd_op {
	RNBD_OP_READ		= 0,
	RNBD_OP_WRITE		= 1,
	RNBD_OP_FLUSH		= 2,
	RNBD_OP_DISCARD		= 3,
	RNBD_OP_SECURE_ERASE	= 4,
	RNBD_OP_WRITE_ZEROES	= 5,
	RNBD_OP_LAST
};

#define RNBD_F_SYNC		BIT(RNBD_OP_BITS + 0)
#define RNBD_F_FUA		BIT(RNBD_OP_BITS + 1)
/* since 2.1: flush the cache before the write */
#define RNBD_F_PREFLUSH		BIT(RNBD_OP_BITS + 2)
/* since 2.2: WRITE_ZEROES must keep the blocks allocated */
#define RNBD_F_NOUNMAP		BIT(RNBD_OP_BITS + 3)
#define RNBD_F_ALL		(RNBD_F_SYNC | RNBD_F_FUA | RNBD_F_PREFLUSH | \
				 RNBD_F_NOUNMAP)

static_assert(sizeof(struct rnbd_msg_hdr) == 4);
static_assert(sizeof(struct rnbd_msg_sess_info) == 36);
static_assert(sizeof(struct rnbd_msg_sess_info_rsp) == 36);
static_assert(sizeof(struct rnbd_msg_open) == 264);
static_assert(sizeof(struct rnbd_msg_close) == 8);
static_assert(sizeof(struct rnbd_msg_open_rsp) == 56);
static_assert(sizeof(struct rnbd_msg_io) == 32);

#endif /* RNBD_PROTO_H */
