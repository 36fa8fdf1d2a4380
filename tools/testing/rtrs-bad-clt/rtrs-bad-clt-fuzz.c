// SPDX-License-Identifier: GPL-2.0-only
/*
 * rtrs-bad-clt's fuzzer.  Each message it sends is a valid one with some of
 * its fields spoiled, all chosen from a seed: CON_REQs; the first messages
 * of paths whose connections do not all come; immediates of every type on
 * every connection; requests whose trailer and RNBD message are spoiled,
 * OPENs, CLOSEs and IO of one session mixed, on both connections; RDMA
 * writes into the chunks; and a message or two on a path the server is
 * closing.  The server must answer every request or close its path, and go
 * on serving the others.  Against a server that answers the same way, a
 * seed sends the same messages again: a failure is replayed from its seed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/prandom.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "rnbd-proto.h"
#include "rtrs-bad-clt.h"

/* Sessions of the fuzzer are named so, with a number. */
#define FZ_SESSNAME		"rtrs-bad-clt-fz"
/* The others' service is checked after so many messages. */
#define FZ_CHECK_EVERY		256
/* Largest message built; a request's data is cut to fit. */
#define FZ_BUF_SIZE		SZ_16K
#define FZ_MAX_DATA		(FZ_BUF_SIZE - SZ_1K)

/**
 * struct fz - a fuzz run
 * @t: the server
 * @cfg: the budget, the device and the check of the others' service
 * @st: what was sent and what came back
 * @rnd: makes every choice, from the seed
 * @up: a path up with its session, or NULL
 * @opened: @up's session opened the device, as @device_id
 * @device_id: the id the server gave it
 * @nsectors: its size, once opened
 * @seq: numbers the sessions
 * @buf: where a message is built
 * @why: what failed
 * @why_len: its size
 */
struct fz {
	const struct bad_target *t;
	const struct bad_fuzz_cfg *cfg;
	struct bad_fuzz_stats *st;
	struct rnd_state rnd;
	struct bad_path *up;
	bool opened;
	u32 device_id;
	u64 nsectors;
	unsigned int seq;
	u8 *buf;
	char *why;
	size_t why_len;
};

static u32 fz_below(struct fz *f, u32 n)
{
	return n ? prandom_u32_state(&f->rnd) % n : 0;
}

static bool fz_one_in(struct fz *f, u32 n)
{
	return !fz_below(f, n);
}

/* @good, but one time in @one_in a value near it, at an edge, or any. */
static u32 fz_spoil(struct fz *f, u32 good, u32 one_in)
{
	static const u32 edges[] = {
		0, 1, 2, 7, 8, 255, 256, 511, 512, 4095, 4096, 4097, 65535,
		65536, 0x7fffffff, 0x80000000, 0xffffffff,
	};

	if (!fz_one_in(f, one_in))
		return good;
	switch (fz_below(f, 3)) {
	case 0:
		return good + fz_below(f, 17) - 8;
	case 1:
		return edges[fz_below(f, ARRAY_SIZE(edges))];
	default:
		return prandom_u32_state(&f->rnd);
	}
}

static int fz_fail(struct fz *f, const char *what, int err)
{
	snprintf(f->why, f->why_len, "message %lu: %s: %d", f->st->msgs, what,
		 err);
	return -EIO;
}

/* The name of the next session, which counts as a path opened. */
static void fz_next_name(struct fz *f, char *name, size_t len)
{
	snprintf(name, len, FZ_SESSNAME "-%u", ++f->seq);
	f->st->paths++;
}

static struct bad_path *fz_path_alloc(struct fz *f)
{
	char name[NAME_MAX];

	fz_next_name(f, name, sizeof(name));
	return bad_path_alloc(f->t, name);
}

/*
 * Any immediate: mostly of a type RTRS knows, else of any; the payload of
 * a request or any other.
 */
