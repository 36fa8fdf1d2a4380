/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RTRS wire format: what the client and the server put on the wire, and
 * the limits both sides agree on.  Protocol 2.0, compatible with the RTRS
 * of upstream Linux.
 *
 * Every multi-byte field is little endian.  The sizes are pinned: a change
 * here is a change of the protocol.
 */
#ifndef RTRS_PRI_H
#define RTRS_PRI_H

#include <linux/build_bug.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/types.h>
#include <linux/uuid.h>

#define RTRS_PROTO_VER_MAJOR	2
#define RTRS_PROTO_VER_MINOR	0
#define RTRS_PROTO_VER		((RTRS_PROTO_VER_MAJOR << 8) | RTRS_PROTO_VER_MINOR)

/* First field of CON_REQ and CON_RSP. */
#define RTRS_MAGIC		0x1BBD

/* Heartbeats go both ways every interval; so many missed close the path. */
#define RTRS_HB_INTERVAL_MS	5000
#define RTRS_HB_MISSED_MAX	5

/* Queue depth of the admin connection (cid 0) of a path. */
#define RTRS_ADMIN_QUEUE_DEPTH	512

#define RTRS_MAX_SESS_QUEUE_DEPTH	65535
#define RTRS_MIN_CHUNK_SIZE		8192
#define RTRS_MAX_PATHS			128

/*
 * The 32-bit immediate of every RDMA WRITE WITH IMM carries a 4-bit type
 * and a 28-bit payload.
 */
#define RTRS_IMM_TYPE_BITS	4
#define RTRS_IMM_PAYLOAD_BITS	28
#define RTRS_IMM_PAYLOAD_MASK	((1U << RTRS_IMM_PAYLOAD_BITS) - 1)

enum rtrs_imm_type {
	/* client to server: payload is (chunk id << mem_bits) | trailer offset */
	RTRS_IO_REQ_IMM		= 0,
	/* server to client: payload is (errno << 19) | msg id */
	RTRS_IO_RSP_IMM		= 1,
	/* as RTRS_IO_RSP_IMM, and the client must invalidate its MR */
	RTRS_IO_RSP_W_INV_IMM	= 2,
	RTRS_HB_MSG_IMM		= 8,
	RTRS_HB_ACK_IMM		= 9,
};

/* IO_RSP payload: 19 bits of message id under 9 bits of errno. */
#define RTRS_RSP_ID_BITS	19
#define RTRS_RSP_ID_MASK	((1U << RTRS_RSP_ID_BITS) - 1)
#define RTRS_RSP_ERRNO_MASK	0x1ffU

static inline u32 rtrs_imm(enum rtrs_imm_type type, u32 payload)
{
	return (u32)type << RTRS_IMM_PAYLOAD_BITS |
	       (payload & RTRS_IMM_PAYLOAD_MASK);
}

static inline enum rtrs_imm_type rtrs_imm_type(u32 imm)
{
	return imm >> RTRS_IMM_PAYLOAD_BITS;
}

static inline u32 rtrs_imm_payload(u32 imm)
{
	return imm & RTRS_IMM_PAYLOAD_MASK;
}

static inline u32 rtrs_io_rsp_imm(u32 msg_id, int errno, bool w_inval)
{
	u32 payload = (abs(errno) & RTRS_RSP_ERRNO_MASK) << RTRS_RSP_ID_BITS |
		      (msg_id & RTRS_RSP_ID_MASK);

	return rtrs_imm(w_inval ? RTRS_IO_RSP_W_INV_IMM : RTRS_IO_RSP_IMM,
			payload);
}

static inline u32 rtrs_io_rsp_msg_id(u32 payload)
{
	return payload & RTRS_RSP_ID_MASK;
}

static inline int rtrs_io_rsp_errno(u32 payload)
{
	return -(int)(payload >> RTRS_RSP_ID_BITS & RTRS_RSP_ERRNO_MASK);
}

/* Types of the messages sent with IB_WR_SEND or as IO trailers. */
enum rtrs_msg_type {
	RTRS_MSG_INFO_REQ	= 0,
	RTRS_MSG_INFO_RSP	= 1,
	RTRS_MSG_WRITE		= 2,
	RTRS_MSG_READ		= 3,
	RTRS_MSG_RKEY_RSP	= 4,
};

/* rtrs_msg_rdma_read.flags */
#define RTRS_MSG_NEED_INVAL_F	BIT(0)
/* rtrs_msg_conn_rsp.flags: chunks are re-registered after each IO */
#define RTRS_MSG_NEW_RKEY_F	BIT(1)

/**
 * struct rtrs_sg_desc - a remote buffer
 * @addr: its address in the owner's DMA space
 * @key: the rkey that lets the peer access it
 * @len: its length in bytes
 */