static u32 fz_imm(struct fz *f, struct bad_path *p)
{
	static const u32 known[] = {
		RTRS_IO_REQ_IMM, RTRS_IO_RSP_IMM, RTRS_IO_RSP_W_INV_IMM,
		RTRS_HB_MSG_IMM, RTRS_HB_ACK_IMM,
	};
	u32 type = fz_one_in(f, 4) ? fz_below(f, 1U << RTRS_IMM_TYPE_BITS) :
				     known[fz_below(f, ARRAY_SIZE(known))];
	u32 chunk = fz_below(f, p->queue_depth + 2);

	if (type == RTRS_IO_REQ_IMM && p->queue_depth && fz_below(f, 2))
		return bad_io_imm(p, chunk, fz_below(f, 1U << p->mem_bits));
	return rtrs_imm(type, fz_spoil(f, 0, 2));
}

/* CON_REQ */

static void fz_spoil_conn_req(struct fz *f, struct rtrs_msg_conn_req *req)
{
	req->magic = cpu_to_le16(fz_spoil(f, RTRS_MAGIC, 8));
	req->version = cpu_to_le16(fz_spoil(f, RTRS_PROTO_VER, 8));
	req->cid = cpu_to_le16(fz_spoil(f, le16_to_cpu(req->cid), 4));
	req->cid_num = cpu_to_le16(fz_spoil(f, BAD_CLT_CONS, 4));
	req->recon_cnt = cpu_to_le16(fz_spoil(f, 0, 4));
	req->flags = fz_spoil(f, req->flags, 4);
	/* A path of the session up, or that very path, again. */
	if (f->up && fz_one_in(f, 4)) {
		uuid_copy(&req->paths_uuid, &f->up->sess_uuid);
		if (fz_one_in(f, 2))
			uuid_copy(&req->sess_uuid, &f->up->s.uuid);
	}
}

/* A connection with a spoiled CON_REQ, alone. */
static int fz_conn_req(struct fz *f)
{
	unsigned int cid = fz_below(f, BAD_CLT_CONS);
	struct rtrs_msg_conn_req req;
	struct bad_path *p;

	p = fz_path_alloc(f);
	if (!p)
		return -ENOMEM;
	bad_conn_req_init(p, &req, cid);
	fz_spoil_conn_req(f, &req);
	f->st->msgs++;
	if (bad_con_connect(p, cid, &req) == -ECONNREFUSED)
		f->st->refused++;
	bad_path_free(p);
	return 0;
}

/* Paths that do not finish connecting */

static size_t fz_info_req(struct fz *f, struct bad_path *p)
{
	struct rtrs_msg_info_req *req = (void *)f->buf;

	memset(req, 0, sizeof(*req));
	req->type = cpu_to_le16(fz_spoil(f, RTRS_MSG_INFO_REQ, 4));
	strscpy(req->pathname, p->s.sessname, sizeof(req->pathname));
	if (fz_one_in(f, 4))
		req->pathname[fz_below(f, sizeof(req->pathname))] =
			fz_below(f, 256);
	return min_t(u32, fz_spoil(f, sizeof(*req), 4), FZ_BUF_SIZE);
}

/* What a path sends before it is up: an INFO_REQ, or any immediate. */
static void fz_early_msg(struct fz *f, struct bad_path *p)
{
	unsigned int cid = fz_below(f, BAD_CLT_CONS);

	f->st->msgs++;
	if (p->tx && fz_below(f, 2))
		bad_path_send(p, 0, f->buf, fz_info_req(f, p));
	else
		bad_con_post_imm(p, cid, fz_imm(f, p));
}

/* Some of a path's connections, a few messages, and away. */
static int fz_half_path(struct fz *f)
{
	struct rtrs_msg_conn_req req;
	unsigned int cid, n;
	struct bad_path *p;

	p = fz_path_alloc(f);
	if (!p)
		return -ENOMEM;
	for (cid = 0; cid < BAD_CLT_CONS; cid++) {
		if (fz_one_in(f, 3))
			continue;
		bad_conn_req_init(p, &req, cid);
		f->st->msgs++;
		bad_con_connect(p, cid, &req);
	}
	for (n = 1 + fz_below(f, 3); n; n--)
		fz_early_msg(f, p);
	bad_path_wait_sent(p);
	bad_path_free(p);
	return 0;
}

/* The path up */

/* The path up is gone: a last message or none, and it is freed. */
static void fz_up_put(struct fz *f)
{
	if (!f->up)
		return;
	if (bad_path_broken(f->up)) {
		f->st->closed++;
		if (fz_one_in(f, 2)) {
			f->st->msgs++;
			bad_con_post_imm(f->up, fz_below(f, BAD_CLT_CONS),
					 fz_imm(f, f->up));
		}
	}
	bad_path_wait_sent(f->up);
	bad_path_free(f->up);
	f->up = NULL;
	f->opened = false;
}

/* A path up with its session; a server that refuses one fails the run. */
static int fz_up_get(struct fz *f)
{
	char name[NAME_MAX];
	struct bad_path *p;

	if (f->up && !bad_path_broken(f->up))
		return 0;
	fz_up_put(f);
	fz_next_name(f, name, sizeof(name));
	f->st->msgs += BAD_CLT_CONS + 1;
	p = bad_path_up(f->t, name);
	if (IS_ERR(p))
		return fz_fail(f, "a good path could not come up", PTR_ERR(p));
	f->up = p;
	f->nsectors = 1024;
	return 0;
}

/* Requests of the path up */

enum fz_kind {
	FZ_IO,
	FZ_OPEN,
	FZ_CLOSE,
	FZ_SESS_INFO,
	FZ_JUNK,
};

/**
 * struct fz_req - a request being built
 * @kind: its RNBD message
 * @read: a READ (else a WRITE) of RTRS
 * @usr: the RNBD message
 * @usr_len: its length
 * @data_len: the data of a WRITE
 * @rlen: the buffer of a READ
 */
struct fz_req {
	enum fz_kind kind;
	bool read;
	u8 usr[sizeof(struct rnbd_msg_open) + 32];
	size_t usr_len;
	size_t data_len;
	u32 rlen;
};

static enum fz_kind fz_pick_kind(struct fz *f)
{
	u32 n = fz_below(f, 100);

	if (!f->opened && n < 75)
		return FZ_OPEN;
	if (n < 70)
		return FZ_IO;
	if (n < 78)
		return FZ_OPEN;
	if (n < 85)
		return FZ_CLOSE;
	if (n < 90)
		return FZ_SESS_INFO;
	return FZ_JUNK;
}

static void fz_io(struct fz *f, struct fz_req *r)
{
	struct rnbd_msg_io *m = (void *)r->usr;
	u32 size = (1 + fz_below(f, 8)) * SECTOR_SIZE;
	u32 op = fz_below(f, 2) ? RNBD_OP_READ : RNBD_OP_WRITE;
	u32 flags = 0;
	u64 sector;

	if (fz_one_in(f, 8))
		op = fz_below(f, 8);
	if (fz_one_in(f, 4))
		flags = fz_below(f, 16) << RNBD_OP_BITS;
	size = fz_spoil(f, size, 16);
	sector = fz_below(f, f->nsectors - 8);
	if (fz_one_in(f, 16))
		sector = f->nsectors - fz_below(f, 16);
	else if (fz_one_in(f, 32))
		sector = (u64)prandom_u32_state(&f->rnd) << 32 |
			 prandom_u32_state(&f->rnd);
	memset(m, 0, sizeof(*m));
	m->hdr.type = cpu_to_le16(RNBD_MSG_IO);
	m->device_id = cpu_to_le32(fz_spoil(f, f->device_id, 16));
	m->sector = cpu_to_le64(sector);
	m->rw = cpu_to_le32(fz_spoil(f, op | flags, 32));
	m->bi_size = cpu_to_le32(size);
	m->prio = cpu_to_le16(fz_spoil(f, 0, 8));
	r->usr_len = sizeof(*m);
	r->read = op == RNBD_OP_READ;
	if (r->read)
		r->rlen = size;
	else if (op == RNBD_OP_WRITE)
		r->data_len = min_t(u32, size, FZ_MAX_DATA);
}