struct rtrs_sg_desc {
	__le64	addr;
	__le32	key;
	__le32	len;
};

/* rtrs_msg_conn_req.flags */
#define RTRS_CON_REQ_FIRST_CONN	BIT(0)

/**
 * struct rtrs_msg_conn_req - private data of rdma_connect()
 * @__cma_version: left 0: rdma_cm's AF_IB header overlays it
 * @__ip_version: left 0, for the same reason
 * @magic: RTRS_MAGIC
 * @version: RTRS_PROTO_VER
 * @cid: index of this connection in its path (0 is the admin connection)
 * @cid_num: number of connections of the path
 * @recon_cnt: incremented by the client on every reconnect of the path, so
 *	       the server can tell a new incarnation from the old one
 * @sess_uuid: identifies the session on the server
 * @paths_uuid: identifies the path within the session
 * @flags: RTRS_CON_REQ_FIRST_CONN when this path is the session's first
 * @reserved: zero
 */
struct rtrs_msg_conn_req {
	u8	__cma_version;
	u8	__ip_version;
	__le16	magic;
	__le16	version;
	__le16	cid;
	__le16	cid_num;
	__le16	recon_cnt;
	uuid_t	sess_uuid;
	uuid_t	paths_uuid;
	u8	flags;
	u8	reserved[11];
};

/**
 * struct rtrs_msg_conn_rsp - private data of rdma_accept() or rdma_reject()
 * @magic: RTRS_MAGIC
 * @version: RTRS_PROTO_VER
 * @errno: a positive errno on reject, else 0
 * @queue_depth: number of chunks of the session
 * @max_io_size: largest data part of an IO
 * @max_hdr_size: largest user header of an IO
 * @flags: RTRS_MSG_NEW_RKEY_F
 * @reserved: zero
 */
struct rtrs_msg_conn_rsp {
	__le16	magic;
	__le16	version;
	__le16	errno;
	__le16	queue_depth;
	__le32	max_io_size;
	__le32	max_hdr_size;
	__le32	flags;
	u8	reserved[36];
};

/**
 * struct rtrs_msg_info_req - sent by the client once all connections of a
 *			      path are up
 * @type: RTRS_MSG_INFO_REQ
 * @pathname: the path's name on the client, "<src>@<dst>", NUL-padded
 * @reserved: zero
 */
struct rtrs_msg_info_req {
	__le16	type;
	u8	pathname[NAME_MAX];
	u8	reserved[15];
};

/**
 * struct rtrs_msg_info_rsp - the server's chunks, answer to INFO_REQ
 * @type: RTRS_MSG_INFO_RSP
 * @sg_cnt: number of entries of @desc
 * @reserved: zero
 * @desc: the chunks; one may cover several when they are contiguous
 */
struct rtrs_msg_info_rsp {
	__le16	type;
	__le16	sg_cnt;
	u8	reserved[4];
	struct rtrs_sg_desc desc[];
};

/**
 * struct rtrs_msg_rkey_rsp - the new rkey of a chunk re-registered after IO
 * @type: RTRS_MSG_RKEY_RSP
 * @buf_id: the chunk
 * @rkey: its new rkey
 */
struct rtrs_msg_rkey_rsp {
	__le16	type;
	__le16	buf_id;
	__le32	rkey;
};

/**
 * struct rtrs_msg_rdma_read - trailer of a read request, after the user
 *			       header in the chunk
 * @type: RTRS_MSG_READ
 * @usr_len: length of the user header before this trailer
 * @flags: RTRS_MSG_NEED_INVAL_F
 * @sg_cnt: number of entries of @desc
 * @desc: the client's buffers the server writes the data to
 */
struct rtrs_msg_rdma_read {
	__le16	type;
	__le16	usr_len;
	__le16	flags;
	__le16	sg_cnt;
	struct rtrs_sg_desc desc[];
};

/**
 * struct rtrs_msg_rdma_write - trailer of a write request, after the data
 *				and the user header in the chunk
 * @type: RTRS_MSG_WRITE
 * @usr_len: length of the user header before this trailer
 */
struct rtrs_msg_rdma_write {
	__le16	type;
	__le16	usr_len;
};

static_assert(sizeof(struct rtrs_sg_desc) == 16);
static_assert(sizeof(struct rtrs_msg_conn_req) == 56);
static_assert(sizeof(struct rtrs_msg_conn_rsp) == 56);
static_assert(sizeof(struct rtrs_msg_info_req) == 272);
static_assert(sizeof(struct rtrs_msg_info_rsp) == 8);
static_assert(sizeof(struct rtrs_msg_rkey_rsp) == 8);
static_assert(sizeof(struct rtrs_msg_rdma_read) == 8);
static_assert(sizeof(struct rtrs_msg_rdma_write) == 4);

#endif /* RTRS_PRI_H */