static void fz_open(struct fz *f, struct fz_req *r)
{
	struct rnbd_msg_open *m = (void *)r->usr;

	memset(m, 0, sizeof(*m));
	m->hdr.type = cpu_to_le16(RNBD_MSG_OPEN);
	m->access_mode = fz_spoil(f, RNBD_ACCESS_RO, 8);
	strscpy((char *)m->dev_name, f->cfg->device, sizeof(m->dev_name));
	switch (fz_below(f, 16)) {
	case 0:
		memset(m->dev_name, 'a', sizeof(m->dev_name));
		break;
	case 1:
		strscpy((char *)m->dev_name, "../..", sizeof(m->dev_name));
		break;
	case 2:
		m->dev_name[fz_below(f, sizeof(m->dev_name))] =
			fz_below(f, 256);
		break;
	}
	r->usr_len = sizeof(*m);
	r->read = true;
	r->rlen = sizeof(struct rnbd_msg_open_rsp);
}

static void fz_close(struct fz *f, struct fz_req *r)
{
	struct rnbd_msg_close *m = (void *)r->usr;

	memset(m, 0, sizeof(*m));
	m->hdr.type = cpu_to_le16(RNBD_MSG_CLOSE);
	m->device_id = cpu_to_le32(fz_spoil(f, f->device_id, 8));
	r->usr_len = sizeof(*m);
}

static void fz_sess_info(struct fz *f, struct fz_req *r)
{
	struct rnbd_msg_sess_info *m = (void *)r->usr;

	memset(m, 0, sizeof(*m));
	m->hdr.type = cpu_to_le16(RNBD_MSG_SESS_INFO);
	m->ver = fz_spoil(f, RNBD_PROTO_VER_MAJOR, 4);
	r->usr_len = sizeof(*m);
	r->read = true;
	r->rlen = sizeof(struct rnbd_msg_sess_info_rsp);
}

static void fz_junk(struct fz *f, struct fz_req *r)
{
	size_t i;

	r->usr_len = fz_below(f, sizeof(r->usr));
	for (i = 0; i < r->usr_len; i++)
		r->usr[i] = fz_below(f, 256);
	r->read = fz_below(f, 2);
	r->rlen = fz_below(f, 4096);
}

static void fz_rnbd_msg(struct fz *f, struct fz_req *r)
{
	switch (r->kind) {
	case FZ_IO:
		fz_io(f, r);
		break;
	case FZ_OPEN:
		fz_open(f, r);
		break;
	case FZ_CLOSE:
		fz_close(f, r);
		break;
	case FZ_SESS_INFO:
		fz_sess_info(f, r);
		break;
	case FZ_JUNK:
		fz_junk(f, r);
		break;
	}
	if (fz_one_in(f, 32))
		((struct rnbd_msg_hdr *)r->usr)->type =
			cpu_to_le16(fz_below(f, 8));
	r->usr_len = fz_spoil(f, r->usr_len, 16) % (sizeof(r->usr) + 1);
}

/*
 * A READ's data goes to the path's rbuf, a chunk long: the length may be
 * spoiled (the server must refuse more than a chunk), the address not.
 */
static size_t fz_read_trailer(struct fz *f, struct fz_req *r, u8 *at)
{
	struct rtrs_msg_rdma_read *m = (void *)at;
	struct bad_path *p = f->up;
	u16 sg_cnt = fz_spoil(f, 1, 16);

	m->type = cpu_to_le16(RTRS_MSG_READ);
	m->usr_len = cpu_to_le16(fz_spoil(f, r->usr_len, 16));
	m->flags = cpu_to_le16(fz_spoil(f, 0, 16));
	m->sg_cnt = cpu_to_le16(sg_cnt);
	m->desc[0].addr = cpu_to_le64(p->rbuf->dma_addr);
	m->desc[0].key = cpu_to_le32(fz_spoil(f, p->dev.pd->unsafe_global_rkey,
					      32));
	m->desc[0].len = cpu_to_le32(fz_one_in(f, 16) ?
				     p->chunk_size + fz_below(f, 2) :
				     fz_spoil(f, r->rlen, 16));
	return struct_size(m, desc, 1);
}

static size_t fz_write_trailer(struct fz *f, struct fz_req *r, u8 *at)
{
	struct rtrs_msg_rdma_write *m = (void *)at;

	m->type = cpu_to_le16(fz_spoil(f, RTRS_MSG_WRITE, 32));
	m->usr_len = cpu_to_le16(fz_spoil(f, r->usr_len, 16));
	return sizeof(*m);
}

/* The chunk's bytes: data, RNBD message, trailer; the trailer's offset. */
static size_t fz_build(struct fz *f, struct fz_req *r, u32 *off)
{
	u8 *at = f->buf;

	memset(at, 0x5a, r->data_len);
	at += r->data_len;
	memcpy(at, r->usr, r->usr_len);
	at += r->usr_len;
	*off = at - f->buf;
	at += r->read ? fz_read_trailer(f, r, at) : fz_write_trailer(f, r, at);
	return at - f->buf;
}

/* What an answered OPEN or CLOSE of ours changed. */
static void fz_answered(struct fz *f, const struct fz_req *r,
			const struct bad_rsp *rsp)
{
	const struct rnbd_msg_open_rsp *open = f->up->rbuf->buf;
	const struct rnbd_msg_close *close = (const void *)r->usr;

	f->st->answered++;
	if (rsp->errno)
		return;
	if (r->kind == FZ_OPEN &&
	    le16_to_cpu(open->hdr.type) == RNBD_MSG_OPEN_RSP) {
		f->opened = true;
		f->device_id = le32_to_cpu(open->device_id);
		f->nsectors = max_t(u64, le64_to_cpu(open->nsectors), 16);
	} else if (r->kind == FZ_CLOSE && f->opened &&
		   le32_to_cpu(close->device_id) == f->device_id) {
		f->opened = false;
	}
}

/* Post an IO_REQ and wait: the server answers it or closes the path. */
static int fz_post_wait(struct fz *f, unsigned int cid, u32 chunk,
			size_t len, u32 off, struct bad_rsp *rsp)
{
	struct bad_path *p = f->up;
	unsigned int seen = bad_path_rsp_cnt(p);
	int err;

	f->st->msgs++;
	err = bad_con_post_io(p, cid, chunk, f->buf, len,
			      bad_io_imm(p, chunk, off));
	if (err)
		return 0;
	err = bad_path_wait_rsp(p, seen, rsp);
	if (err == -ETIMEDOUT)
		return fz_fail(f, "a request neither answered nor its path closed",
			       err);
	return err ? -ECONNRESET : 0;
}

static int fz_request(struct fz *f)
{
	struct bad_path *p = f->up;
	struct fz_req r = { .kind = fz_pick_kind(f) };
	u32 ids = 1U << (RTRS_IMM_PAYLOAD_BITS - p->mem_bits);
	struct bad_rsp rsp;
	u32 chunk, off;
	size_t len;
	int err;

	fz_rnbd_msg(f, &r);
	len = fz_build(f, &r, &off);
	chunk = bad_path_take_chunk(p);
	/* Beyond the queue, the IMM goes alone: there is no such chunk. */
	if (fz_one_in(f, 32))
		chunk = fz_below(f, ids);
	if (chunk >= p->queue_depth)
		len = 0;
	if (fz_one_in(f, 32))
		off = fz_below(f, 1U << p->mem_bits);
	err = fz_post_wait(f, fz_below(f, BAD_CLT_CONS), chunk, len, off,
			   &rsp);
	if (!err)
		fz_answered(f, &r, &rsp);
	return err == -EIO ? err : 0;
}

/* Any immediate on the path up; one of a request waits for its end. */
static int fz_imm_up(struct fz *f)
{
	struct bad_path *p = f->up;
	u32 imm = fz_imm(f, p);
	struct bad_rsp rsp;
	u32 payload = rtrs_imm_payload(imm);
	int err;

	if (rtrs_imm_type(imm) != RTRS_IO_REQ_IMM) {
		f->st->msgs++;
		bad_con_post_imm(p, fz_below(f, BAD_CLT_CONS), imm);
		return 0;
	}
	err = fz_post_wait(f, fz_below(f, BAD_CLT_CONS),
			   payload >> p->mem_bits, 0,
			   payload & ((1U << p->mem_bits) - 1), &rsp);
	if (!err)
		f->st->answered++;
	return err == -EIO ? err : 0;
}

/* An RDMA WRITE into a chunk, or across the end of one. */
static int fz_raw(struct fz *f)
{
	struct bad_path *p = f->up;
	struct bad_chunk *c = &p->chunks[fz_below(f, p->queue_depth)];
	u32 len = 1 + fz_below(f, 512);
	u32 off = fz_below(f, p->chunk_size - len);

	if (fz_one_in(f, 8))
		off = p->chunk_size - fz_below(f, len);
	memset(f->buf, 0xc3, len);
	f->st->msgs++;
	bad_path_post_raw(p, c->addr + off, c->rkey, f->buf, len);
	return 0;
}

/* A SEND on the path up, where only INFO_REQ came on connection 0. */
static int fz_send_up(struct fz *f)
{
	u32 len = 2 + fz_below(f, 64);
	u32 i;

	for (i = 0; i < len; i++)
		f->buf[i] = fz_below(f, 256);
	if (fz_below(f, 2))
		*(__le16 *)f->buf = cpu_to_le16(fz_below(f, 8));
	f->st->msgs++;
	bad_path_send(f->up, fz_below(f, BAD_CLT_CONS), f->buf, len);
	return 0;
}

static int fz_one(struct fz *f)
{
	u32 n = fz_below(f, 100);
	int err;

	if (n < 3)
		return fz_conn_req(f);
	if (n < 6)
		return fz_half_path(f);
	err = fz_up_get(f);
	if (err)
		return err;
	if (n < 86)
		return fz_request(f);
	if (n < 94)
		return fz_imm_up(f);
	if (n < 97)
		return fz_raw(f);
	return fz_send_up(f);
}

/**
 * bad_fuzz() - send a server messages made from a seed
 * @t: the server
 * @cfg: the seed, the budget, the device and the check of the others
 * @st: filled with what was sent and what came back
 * @why: filled with what failed
 * @why_len: its size
 *
 * Context: process; takes as long as the budget.
 * Return: 0 when the server answered or closed after every message and
 * the check passed throughout, -EIO with @why filled when not, another
 * negative errno when the run could not be made.
 */
int bad_fuzz(const struct bad_target *t, const struct bad_fuzz_cfg *cfg,
	     struct bad_fuzz_stats *st, char *why, size_t why_len)
{
	unsigned long start = jiffies;
	unsigned long end = start + msecs_to_jiffies(cfg->time_ms);
	unsigned long checked = 0;
	struct fz f = {
		.t = t, .cfg = cfg, .st = st, .why = why, .why_len = why_len,
	};
	int err = 0;

	memset(st, 0, sizeof(*st));
	prandom_seed_state(&f.rnd, cfg->seed);
	f.buf = kzalloc(FZ_BUF_SIZE, GFP_KERNEL);
	if (!f.buf)
		return -ENOMEM;
	while (!err && st->msgs < cfg->count && time_before(jiffies, end)) {
		err = fz_one(&f);
		if (err || st->msgs - checked < FZ_CHECK_EVERY)
			continue;
		checked = st->msgs;
		err = cfg->check(cfg->arg);
		if (err)
			err = fz_fail(&f, "then the shared session failed", err);
	}
	fz_up_put(&f);
	if (!err) {
		err = cfg->check(cfg->arg);
		if (err)
			err = fz_fail(&f, "then the shared session failed", err);
	}
	st->ms = jiffies_to_msecs(jiffies - start);
	kfree(f.buf);
	return err;
}
