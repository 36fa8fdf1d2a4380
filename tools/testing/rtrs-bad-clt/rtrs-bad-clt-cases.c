// SPDX-License-Identifier: GPL-2.0-only
/*
 * rtrs-bad-clt: malformed messages for an RTRS/RNBD server, one case at a
 * time.  A test module, never installed or packaged.
 *
 *   insmod rtrs-bad-clt.ko server=ip:<addr> [port=1234] device=<path>
 *   cat /sys/kernel/debug/rtrs_bad_clt/cases     names and expectations
 *   echo <name> > /sys/kernel/debug/rtrs_bad_clt/run
 *   cat /sys/kernel/debug/rtrs_bad_clt/result    "pass|fail|skip <name>: ..."
 *   echo <seed> <count> <time_ms> > /sys/kernel/debug/rtrs_bad_clt/fuzz
 *
 * A write to run fails with -EIO when the case failed; every result is
 * also logged.  Each case knows what the server must do: reject the
 * connection with an errno, close the path, or answer the request with an
 * errno and go on serving.  The cases run beside a shared session that
 * opened @device through RNBD: after each case, a write and a read of it
 * verify that the server still serves.  The shared session must never
 * break: the case it breaks during fails, and so does the next case when
 * it broke after a case had ended; a new one is opened for the next.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/ioprio.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "rnbd-proto.h"
#include "rtrs-bad-clt.h"

/* The IO of the checks that the shared session still works. */
#define BAD_IO_SIZE		4096
#define BAD_IO_SECTORS		(BAD_IO_SIZE >> SECTOR_SHIFT)
/* Sessions of the cases are named so, with a number. */
#define BAD_SESSNAME		"rtrs-bad-clt"

static char *bad_server;
module_param_named(server, bad_server, charp, 0444);
MODULE_PARM_DESC(server, "The server's address: ip:<addr> or gid:<gid>, optionally <src>,<dst>");

static ushort bad_port = RNBD_DEFAULT_PORT;
module_param_named(port, bad_port, ushort, 0444);
MODULE_PARM_DESC(port, "The server's port (default 1234)");

static char *bad_device;
module_param_named(device, bad_device, charp, 0444);
MODULE_PARM_DESC(device, "The device the shared session opens read-write, as RNBD's device_path");

static char *bad_slow_device;
module_param_named(slow_device, bad_slow_device, charp, 0444);
MODULE_PARM_DESC(slow_device, "A device whose IO takes seconds, for write-chunk-in-use (none: that case is skipped)");

/* How long write-chunk-in-use lets the server hold its READ first. */
#define BAD_IN_USE_WAIT_MS	1000

/* Paths not up yet the limit case may open, and its check of the limit. */
#define BAD_HALF_OPEN_MAX	32

static uint bad_half_open = 4;
module_param_named(half_open, bad_half_open, uint, 0444);
MODULE_PARM_DESC(half_open, "The server's max_half_open_paths, which limit-half-open checks (1-32, default 4)");

static uint bad_timeout_ms = 10000;
module_param_named(timeout_ms, bad_timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "How long to wait for each answer of the server (100-600000, default 10000)");

enum bad_verdict {
	BAD_PASS,
	BAD_FAIL,
	BAD_SKIP,
};

/**
 * struct bad_ctx - the state the cases share
 * @t: the server
 * @shared: the shared session's path, made by the first case
 * @device_id: the device the shared session opened
 * @nsectors: its size
 * @good_sector: where the next check writes
 * @seq: numbers the cases' sessions
 * @last: the last case that ran with @shared and left it up, NULL when
 *	  none did since it opened: the one to blame when it is found broken
 *	  before the next case
 * @broke: a shared session broke: the server may not have let go of it
 *	   (its name, its device open for writing) when the next one opens
 * @buf: where requests and messages are built; the chunk size
 * @pattern: what the check writes
 * @note: what the case saw
 */
struct bad_ctx {
	struct bad_target t;
	struct bad_path *shared;
	u32 device_id;
	u64 nsectors;
	u64 good_sector;
	unsigned int seq;
	const char *last;
	bool broke;
	u8 *buf;
	u8 pattern[BAD_IO_SIZE];
	char note[320];
};

/* One case at a time: protects bad_ctx and bad_result. */
static DEFINE_MUTEX(bad_mutex);
static struct bad_ctx *bad_ctx;
static char bad_result[400];
static struct dentry *bad_debugfs;

/* Add to what the case saw. */
static __printf(2, 3) void bad_note(struct bad_ctx *ctx, const char *fmt, ...)
{
	size_t len = strlen(ctx->note);
	va_list args;

	if (len)
		len += scnprintf(ctx->note + len, sizeof(ctx->note) - len, ", ");
	va_start(args, fmt);
	vsnprintf(ctx->note + len, sizeof(ctx->note) - len, fmt, args);
	va_end(args);
}

/**
 * struct bad_req - a request as written into a chunk
 * @buf: the chunk's bytes from its start
 * @len: how many of them to write
 * @off: the trailer's offset, for the IMM
 */
struct bad_req {
	u8 *buf;
	size_t len;
	u32 off;
};

/* data, user header, WRITE trailer */
static struct rtrs_msg_rdma_write *
bad_req_write(struct bad_ctx *ctx, struct bad_req *r, const void *data,
	      size_t data_len, const void *usr, size_t usr_len)
{
	struct rtrs_msg_rdma_write *w;

	r->buf = ctx->buf;
	if (data)
		memcpy(r->buf, data, data_len);
	else
		memset(r->buf, 0xa5, data_len);
	memcpy(r->buf + data_len, usr, usr_len);
	w = (void *)(r->buf + data_len + usr_len);
	w->type = cpu_to_le16(RTRS_MSG_WRITE);
	w->usr_len = cpu_to_le16(usr_len);
	r->off = data_len + usr_len;
	r->len = r->off + sizeof(*w);
	return w;
}

/* user header, READ trailer with one descriptor of @rlen bytes of @p's rbuf */
static struct rtrs_msg_rdma_read *
bad_req_read_on(struct bad_ctx *ctx, struct bad_path *p, struct bad_req *r,
		const void *usr, size_t usr_len, u32 rlen)
{
	struct rtrs_msg_rdma_read *m;

	r->buf = ctx->buf;
	memcpy(r->buf, usr, usr_len);
	m = (void *)(r->buf + usr_len);
	m->type = cpu_to_le16(RTRS_MSG_READ);
	m->usr_len = cpu_to_le16(usr_len);
	m->flags = 0;
	m->sg_cnt = cpu_to_le16(1);
	m->desc[0].addr = cpu_to_le64(p->rbuf->dma_addr);
	m->desc[0].key = cpu_to_le32(p->dev.pd->unsafe_global_rkey);
	m->desc[0].len = cpu_to_le32(rlen);
	r->off = usr_len;
	r->len = usr_len + struct_size(m, desc, 1);
	return m;
}

/* As bad_req_read_on(), for the shared session. */
static struct rtrs_msg_rdma_read *
bad_req_read(struct bad_ctx *ctx, struct bad_req *r, const void *usr,
	     size_t usr_len, u32 rlen)
{
	return bad_req_read_on(ctx, ctx->shared, r, usr, usr_len, rlen);
}

/* Send @r in a chunk of the shared session and wait for its response. */
static int bad_submit_to(struct bad_ctx *ctx, u32 chunk,
			 const struct bad_req *r, struct bad_rsp *rsp)
{
	struct bad_path *p = ctx->shared;
	unsigned int seen = bad_path_rsp_cnt(p);
	int err;

	err = bad_path_post_io(p, chunk, r->buf, r->len,
			       bad_io_imm(p, chunk, r->off));
	if (!err)
		err = bad_path_wait_rsp(p, seen, rsp);
	if (!err && rsp->id != chunk)
		err = -EPROTO;
	return err;
}

/* Send @r in the shared session's next chunk and wait for its response. */
static int bad_submit(struct bad_ctx *ctx, const struct bad_req *r,
		      struct bad_rsp *rsp)
{
	return bad_submit_to(ctx, bad_path_take_chunk(ctx->shared), r, rsp);
}

static void bad_rnbd_io(struct bad_ctx *ctx, struct rnbd_msg_io *m, u32 rw,
			u64 sector, u32 size)
{
	memset(m, 0, sizeof(*m));
	m->hdr.type = cpu_to_le16(RNBD_MSG_IO);
	m->device_id = cpu_to_le32(ctx->device_id);
	m->sector = cpu_to_le64(sector);
	m->rw = cpu_to_le32(rw);
	m->bi_size = cpu_to_le32(size);
}

static void bad_rnbd_open_msg(struct rnbd_msg_open *m, const char *name)
{
	memset(m, 0, sizeof(*m));
	m->hdr.type = cpu_to_le16(RNBD_MSG_OPEN);
	m->access_mode = RNBD_ACCESS_RW;
	strscpy((char *)m->dev_name, name, sizeof(m->dev_name));
}

/* The shared session */

static int bad_shared_sess_info(struct bad_ctx *ctx)
{
	struct rnbd_msg_sess_info msg = {
		.hdr.type = cpu_to_le16(RNBD_MSG_SESS_INFO),
		.ver = RNBD_PROTO_VER_MAJOR,
	};
	const struct rnbd_msg_sess_info_rsp *rsp = ctx->shared->rbuf->buf;
	struct bad_req r;
	struct bad_rsp ans;
	int err;

	bad_req_read(ctx, &r, &msg, sizeof(msg), sizeof(*rsp));
	err = bad_submit(ctx, &r, &ans) ?: ans.errno;
	if (!err && le16_to_cpu(rsp->hdr.type) != RNBD_MSG_SESS_INFO_RSP)
		err = -EPROTO;
	return err;
}

static int bad_shared_open(struct bad_ctx *ctx)
{
	const struct rnbd_msg_open_rsp *rsp = ctx->shared->rbuf->buf;
	struct rnbd_msg_open msg;
	struct bad_req r;
	struct bad_rsp ans;
	int err;

	bad_rnbd_open_msg(&msg, bad_device);
	bad_req_read(ctx, &r, &msg, sizeof(msg), sizeof(*rsp));
	err = bad_submit(ctx, &r, &ans) ?: ans.errno;
	if (err)
		return err;
	if (le16_to_cpu(rsp->hdr.type) != RNBD_MSG_OPEN_RSP)
		return -EPROTO;
	ctx->device_id = le32_to_cpu(rsp->device_id);
	ctx->nsectors = le64_to_cpu(rsp->nsectors);
	/* The checks write there in turn. */
	return ctx->nsectors < 16 * BAD_IO_SECTORS ? -ENOSPC : 0;
}

static void bad_shared_put(struct bad_ctx *ctx)
{
	if (!ctx->shared)
		return;
	bad_path_free(ctx->shared);
	ctx->shared = NULL;
	kfree(ctx->buf);
	ctx->buf = NULL;
}

/* Its path up and @device open through RNBD; a note says why not. */
static int bad_shared_up(struct bad_ctx *ctx, bool last_try)
{
	struct bad_path *p;
	int err;

	p = bad_path_up(&ctx->t, BAD_SESSNAME);
	if (IS_ERR(p)) {
		if (last_try)
			bad_note(ctx, "cannot open the shared session: %ld",
				 PTR_ERR(p));
		return PTR_ERR(p);
	}
	ctx->shared = p;
	ctx->buf = kzalloc(p->chunk_size, GFP_KERNEL);
	if (!ctx->buf) {
		bad_shared_put(ctx);
		return -ENOMEM;
	}
	err = bad_shared_sess_info(ctx);
	if (!err)
		err = bad_shared_open(ctx);
	if (err) {
		if (last_try)
			bad_note(ctx, "the shared session cannot open %s: %d",
				 bad_device, err);
		bad_shared_put(ctx);
	}
	return err;
}

/*
 * The shared session, opened for the first case, and again for the case
 * after one it broke in.  Until the server has closed the broken one, it
 * refuses a session of the same name and a second writer of @device: try
 * again for as long as an answer may take.
 */
static int bad_shared_get(struct bad_ctx *ctx)
{
	unsigned long end = jiffies + msecs_to_jiffies(ctx->t.timeout_ms);
	bool last_try;
	int err;

	if (ctx->shared)
		return 0;
	do {
		last_try = !ctx->broke || time_after(jiffies, end);
		err = bad_shared_up(ctx, last_try);
		if (err && !last_try)
			msleep(100);
	} while (err && !last_try);
	if (err)
		return err;
	ctx->last = NULL;
	ctx->broke = false;
	return 0;
}

/*
 * When the shared session broke, a note says so and how; it is closed, and
 * the next case opens another.  @when says which case is to blame.
 */
static bool bad_shared_broken(struct bad_ctx *ctx, const char *when)
{
	struct bad_path *p = ctx->shared;

	if (!bad_path_broken(p))
		return false;
	if (READ_ONCE(p->closed))
		bad_note(ctx, "the shared session broke %s: the server disconnected it",
			 when);
	else
		bad_note(ctx, "the shared session broke %s: a work request failed: %s",
			 when, ib_wc_status_msg(READ_ONCE(p->wc_err)));
	bad_shared_put(ctx);
	ctx->broke = true;
	return true;
}

/*
 * Before a case: the shared session broke after the last case that ran with
 * it had ended (a server may close a path some time after the message that
 * made it do so), or before any case ran with it.
 */
static bool bad_shared_broke_before(struct bad_ctx *ctx)
{
	char when[96];

	if (!ctx->shared)
		return false;
	if (ctx->last)
		snprintf(when, sizeof(when), "after the previous case, %s, ended",
			 ctx->last);
	else
		strscpy(when, "after it opened, before any case ran with it",
			sizeof(when));
	return bad_shared_broken(ctx, when);
}

/* The shared session writes a block and reads it back. */
static int bad_good_io(struct bad_ctx *ctx)
{
	u64 sector = ctx->good_sector;
	struct rnbd_msg_io m;
	struct bad_req r;
	struct bad_rsp rsp;
	int err;

	ctx->good_sector = (sector + BAD_IO_SECTORS) % (16 * BAD_IO_SECTORS);
	get_random_bytes(ctx->pattern, sizeof(ctx->pattern));
	bad_rnbd_io(ctx, &m, RNBD_OP_WRITE, sector, BAD_IO_SIZE);
	bad_req_write(ctx, &r, ctx->pattern, BAD_IO_SIZE, &m, sizeof(m));
	err = bad_submit(ctx, &r, &rsp) ?: rsp.errno;
	if (err)
		return err;
	bad_rnbd_io(ctx, &m, RNBD_OP_READ, sector, BAD_IO_SIZE);
	bad_req_read(ctx, &r, &m, sizeof(m), BAD_IO_SIZE);
	err = bad_submit(ctx, &r, &rsp) ?: rsp.errno;
	if (err)
		return err;
	return memcmp(ctx->shared->rbuf->buf, ctx->pattern, BAD_IO_SIZE) ?
		-EILSEQ : 0;
}

/* The cases */

/**
 * struct bad_case - a malformed message and what the server must do
 * @name: its name in debugfs
 * @expect: what the server must do, for people
 * @run: runs it
 * @conreq: spoils a valid CON_REQ (bad_run_conreq)
 * @msg: builds a SEND on the admin connection into the buffer, returns
 *	 its length (bad_run_info, bad_run_admin)
 * @build: builds a request of the shared session; -EOPNOTSUPP skips
 *	   (bad_run_rsp)
 * @err: the errno the server must reject or answer with
 */
struct bad_case {
	const char *name;
	const char *expect;
	enum bad_verdict (*run)(struct bad_ctx *ctx, const struct bad_case *c);
	void (*conreq)(struct rtrs_msg_conn_req *req);
	size_t (*msg)(struct bad_path *p, u8 *buf);
	int (*build)(struct bad_ctx *ctx, struct bad_req *r);
	int err;
};

static struct bad_path *bad_case_path(struct bad_ctx *ctx)
{
	char name[NAME_MAX];

	snprintf(name, sizeof(name), BAD_SESSNAME "-%u", ++ctx->seq);
	return bad_path_alloc(&ctx->t, name);
}

static enum bad_verdict bad_expect_reject(struct bad_ctx *ctx, int err,
					  struct bad_con *con, int want)
{
	if (err == -ECONNREFUSED && con->reject_errno == want) {
		bad_note(ctx, "rejected with errno %d", want);
		return BAD_PASS;
	}
	if (!err)
		bad_note(ctx, "the server accepted the connection");
	else if (con->reject_errno == -want)
		bad_note(ctx, "rejected with errno +%d: Linux's client wants -%d",
			 want, want);
	else
		bad_note(ctx, "connect failed with %d, reject errno %d, not %d",
			 err, con->reject_errno, want);
	return BAD_FAIL;
}

static enum bad_verdict bad_expect_closed(struct bad_ctx *ctx,
					  struct bad_path *p)
{
	if (bad_path_wait_closed(p)) {
		bad_note(ctx, "the server did not close the path in %u ms",
			 ctx->t.timeout_ms);
		return BAD_FAIL;
	}
	bad_note(ctx, "the server closed the path");
	return BAD_PASS;
}

/* A first connection with a spoiled CON_REQ. */
static enum bad_verdict bad_run_conreq(struct bad_ctx *ctx,
				       const struct bad_case *c)
{
	struct rtrs_msg_conn_req req;
	enum bad_verdict v;
	struct bad_path *p;
	int err;

	p = bad_case_path(ctx);
	if (!p)
		return BAD_FAIL;
	bad_conn_req_init(p, &req, 0);
	c->conreq(&req);
	err = bad_con_connect(p, 0, &req);
	v = bad_expect_reject(ctx, err, &p->bad_cons[0], c->err);
	bad_path_free(p);
	return v;
}

/* All connections up, then a SEND in place of INFO_REQ. */
static enum bad_verdict bad_run_info(struct bad_ctx *ctx,
				     const struct bad_case *c)
{
	enum bad_verdict v = BAD_FAIL;
	struct bad_path *p;
	int err;

	p = bad_case_path(ctx);
	if (!p)
		return BAD_FAIL;
	err = bad_path_connect(p);
	if (!err)
		err = bad_path_send(p, 0, ctx->buf, c->msg(p, ctx->buf));
	if (err)
		bad_note(ctx, "could not send: %d", err);
	else
		v = bad_expect_closed(ctx, p);
	bad_path_free(p);
	return v;
}

/* A path up, its INFO exchange done. */
static struct bad_path *bad_case_path_up(struct bad_ctx *ctx)
{
	char name[NAME_MAX];
	struct bad_path *p;

	snprintf(name, sizeof(name), BAD_SESSNAME "-%u", ++ctx->seq);
	p = bad_path_up(&ctx->t, name);
	if (IS_ERR(p)) {
		bad_note(ctx, "could not open a session: %ld", PTR_ERR(p));
		return NULL;
	}
	return p;
}

/* A path up, then a SEND on its admin connection. */
static enum bad_verdict bad_run_admin(struct bad_ctx *ctx,
				      const struct bad_case *c)
{
	enum bad_verdict v = BAD_FAIL;
	struct bad_path *p;
	int err;

	p = bad_case_path_up(ctx);
	if (!p)
		return BAD_FAIL;
	err = bad_path_send(p, 0, ctx->buf, c->msg(p, ctx->buf));
	if (err)
		bad_note(ctx, "could not send: %d", err);
	else
		v = bad_expect_closed(ctx, p);
	bad_path_free(p);
	return v;
}

/* A request of the shared session answered with an errno. */
static enum bad_verdict bad_run_rsp(struct bad_ctx *ctx,
				    const struct bad_case *c)
{
	struct bad_req r = {};
	struct bad_rsp rsp;
	int err;

	err = c->build(ctx, &r);
	if (err == -EOPNOTSUPP)
		return BAD_SKIP;
	err = bad_submit(ctx, &r, &rsp);
	if (err) {
		bad_note(ctx, "no response: %d", err);
		return BAD_FAIL;
	}
	if (rsp.errno != -c->err) {
		bad_note(ctx, "response with errno %d, not %d", rsp.errno,
			 -c->err);
		return BAD_FAIL;
	}
	bad_note(ctx, "response with errno %d", rsp.errno);
	return BAD_PASS;
}

/* CON_REQ spoilers */

static void cr_bad_magic(struct rtrs_msg_conn_req *req)
{
	req->magic = cpu_to_le16(0x0bad);
}

static void cr_bad_version(struct rtrs_msg_conn_req *req)
{
	req->version = cpu_to_le16((RTRS_PROTO_VER_MAJOR + 1) << 8);
}

static void cr_cid_beyond(struct rtrs_msg_conn_req *req)
{
	req->cid = req->cid_num;
}

static void cr_cid_num_zero(struct rtrs_msg_conn_req *req)
{
	req->cid_num = 0;
}

static void cr_cid_num_huge(struct rtrs_msg_conn_req *req)
{
	req->cid_num = cpu_to_le16(U16_MAX);
}

static void cr_not_first(struct rtrs_msg_conn_req *req)
{
	req->flags = 0;
}

/* Connections of one path */

/* cid 0 again, while the path's cid 0 is up. */
static enum bad_verdict bad_run_dup_cid(struct bad_ctx *ctx,
					const struct bad_case *c)
{
	struct rtrs_msg_conn_req req;
	enum bad_verdict v = BAD_FAIL;
	struct bad_path *p;
	int err;

	p = bad_case_path(ctx);
	if (!p)
		return BAD_FAIL;
	bad_conn_req_init(p, &req, 0);
	err = bad_con_connect(p, 0, &req);
	if (err) {
		bad_note(ctx, "first connection failed: %d", err);
		goto out;
	}
	/* The path's second connection slot, with cid 0's request. */
	err = bad_con_connect(p, 1, &req);
	v = bad_expect_reject(ctx, err, &p->bad_cons[1], c->err);
	if (v == BAD_PASS)
		v = bad_expect_closed(ctx, p);
out:
	bad_path_free(p);
	return v;
}

/* cid 1 says the path has another number of connections than cid 0. */
static enum bad_verdict bad_run_cid_num_change(struct bad_ctx *ctx,
					       const struct bad_case *c)
{
	struct rtrs_msg_conn_req req;
	enum bad_verdict v = BAD_FAIL;
	struct bad_path *p;
	int err;

	p = bad_case_path(ctx);
	if (!p)
		return BAD_FAIL;
	bad_conn_req_init(p, &req, 0);
	err = bad_con_connect(p, 0, &req);
	if (err) {
		bad_note(ctx, "first connection failed: %d", err);
		goto out;
	}
	bad_conn_req_init(p, &req, 1);
	req.cid_num = cpu_to_le16(BAD_CLT_CONS + 1);
	err = bad_con_connect(p, 1, &req);
	v = bad_expect_reject(ctx, err, &p->bad_cons[1], c->err);
	if (v == BAD_PASS)
		v = bad_expect_closed(ctx, p);
out:
	bad_path_free(p);
	return v;
}

/* A path of the same uuids connects while the path is up. */
static enum bad_verdict bad_run_path_again(struct bad_ctx *ctx,
					   const struct bad_case *c)
{
	struct rtrs_msg_conn_req req;
	enum bad_verdict v = BAD_FAIL;
	struct bad_path *p, *q;
	int err;

	p = bad_case_path_up(ctx);
	if (!p)
		return BAD_FAIL;
	q = bad_path_alloc(&ctx->t, p->s.sessname);
	if (!q)
		goto out;
	uuid_copy(&q->s.uuid, &p->s.uuid);
	uuid_copy(&q->sess_uuid, &p->sess_uuid);
	bad_conn_req_init(q, &req, 0);
	err = bad_con_connect(q, 0, &req);
	v = bad_expect_reject(ctx, err, &q->bad_cons[0], c->err);
	if (v == BAD_PASS)
		v = bad_expect_closed(ctx, p);
	bad_path_free(q);
out:
	bad_path_free(p);
	return v;
}

/* A second path of a session, between the same two addresses. */
static enum bad_verdict bad_run_path_same_addr(struct bad_ctx *ctx,
					       const struct bad_case *c)
{
	struct rtrs_msg_conn_req req;
	enum bad_verdict v = BAD_FAIL;
	struct bad_path *p, *q;
	int err;

	p = bad_case_path_up(ctx);
	if (!p)
		return BAD_FAIL;
	q = bad_path_alloc(&ctx->t, p->s.sessname);
	if (!q)
		goto out;
	uuid_copy(&q->sess_uuid, &p->sess_uuid);
	bad_conn_req_init(q, &req, 0);
	err = bad_con_connect(q, 0, &req);
	v = bad_expect_reject(ctx, err, &q->bad_cons[0], c->err);
	if (v == BAD_PASS && bad_path_broken(p)) {
		bad_note(ctx, "rejected, but the first path was closed");
		v = BAD_FAIL;
	}
	bad_path_free(q);
out:
	bad_path_free(p);
	return v;
}

/* INFO_REQ and admin messages */

static size_t m_info(struct bad_path *p, u8 *buf, u16 type)
{
	struct rtrs_msg_info_req *req = (void *)buf;

	memset(req, 0, sizeof(*req));
	req->type = cpu_to_le16(type);
	strscpy(req->pathname, p->s.sessname, sizeof(req->pathname));
	return sizeof(*req);
}

static size_t m_info_unterminated(struct bad_path *p, u8 *buf)
{
	struct rtrs_msg_info_req *req = (void *)buf;

	m_info(p, buf, RTRS_MSG_INFO_REQ);
	memset(req->pathname, 'x', sizeof(req->pathname));
	return sizeof(*req);
}

static size_t m_info_empty_name(struct bad_path *p, u8 *buf)
{
	struct rtrs_msg_info_req *req = (void *)buf;

	m_info(p, buf, RTRS_MSG_INFO_REQ);
	req->pathname[0] = '\0';
	return sizeof(*req);
}

/* Longer than the server's receive buffer for it. */
/* sysfs would make it "...!slash", which another session may be named. */
static size_t m_info_slash(struct bad_path *p, u8 *buf)
{
	struct rtrs_msg_info_req *req = (void *)buf;

	m_info(p, buf, RTRS_MSG_INFO_REQ);
	strlcat(req->pathname, "/slash", sizeof(req->pathname));
	return sizeof(*req);
}

static size_t m_info_name(struct bad_path *p, u8 *buf, const char *name)
{
	struct rtrs_msg_info_req *req = (void *)buf;

	m_info(p, buf, RTRS_MSG_INFO_REQ);
	strscpy(req->pathname, name, sizeof(req->pathname));
	return sizeof(*req);
}

/* Names of the sysfs directory itself and of its parent. */
static size_t m_info_dot(struct bad_path *p, u8 *buf)
{
	return m_info_name(p, buf, ".");
}

static size_t m_info_dotdot(struct bad_path *p, u8 *buf)
{
	return m_info_name(p, buf, "..");
}

/* A name that would put a line break into the server's log and sysfs. */
static size_t m_info_control(struct bad_path *p, u8 *buf)
{
	return m_info_name(p, buf, "rtrs-bad-clt\nsession");
}

static size_t m_info_overlong(struct bad_path *p, u8 *buf)
{
	size_t len = 2 * sizeof(struct rtrs_msg_info_req);

	memset(buf, 0, len);
	m_info(p, buf, RTRS_MSG_INFO_REQ);
	return len;
}

static size_t m_info_short(struct bad_path *p, u8 *buf)
{
	m_info(p, buf, RTRS_MSG_INFO_REQ);
	return 8;
}

static size_t m_info_unknown_type(struct bad_path *p, u8 *buf)
{
	return m_info(p, buf, 0x7f);
}

static size_t m_info_again(struct bad_path *p, u8 *buf)
{
	return m_info(p, buf, RTRS_MSG_INFO_REQ);
}

/* A path named as the shared session, which is another session. */
static enum bad_verdict bad_run_dup_sessname(struct bad_ctx *ctx,
					     const struct bad_case *c)
{
	enum bad_verdict v = BAD_FAIL;
	struct bad_path *p;
	int err;

	p = bad_path_alloc(&ctx->t, BAD_SESSNAME);
	if (!p)
		return BAD_FAIL;
	err = bad_path_connect(p);
	if (err) {
		bad_note(ctx, "could not connect: %d", err);
		goto out;
	}
	err = bad_path_info(p);
	if (err != -ECONNRESET) {
		bad_note(ctx, "INFO_REQ answered with %d", err);
		goto out;
	}
	v = bad_expect_closed(ctx, p);
out:
	bad_path_free(p);
	return v;
}

/* An INFO_REQ while connection 1 of the path has not connected. */
static enum bad_verdict bad_run_info_early(struct bad_ctx *ctx,
					   const struct bad_case *c)
{
	struct rtrs_msg_conn_req req;
	enum bad_verdict v = BAD_FAIL;
	struct bad_path *p;
	int err;

	p = bad_case_path(ctx);
	if (!p)
		return BAD_FAIL;
	bad_conn_req_init(p, &req, 0);
	err = bad_con_connect(p, 0, &req);
	if (!err)
		err = bad_path_send(p, 0, ctx->buf,
				    m_info(p, ctx->buf, RTRS_MSG_INFO_REQ));
	if (err)
		bad_note(ctx, "could not send: %d", err);
	else
		v = bad_expect_closed(ctx, p);
	bad_path_free(p);
	return v;
}

/*
 * Paths whose connection 1 joins while the server closes them, and the
 * step of the delay between the start of its connect and the disconnect
 * of connection 0: the later the disconnect, the likelier the server has
 * taken connection 1 by then.
 */
#define BAD_JOIN_ROUNDS		16
#define BAD_JOIN_STEP_US	250

/* How connection 1 of a path that closed ended. */
enum bad_join {
	BAD_JOIN_REFUSED,
	BAD_JOIN_CLOSED,
	/* a heartbeat on it found no peer: the server rejected it late */
	BAD_JOIN_GONE,
	BAD_JOIN_ENDS,
};

/*
 * Connection 1 of a path starts to connect, and connection 0 disconnects
 * @delay_us later: the server, closing the path, refuses connection 1 or
 * takes it and closes it with the path.  If it stays up, a heartbeat on it
 * must find it gone, or make the server close it: a server that kept it
 * sees a malformed message of a closing path.  How it ended, or -1 with a
 * note.
 */
static int bad_join_closing_path(struct bad_ctx *ctx, unsigned int delay_us)
{
	struct rtrs_msg_conn_req req;
	struct bad_path *p;
	int err, ret = -1;

	p = bad_case_path(ctx);
	if (!p)
		return -1;
	bad_conn_req_init(p, &req, 0);
	err = bad_con_connect(p, 0, &req);
	if (err) {
		bad_note(ctx, "connection 0 failed: %d", err);
		goto out;
	}
	bad_conn_req_init(p, &req, 1);
	err = bad_con_connect_start(p, 1, &req);
	if (err) {
		bad_note(ctx, "connection 1 did not start: %d", err);
		goto out;
	}
	usleep_range(delay_us, delay_us + 10);
	rdma_disconnect(p->bad_cons[0].c.cm_id);
	err = bad_con_connect_wait(p, 1);
	if (err == -ECONNREFUSED) {
		ret = BAD_JOIN_REFUSED;
		goto out;
	}
	if (err) {
		bad_note(ctx, "connection 1 failed: %d", err);
		goto out;
	}
	err = bad_con_post_imm(p, 1, rtrs_imm(RTRS_HB_MSG_IMM, 0));
	if (err) {
		bad_note(ctx, "could not send the heartbeat: %d", err);
		goto out;
	}
	err = bad_con_wait_closed(p, 1);
	if (err == -ETIMEDOUT)
		bad_note(ctx, "connection 1 joined the closing path and stayed up %u ms",
			 ctx->t.timeout_ms);
	else
		ret = err ? BAD_JOIN_GONE : BAD_JOIN_CLOSED;
out:
	bad_path_free(p);
	return ret;
}

static enum bad_verdict bad_run_join_closing(struct bad_ctx *ctx,
					     const struct bad_case *c)
{
	unsigned int round, ends[BAD_JOIN_ENDS] = {};
	int end;

	for (round = 0; round < BAD_JOIN_ROUNDS; round++) {
		end = bad_join_closing_path(ctx, round * BAD_JOIN_STEP_US);
		if (end < 0)
			return BAD_FAIL;
		ends[end]++;
	}
	bad_note(ctx, "%u paths: connection 1 refused in %u, closed with it in %u, gone in %u",
		 round, ends[BAD_JOIN_REFUSED], ends[BAD_JOIN_CLOSED],
		 ends[BAD_JOIN_GONE]);
	return BAD_PASS;
}

/* A path whose admin connection alone came: not up, and never to be. */
static struct bad_path *bad_half_open_path(struct bad_ctx *ctx, int *err)
{
	struct rtrs_msg_conn_req req;
	struct bad_path *p;

	p = bad_case_path(ctx);
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	bad_conn_req_init(p, &req, 0);
	*err = bad_con_connect(p, 0, &req);
	return p;
}

/*
 * Paths whose admin connection comes, and no other: the server takes
 * max_half_open_paths of them at most (the module's half_open; fewer when
 * paths of earlier cases are still not closed), refuses the next with
 * EBUSY, closes those it took after half_open_timeout_ms, and then takes
 * a new one.
 */
static enum bad_verdict bad_run_half_open(struct bad_ctx *ctx,
					  const struct bad_case *c)
{
	struct bad_path *p[BAD_HALF_OPEN_MAX + 2] = {};
	enum bad_verdict v = BAD_FAIL;
	unsigned int i, n;
	int err = 0;

	for (n = 0; n <= bad_half_open && !err; n++)
		p[n] = bad_half_open_path(ctx, &err);
	if (!err) {
		bad_note(ctx, "%u paths not up taken, max_half_open_paths is %u",
			 n, bad_half_open);
		goto out;
	}
	if (err != -ECONNREFUSED || p[n - 1]->bad_cons[0].reject_errno != EBUSY) {
		bad_note(ctx, "path %u failed with %d, reject errno %d, not EBUSY",
			 n, err, p[n - 1] ? p[n - 1]->bad_cons[0].reject_errno : 0);
		goto out;
	}
	for (i = 0; i < n - 1; i++)
		if (bad_path_wait_closed(p[i])) {
			bad_note(ctx, "path %u of %u not up was not closed in %u ms",
				 i + 1, n - 1, ctx->t.timeout_ms);
			goto out;
		}
	p[n] = bad_half_open_path(ctx, &err);
	if (err) {
		bad_note(ctx, "once they were closed, a new path failed: %d", err);
		goto out;
	}
	bad_note(ctx, "%u paths not up taken, the next refused, all closed in time, then one taken",
		 n - 1);
	v = BAD_PASS;
out:
	for (i = 0; i < ARRAY_SIZE(p); i++)
		if (p[i])
			bad_path_free(p[i]);
	return v;
}

/* Bare IMMs: heartbeats and requests, before the path is up or after */

/* A bare IMM on connection @cid, and the server must close the path. */
static enum bad_verdict bad_imm_then_closed(struct bad_ctx *ctx,
					    struct bad_path *p,
					    unsigned int cid, u32 imm)
{
	int err = bad_con_post_imm(p, cid, imm);

	if (err) {
		bad_note(ctx, "could not send the IMM: %d", err);
		return BAD_FAIL;
	}
	return bad_expect_closed(ctx, p);
}

static u32 imm_hb_msg(struct bad_path *p)
{
	return rtrs_imm(RTRS_HB_MSG_IMM, 0);
}

static u32 imm_hb_ack(struct bad_path *p)
{
	return rtrs_imm(RTRS_HB_ACK_IMM, 0);
}

static u32 imm_first_chunk(struct bad_path *p)
{
	return bad_io_imm(p, 0, 0);
}

/* Connection 1 alone: the server has no connection 0 to answer on. */
static enum bad_verdict bad_run_hb_no_admin(struct bad_ctx *ctx,
					    const struct bad_case *c)
{
	struct rtrs_msg_conn_req req;
	enum bad_verdict v = BAD_FAIL;
	struct bad_path *p;
	int err;

	p = bad_case_path(ctx);
	if (!p)
		return BAD_FAIL;
	bad_conn_req_init(p, &req, 1);
	err = bad_con_connect(p, 1, &req);
	if (err)
		bad_note(ctx, "connection 1 failed: %d", err);
	else
		v = bad_imm_then_closed(ctx, p, 1, imm_hb_msg(p));
	bad_path_free(p);
	return v;
}

/* All connections, no INFO exchange yet, then an IMM made from the path. */
static enum bad_verdict bad_run_early_imm(struct bad_ctx *ctx,
					  unsigned int cid,
					  u32 (*imm)(struct bad_path *p))
{
	enum bad_verdict v = BAD_FAIL;
	struct bad_path *p;
	int err;

	p = bad_case_path(ctx);
	if (!p)
		return BAD_FAIL;
	err = bad_path_connect(p);
	if (err)
		bad_note(ctx, "could not connect: %d", err);
	else
		v = bad_imm_then_closed(ctx, p, cid, imm(p));
	bad_path_free(p);
	return v;
}

static enum bad_verdict bad_run_hb_before_info(struct bad_ctx *ctx,
					       const struct bad_case *c)
{
	return bad_run_early_imm(ctx, 0, imm_hb_msg);
}

static enum bad_verdict bad_run_io_before_info(struct bad_ctx *ctx,
					       const struct bad_case *c)
{
	return bad_run_early_imm(ctx, 1, imm_first_chunk);
}

/* A path up, then an IMM made from the path on connection @cid. */
static enum bad_verdict bad_run_imm(struct bad_ctx *ctx, unsigned int cid,
				    u32 (*imm)(struct bad_path *p))
{
	enum bad_verdict v;
	struct bad_path *p;

	p = bad_case_path_up(ctx);
	if (!p)
		return BAD_FAIL;
	v = bad_imm_then_closed(ctx, p, cid, imm(p));
	bad_path_free(p);
	return v;
}

/* Heartbeats and their answers belong on connection 0. */
static enum bad_verdict bad_run_hb_msg_io_con(struct bad_ctx *ctx,
					      const struct bad_case *c)
{
	return bad_run_imm(ctx, 1, imm_hb_msg);
}

static enum bad_verdict bad_run_hb_ack_io_con(struct bad_ctx *ctx,
					      const struct bad_case *c)
{
	return bad_run_imm(ctx, 1, imm_hb_ack);
}

static u32 imm_chunk_beyond(struct bad_path *p)
{
	return bad_io_imm(p, p->queue_depth, 0);
}

static enum bad_verdict bad_run_chunk_beyond(struct bad_ctx *ctx,
					     const struct bad_case *c)
{
	unsigned int ids = 1U << (RTRS_IMM_PAYLOAD_BITS -
				  ctx->shared->mem_bits);

	/* A power of two fills the id bits: no larger id can be said. */
	if (ctx->shared->queue_depth >= ids) {
		bad_note(ctx, "queue depth %u: no chunk id beyond it fits the IMM",
			 ctx->shared->queue_depth);
		return BAD_SKIP;
	}
	return bad_run_imm(ctx, 1, imm_chunk_beyond);
}

static u32 imm_unknown_type(struct bad_path *p)
{
	return (u32)7 << RTRS_IMM_PAYLOAD_BITS;
}

static enum bad_verdict bad_run_imm_unknown(struct bad_ctx *ctx,
					    const struct bad_case *c)
{
	return bad_run_imm(ctx, 1, imm_unknown_type);
}

static u32 imm_rsp_type(struct bad_path *p)
{
	return rtrs_io_rsp_imm(0, 0, false);
}

static enum bad_verdict bad_run_imm_rsp(struct bad_ctx *ctx,
					const struct bad_case *c)
{
	return bad_run_imm(ctx, 1, imm_rsp_type);
}

/* 64 bytes RDMA-written at @addr with @rkey: the server must close. */
static enum bad_verdict bad_raw_then_closed(struct bad_ctx *ctx,
					    struct bad_path *p, u64 addr,
					    u32 rkey)
{
	int err;

	memset(ctx->buf, 0x5a, 64);
	err = bad_path_post_raw(p, addr, rkey, ctx->buf, 64);
	if (err) {
		bad_note(ctx, "could not post the write: %d", err);
		return BAD_FAIL;
	}
	return bad_expect_closed(ctx, p);
}

/* An RDMA WRITE that runs over the end of the last chunk. */
static enum bad_verdict bad_run_write_past_chunk(struct bad_ctx *ctx,
						 const struct bad_case *c)
{
	struct bad_chunk *last;
	enum bad_verdict v;
	struct bad_path *p;

	p = bad_case_path_up(ctx);
	if (!p)
		return BAD_FAIL;
	last = &p->chunks[p->queue_depth - 1];
	v = bad_raw_then_closed(ctx, p, last->addr + p->chunk_size - 16,
				last->rkey);
	bad_path_free(p);
	return v;
}

/*
 * An RDMA WRITE into a chunk of the shared session, another session of the
 * server, with its address and its valid rkey.
 */
static enum bad_verdict bad_run_write_other_sess(struct bad_ctx *ctx,
						 const struct bad_case *c)
{
	struct bad_path *shared = ctx->shared;
	struct bad_chunk target;
	unsigned long flags;
	enum bad_verdict v;
	struct bad_path *p;

	p = bad_case_path_up(ctx);
	if (!p)
		return BAD_FAIL;
	spin_lock_irqsave(&shared->lock, flags);
	target = shared->chunks[shared->next_chunk];
	spin_unlock_irqrestore(&shared->lock, flags);
	v = bad_raw_then_closed(ctx, p, target.addr, target.rkey);
	bad_path_free(p);
	return v;
}

/* A READ whose data goes to an rkey this client does not have. */
static enum bad_verdict bad_run_read_bad_rkey(struct bad_ctx *ctx,
					      const struct bad_case *c)
{
	struct rnbd_msg_sess_info msg = {
		.hdr.type = cpu_to_le16(RNBD_MSG_SESS_INFO),
		.ver = RNBD_PROTO_VER_MAJOR,
	};
	struct rtrs_msg_rdma_read *m;
	enum bad_verdict v = BAD_FAIL;
	struct bad_path *p;
	struct bad_req r;
	int err;

	p = bad_case_path_up(ctx);
	if (!p)
		return BAD_FAIL;
	m = bad_req_read(ctx, &r, &msg, sizeof(msg),
			 sizeof(struct rnbd_msg_sess_info_rsp));
	/* Another key of the same registration index. */
	m->desc[0].key = cpu_to_le32(p->dev.pd->unsafe_global_rkey ^ 0x80);
	m->desc[0].addr = cpu_to_le64(p->rbuf->dma_addr);
	err = bad_path_post_io(p, 0, r.buf, r.len, bad_io_imm(p, 0, r.off));
	if (err)
		bad_note(ctx, "could not send: %d", err);
	else
		v = bad_expect_closed(ctx, p);
	bad_path_free(p);
	return v;
}

/* Trailers */

static int b_off_beyond_chunk(struct bad_ctx *ctx, struct bad_req *r)
{
	struct bad_path *p = ctx->shared;

	r->off = p->chunk_size + 64;
	if (r->off >> p->mem_bits) {
		bad_note(ctx, "offset %u does not fit %u bits", r->off,
			 p->mem_bits);
		return -EOPNOTSUPP;
	}
	r->len = 0;
	return 0;
}

static int b_trailer_across_end(struct bad_ctx *ctx, struct bad_req *r)
{
	u32 size = ctx->shared->chunk_size;

	r->buf = ctx->buf;
	memset(r->buf, 0, size);
	*(__le16 *)(r->buf + size - 2) = cpu_to_le16(RTRS_MSG_WRITE);
	r->off = size - 2;
	r->len = size;
	return 0;
}

static struct rtrs_msg_rdma_write *b_good_write(struct bad_ctx *ctx,
						struct bad_req *r)
{
	struct rnbd_msg_io m;

	bad_rnbd_io(ctx, &m, RNBD_OP_WRITE, 0, BAD_IO_SIZE);
	return bad_req_write(ctx, r, NULL, BAD_IO_SIZE, &m, sizeof(m));
}

static struct rtrs_msg_rdma_read *b_good_read(struct bad_ctx *ctx,
					      struct bad_req *r)
{
	struct rnbd_msg_io m;

	bad_rnbd_io(ctx, &m, RNBD_OP_READ, 0, BAD_IO_SIZE);
	return bad_req_read(ctx, r, &m, sizeof(m), BAD_IO_SIZE);
}

static int b_trailer_unknown_type(struct bad_ctx *ctx, struct bad_req *r)
{
	b_good_write(ctx, r)->type = cpu_to_le16(0x55);
	return 0;
}

static int b_write_usr_len_beyond_off(struct bad_ctx *ctx, struct bad_req *r)
{
	b_good_write(ctx, r)->usr_len = cpu_to_le16(r->off + 16);
	return 0;
}

static int b_write_usr_len_beyond_max(struct bad_ctx *ctx, struct bad_req *r)
{
	struct bad_path *p = ctx->shared;
	size_t usr_len = p->max_hdr_size + 512;
	struct rnbd_msg_io *m;

	if (usr_len + sizeof(struct rtrs_msg_rdma_write) > p->chunk_size) {
		bad_note(ctx, "no room for a header over %u bytes",
			 p->max_hdr_size);
		return -EOPNOTSUPP;
	}
	memset(ctx->buf, 0, usr_len);
	m = (void *)ctx->buf;
	bad_rnbd_io(ctx, m, RNBD_OP_FLUSH, 0, 0);
	bad_req_write(ctx, r, NULL, 0, ctx->buf, usr_len);
	return 0;
}

static int b_read_usr_len_beyond_off(struct bad_ctx *ctx, struct bad_req *r)
{
	b_good_read(ctx, r)->usr_len = cpu_to_le16(r->off + 8);
	return 0;
}

static int b_read_sg_cnt_huge(struct bad_ctx *ctx, struct bad_req *r)
{
	b_good_read(ctx, r)->sg_cnt = cpu_to_le16(U16_MAX);
	return 0;
}

static int b_read_sg_cnt_two(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rtrs_msg_rdma_read *m = b_good_read(ctx, r);

	m->sg_cnt = cpu_to_le16(2);
	m->desc[1] = m->desc[0];
	r->len += sizeof(m->desc[0]);
	return 0;
}

/* RNBD wants the data a READ of 4 KiB asks for. */
static int b_read_sg_cnt_zero(struct bad_ctx *ctx, struct bad_req *r)
{
	b_good_read(ctx, r)->sg_cnt = 0;
	r->len -= sizeof(struct rtrs_sg_desc);
	return 0;
}

static int b_read_desc_len_beyond(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rtrs_msg_rdma_read *m = b_good_read(ctx, r);

	m->desc[0].len = cpu_to_le32(ctx->shared->chunk_size + BAD_IO_SIZE);
	return 0;
}

static int b_read_unknown_flags(struct bad_ctx *ctx, struct bad_req *r)
{
	b_good_read(ctx, r)->flags = cpu_to_le16(0x8000);
	return 0;
}

/* The trailer fits the chunk, its descriptor does not. */
static int b_read_desc_past_chunk(struct bad_ctx *ctx, struct bad_req *r)
{
	u32 size = ctx->shared->chunk_size;
	struct rtrs_msg_rdma_read *m;
	struct rnbd_msg_io io;

	bad_rnbd_io(ctx, &io, RNBD_OP_READ, 0, BAD_IO_SIZE);
	r->buf = ctx->buf;
	memset(r->buf, 0, size);
	r->off = size - sizeof(*m);
	memcpy(r->buf + r->off - sizeof(io), &io, sizeof(io));
	m = (void *)(r->buf + r->off);
	m->type = cpu_to_le16(RTRS_MSG_READ);
	m->usr_len = cpu_to_le16(sizeof(io));
	m->sg_cnt = cpu_to_le16(1);
	r->len = size;
	return 0;
}

/* RNBD */

static int b_io_unknown_device(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_io m;

	bad_rnbd_io(ctx, &m, RNBD_OP_READ, 0, BAD_IO_SIZE);
	m.device_id = cpu_to_le32(ctx->device_id + 1000);
	bad_req_read(ctx, r, &m, sizeof(m), BAD_IO_SIZE);
	return 0;
}

static int b_write_rw(struct bad_ctx *ctx, struct bad_req *r, u32 rw)
{
	struct rnbd_msg_io m;

	bad_rnbd_io(ctx, &m, rw, 0, BAD_IO_SIZE);
	bad_req_write(ctx, r, NULL, BAD_IO_SIZE, &m, sizeof(m));
	return 0;
}

static int b_io_unknown_op(struct bad_ctx *ctx, struct bad_req *r)
{
	return b_write_rw(ctx, r, RNBD_OP_MASK);
}

static int b_io_unknown_flags(struct bad_ctx *ctx, struct bad_req *r)
{
	return b_write_rw(ctx, r, RNBD_OP_WRITE | BIT(31));
}

static int b_read_at(struct bad_ctx *ctx, struct bad_req *r, u64 sector)
{
	struct rnbd_msg_io m;

	bad_rnbd_io(ctx, &m, RNBD_OP_READ, sector, BAD_IO_SIZE);
	bad_req_read(ctx, r, &m, sizeof(m), BAD_IO_SIZE);
	return 0;
}

static int b_io_beyond_device(struct bad_ctx *ctx, struct bad_req *r)
{
	return b_read_at(ctx, r, ctx->nsectors - BAD_IO_SECTORS / 2);
}

static int b_io_sector_overflow(struct bad_ctx *ctx, struct bad_req *r)
{
	return b_read_at(ctx, r, U64_MAX - BAD_IO_SECTORS / 2);
}

static int b_io_unaligned(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_io m;

	bad_rnbd_io(ctx, &m, RNBD_OP_WRITE, 0, 1000);
	bad_req_write(ctx, r, NULL, 1000, &m, sizeof(m));
	return 0;
}

static int b_write_size_mismatch(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_io m;

	bad_rnbd_io(ctx, &m, RNBD_OP_WRITE, 0, 2 * BAD_IO_SIZE);
	bad_req_write(ctx, r, NULL, BAD_IO_SIZE, &m, sizeof(m));
	return 0;
}

static int b_read_len_mismatch(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_io m;

	bad_rnbd_io(ctx, &m, RNBD_OP_READ, 0, BAD_IO_SIZE);
	bad_req_read(ctx, r, &m, sizeof(m), 2 * BAD_IO_SIZE);
	return 0;
}

static int b_io_short_header(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_io m;

	bad_rnbd_io(ctx, &m, RNBD_OP_WRITE, 0, BAD_IO_SIZE);
	bad_req_write(ctx, r, NULL, BAD_IO_SIZE, &m, 16);
	return 0;
}

static int b_flush_with_size(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_io m;

	bad_rnbd_io(ctx, &m, RNBD_OP_FLUSH, 0, BAD_IO_SIZE);
	bad_req_write(ctx, r, NULL, 0, &m, sizeof(m));
	return 0;
}

static int b_msg_unknown_type(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_io m;

	bad_rnbd_io(ctx, &m, RNBD_OP_READ, 0, 0);
	m.hdr.type = cpu_to_le16(0x99);
	bad_req_write(ctx, r, NULL, 0, &m, sizeof(m));
	return 0;
}

static int b_close_unknown_device(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_close m = {
		.hdr.type = cpu_to_le16(RNBD_MSG_CLOSE),
		.device_id = cpu_to_le32(ctx->device_id + 1000),
	};

	bad_req_write(ctx, r, NULL, 0, &m, sizeof(m));
	return 0;
}

static int b_open(struct bad_ctx *ctx, struct bad_req *r,
		  const struct rnbd_msg_open *m, u32 rlen)
{
	bad_req_read(ctx, r, m, sizeof(*m), rlen);
	return 0;
}

static int b_open_unterminated(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_open m;

	bad_rnbd_open_msg(&m, bad_device);
	memset(m.dev_name, 'a', sizeof(m.dev_name));
	return b_open(ctx, r, &m, sizeof(struct rnbd_msg_open_rsp));
}

static int b_open_escape(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_open m;

	bad_rnbd_open_msg(&m, "../");
	strlcat((char *)m.dev_name, bad_device, sizeof(m.dev_name));
	return b_open(ctx, r, &m, sizeof(struct rnbd_msg_open_rsp));
}

static int b_open_bad_mode(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_open m;

	bad_rnbd_open_msg(&m, bad_device);
	m.access_mode = 9;
	return b_open(ctx, r, &m, sizeof(struct rnbd_msg_open_rsp));
}

static int b_open_missing(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_open m;

	bad_rnbd_open_msg(&m, "/dev/" BAD_SESSNAME "-no-such-device");
	return b_open(ctx, r, &m, sizeof(struct rnbd_msg_open_rsp));
}

static int b_open_twice(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_open m;

	bad_rnbd_open_msg(&m, bad_device);
	return b_open(ctx, r, &m, sizeof(struct rnbd_msg_open_rsp));
}

static int b_open_short_rsp(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_open m;

	bad_rnbd_open_msg(&m, bad_device);
	return b_open(ctx, r, &m, 8);
}

static int b_sess_info_short_rsp(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_sess_info m = {
		.hdr.type = cpu_to_le16(RNBD_MSG_SESS_INFO),
		.ver = RNBD_PROTO_VER_MAJOR,
	};

	bad_req_read(ctx, r, &m, sizeof(m), 8);
	return 0;
}

/* A read of the shared session with its I/O priority. */
static int b_read_prio(struct bad_ctx *ctx, struct bad_req *r, u16 prio)
{
	struct rnbd_msg_io m;

	bad_rnbd_io(ctx, &m, RNBD_OP_READ, 0, BAD_IO_SIZE);
	m.prio = cpu_to_le16(prio);
	bad_req_read(ctx, r, &m, sizeof(m), BAD_IO_SIZE);
	return 0;
}

/* Class 7 is no class: the block layer's tables end before it. */
static int b_io_prio_bad_class(struct bad_ctx *ctx, struct bad_req *r)
{
	return b_read_prio(ctx, r, IOPRIO_PRIO_VALUE(7, 0));
}

static int b_io_prio_none_level(struct bad_ctx *ctx, struct bad_req *r)
{
	return b_read_prio(ctx, r, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_NONE, 3));
}

/* Served, as best effort: a client does not get real time on the server. */
static int b_io_prio_rt(struct bad_ctx *ctx, struct bad_req *r)
{
	return b_read_prio(ctx, r, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_RT, 0));
}

static int b_read_fua(struct bad_ctx *ctx, struct bad_req *r)
{
	struct rnbd_msg_io m;

	bad_rnbd_io(ctx, &m, RNBD_OP_READ | RNBD_F_FUA, 0, BAD_IO_SIZE);
	bad_req_read(ctx, r, &m, sizeof(m), BAD_IO_SIZE);
	return 0;
}

/* Ops without data: the header alone. */
static int b_no_data(struct bad_ctx *ctx, struct bad_req *r, u32 rw)
{
	struct rnbd_msg_io m;

	bad_rnbd_io(ctx, &m, rw, 0, BAD_IO_SIZE);
	bad_req_write(ctx, r, NULL, 0, &m, sizeof(m));
	return 0;
}

static int b_discard_preflush(struct bad_ctx *ctx, struct bad_req *r)
{
	return b_no_data(ctx, r, RNBD_OP_DISCARD | RNBD_F_PREFLUSH);
}

static int b_write_zeroes_fua(struct bad_ctx *ctx, struct bad_req *r)
{
	return b_no_data(ctx, r, RNBD_OP_WRITE_ZEROES | RNBD_F_FUA);
}

/*
 * The shared session closes its device and opens it again: the new id is
 * not the old one, which a client that missed a force_close still uses.
 */
static enum bad_verdict bad_run_reopen(struct bad_ctx *ctx,
				       const struct bad_case *c)
{
	struct rnbd_msg_close m = {
		.hdr.type = cpu_to_le16(RNBD_MSG_CLOSE),
		.device_id = cpu_to_le32(ctx->device_id),
	};
	u32 old = ctx->device_id;
	struct bad_req r;
	struct bad_rsp rsp;
	int err;

	bad_req_write(ctx, &r, NULL, 0, &m, sizeof(m));
	err = bad_submit(ctx, &r, &rsp) ?: rsp.errno;
	if (err) {
		bad_note(ctx, "CLOSE of device %u failed: %d", old, err);
		return BAD_FAIL;
	}
	err = bad_shared_open(ctx);
	if (err) {
		bad_note(ctx, "OPEN after the CLOSE failed: %d", err);
		return BAD_FAIL;
	}
	if (ctx->device_id == old) {
		bad_note(ctx, "the device got its old id %u again", old);
		return BAD_FAIL;
	}
	bad_note(ctx, "device %u is now %u", old, ctx->device_id);
	return BAD_PASS;
}

/*
 * Rounds of the OPEN against CLOSE race, CLOSEs sent in each, and the
 * step of the gap between two CLOSEs, wider each round.
 */
#define BAD_RACE_ROUNDS		16
#define BAD_RACE_CLOSES		24
#define BAD_RACE_GAP_US		25

/**
 * struct bad_sent - a request in flight beside others
 * @chunk: the chunk it went into
 * @seen: the path's responses before it went
 */
struct bad_sent {
	u32 chunk;
	unsigned int seen;
};

/* Post @r in @p's next chunk on connection @cid, not waiting for it. */
static int bad_post(struct bad_path *p, unsigned int cid,
		    const struct bad_req *r, struct bad_sent *sent)
{
	sent->chunk = bad_path_take_chunk(p);
	sent->seen = bad_path_rsp_cnt(p);
	return bad_con_post_io(p, cid, sent->chunk, r->buf, r->len,
			       bad_io_imm(p, sent->chunk, r->off));
}

static int bad_wait_sent(struct bad_path *p, const struct bad_sent *sent,
			 int *errno)
{
	return bad_path_wait_chunk(p, sent->chunk, sent->seen, errno);
}

/* An OPEN of @name, read-only (beside the shared session's writer). */
static int bad_post_open(struct bad_ctx *ctx, struct bad_path *p,
			 const char *name, struct bad_sent *sent)
{
	struct rnbd_msg_open m;
	struct bad_req r;

	bad_rnbd_open_msg(&m, name);
	m.access_mode = RNBD_ACCESS_RO;
	bad_req_read_on(ctx, p, &r, &m, sizeof(m),
			sizeof(struct rnbd_msg_open_rsp));
	return bad_post(p, 1, &r, sent);
}

/* Open @name read-only on @p: its device id, or a negative errno. */
static int bad_open_on(struct bad_ctx *ctx, struct bad_path *p,
		       const char *name)
{
	const struct rnbd_msg_open_rsp *rsp = p->rbuf->buf;
	struct bad_sent sent;
	int err, e = 0;

	err = bad_post_open(ctx, p, name, &sent) ?:
	      bad_wait_sent(p, &sent, &e);
	if (err || e)
		return err ?: e;
	if (le16_to_cpu(rsp->hdr.type) != RNBD_MSG_OPEN_RSP)
		return -EPROTO;
	return le32_to_cpu(rsp->device_id);
}

/*
 * An RDMA WRITE into the chunk of a READ the server is serving, with the
 * chunk's rkey: the server (always_invalidate=Y) invalidated that rkey
 * when the READ came, and the slow device holds the READ for seconds.
 */
static enum bad_verdict bad_run_write_chunk_in_use(struct bad_ctx *ctx,
						   const struct bad_case *c)
{
	struct bad_chunk chunk;
	struct rnbd_msg_io m;
	enum bad_verdict v;
	struct bad_sent io;
	struct bad_path *p;
	struct bad_req r;
	int id, err;

	if (!bad_slow_device) {
		bad_note(ctx, "no slow_device given");
		return BAD_SKIP;
	}
	p = bad_case_path_up(ctx);
	if (!p)
		return BAD_FAIL;
	id = bad_open_on(ctx, p, bad_slow_device);
	if (id < 0) {
		bad_note(ctx, "could not open %s: %d", bad_slow_device, id);
		v = BAD_FAIL;
		goto out;
	}
	bad_rnbd_io(ctx, &m, RNBD_OP_READ, 0, BAD_IO_SIZE);
	m.device_id = cpu_to_le32(id);
	bad_req_read_on(ctx, p, &r, &m, sizeof(m), BAD_IO_SIZE);
	err = bad_post(p, 1, &r, &io);
	if (err) {
		bad_note(ctx, "could not send the READ: %d", err);
		v = BAD_FAIL;
		goto out;
	}
	msleep(BAD_IN_USE_WAIT_MS);
	spin_lock_irq(&p->lock);
	chunk = p->chunks[io.chunk];
	spin_unlock_irq(&p->lock);
	v = bad_raw_then_closed(ctx, p, chunk.addr, chunk.rkey);
out:
	bad_path_free(p);
	return v;
}

/**
 * struct bad_race - CLOSEs that go while an OPEN is served
 * @work: sends their IMMs from another CPU than the OPEN's
 * @p: the path
 * @off: the trailer's offset in each CLOSE's chunk
 * @gap_us: between two IMMs
 * @close: the CLOSEs, written into their chunks beforehand
 * @n: how many IMMs went; the work's until it is flushed
 * @err: why one could not go, else 0
 */
struct bad_race {
	struct work_struct work;
	struct bad_path *p;
	u32 off;
	unsigned int gap_us;
	struct bad_sent close[BAD_RACE_CLOSES];
	unsigned int n;
	int err;
};

/* Each CLOSE is in its chunk already: an IMM each, not waiting. */
static void bad_race_closes(struct work_struct *work)
{
	struct bad_race *r = container_of(work, struct bad_race, work);
	unsigned int i;
	int err = 0;

	for (i = 0; i < BAD_RACE_CLOSES && !err; i++) {
		r->close[i].seen = bad_path_rsp_cnt(r->p);
		err = bad_con_post_imm(r->p, 0, bad_io_imm(r->p,
							   r->close[i].chunk,
							   r->off));
		/* The OPEN goes once the first CLOSE has. */
		smp_store_release(&r->n, i + 1);
		udelay(r->gap_us);
	}
	r->err = err;
}

static void bad_close_req(struct bad_ctx *ctx, struct bad_req *r, u32 id)
{
	struct rnbd_msg_close m = {
		.hdr.type = cpu_to_le16(RNBD_MSG_CLOSE),
		.device_id = cpu_to_le32(id),
	};

	bad_req_write(ctx, r, NULL, 0, &m, sizeof(m));
}

/* The CLOSE of @id written into a chunk for each IMM to come. */
static int bad_race_stage(struct bad_ctx *ctx, struct bad_race *r, u32 id)
{
	struct bad_path *p = r->p;
	struct bad_req req;
	unsigned int i;
	int err = 0;

	bad_close_req(ctx, &req, id);
	r->off = req.off;
	for (i = 0; i < BAD_RACE_CLOSES && !err; i++) {
		struct bad_chunk chunk;

		r->close[i].chunk = bad_path_take_chunk(p);
		spin_lock_irq(&p->lock);
		chunk = p->chunks[r->close[i].chunk];
		spin_unlock_irq(&p->lock);
		err = bad_path_post_raw(p, chunk.addr, chunk.rkey, req.buf,
					req.len);
	}
	return err ?: bad_path_wait_sent(p);
}

/*
 * The CLOSEs' IMMs from another CPU, and the OPEN among them: Soft-RoCE
 * hands a message to the server on the CPU that sent it, where the
 * server's completion work then runs, so that the OPEN and the CLOSEs are
 * served side by side.
 */
static int bad_race_go(struct bad_ctx *ctx, struct bad_race *r,
		       struct bad_sent *open)
{
	unsigned int cpu, other;
	int err;

	INIT_WORK_ONSTACK(&r->work, bad_race_closes);
	cpu = get_cpu();
	other = cpumask_next(cpu, cpu_online_mask);
	if (other >= nr_cpu_ids)
		other = cpumask_first(cpu_online_mask);
	put_cpu();
	queue_work_on(other, system_highpri_wq, &r->work);
	/* Pairs with the work's release: the first IMM has gone. */
	while (!smp_load_acquire(&r->n))
		usleep_range(10, 20);
	err = bad_post_open(ctx, r->p, bad_device, open);
	flush_work(&r->work);
	destroy_work_on_stack(&r->work);
	return err ?: r->err;
}

/*
 * One round: CLOSEs of the id an OPEN is to get on the admin connection,
 * and the OPEN on the IO connection after the first.  The CLOSEs that come
 * before the device is set up find nothing; one that comes after closes
 * it.  Then a last CLOSE must find the device where the answers say it
 * is.  The number of CLOSEs that closed it, or -1 with a note; @missed
 * counts those that found nothing (a connection's requests are served in
 * order).
 */
static int bad_race_round(struct bad_ctx *ctx, struct bad_path *p, u32 id,
			  unsigned int gap_us, unsigned int *missed)
{
	struct bad_race race = { .p = p, .gap_us = gap_us };
	const struct rnbd_msg_open_rsp *rsp = p->rbuf->buf;
	struct bad_sent open, last;
	struct bad_req req;
	unsigned int i;
	int err, e, closed = 0;

	err = bad_race_stage(ctx, &race, id) ?:
	      bad_race_go(ctx, &race, &open) ?: bad_wait_sent(p, &open, &e);
	if (err || e) {
		bad_note(ctx, "id %u: OPEN failed: %d", id, err ?: e);
		return -1;
	}
	if (le16_to_cpu(rsp->hdr.type) != RNBD_MSG_OPEN_RSP ||
	    le32_to_cpu(rsp->device_id) != id) {
		bad_note(ctx, "OPEN gave device %u, not the next id %u",
			 le32_to_cpu(rsp->device_id), id);
		return -1;
	}
	for (i = 0; i < race.n; i++) {
		err = bad_wait_sent(p, &race.close[i], &e);
		if (err || (e && e != -EINVAL)) {
			bad_note(ctx, "id %u: CLOSE %u of %u failed: %d", id,
				 i + 1, race.n, err ?: e);
			return -1;
		}
		closed += !e;
		*missed += !closed;
	}
	bad_close_req(ctx, &req, id);
	err = bad_post(p, 0, &req, &last) ?: bad_wait_sent(p, &last, &e);
	if (closed > 1 || err || e != (closed ? -EINVAL : 0)) {
		bad_note(ctx, "id %u: %d of %u CLOSEs closed it, then a CLOSE answered %d",
			 id, closed, race.n, err ?: e);
		return -1;
	}
	return closed;
}

/*
 * A session opens a device while it sends CLOSEs of the id the device is
 * to get (ids go in order): none may find the device before the OPEN
 * has set it up, and the device is closed once at most.
 */
static enum bad_verdict bad_run_close_while_open(struct bad_ctx *ctx,
						 const struct bad_case *c)
{
	unsigned int round, missed = 0;
	enum bad_verdict v = BAD_PASS;
	struct bad_path *p;
	int closed;

	p = bad_case_path_up(ctx);
	if (!p)
		return BAD_FAIL;
	for (round = 0; round < BAD_RACE_ROUNDS; round++) {
		closed = bad_race_round(ctx, p, round,
					(round + 1) * BAD_RACE_GAP_US, &missed);
		if (closed < 0) {
			v = BAD_FAIL;
			break;
		}
	}
	if (v == BAD_PASS)
		bad_note(ctx, "%u rounds, %u CLOSEs found no device yet",
			 round, missed);
	bad_path_free(p);
	return v;
}

/*
 * SESS_INFO into a READ buffer of a block, in a chunk whose last request
 * wrote a block of 0xa5: what the server sends beyond its answer must not
 * be what that request left there.
 */
static enum bad_verdict bad_run_stale(struct bad_ctx *ctx,
				      const struct bad_case *c)
{
	struct rnbd_msg_sess_info msg = {
		.hdr.type = cpu_to_le16(RNBD_MSG_SESS_INFO),
		.ver = RNBD_PROTO_VER_MAJOR,
	};
	size_t i, from = sizeof(struct rnbd_msg_sess_info_rsp);
	u32 chunk = bad_path_take_chunk(ctx->shared);
	const u8 *got = ctx->shared->rbuf->buf;
	struct rnbd_msg_io m;
	struct bad_req r;
	struct bad_rsp rsp;
	int err;

	bad_rnbd_io(ctx, &m, RNBD_OP_WRITE, ctx->good_sector, BAD_IO_SIZE);
	bad_req_write(ctx, &r, NULL, BAD_IO_SIZE, &m, sizeof(m));
	err = bad_submit_to(ctx, chunk, &r, &rsp) ?: rsp.errno;
	if (err) {
		bad_note(ctx, "the write failed: %d", err);
		return BAD_FAIL;
	}
	memset(ctx->shared->rbuf->buf, 0xee, BAD_IO_SIZE);
	bad_req_read(ctx, &r, &msg, sizeof(msg), BAD_IO_SIZE);
	err = bad_submit_to(ctx, chunk, &r, &rsp) ?: rsp.errno;
	if (err) {
		bad_note(ctx, "SESS_INFO failed: %d", err);
		return BAD_FAIL;
	}
	for (i = from; i < BAD_IO_SIZE; i++)
		if (got[i] == 0xa5)
			break;
	if (i < BAD_IO_SIZE) {
		bad_note(ctx, "byte %zu of the answer is the last request's", i);
		return BAD_FAIL;
	}
	bad_note(ctx, "no byte of the last request came back");
	return BAD_PASS;
}

#define CONREQ(n, fn, e) \
	{ .name = n, .expect = "connection rejected with " #e, \
	  .run = bad_run_conreq, .conreq = fn, .err = e }
#define CLOSE(n, fn) \
	{ .name = n, .expect = "path closed", .run = fn }
#define REJECT_CLOSE(n, fn, e) \
	{ .name = n, .expect = "connection rejected with " #e ", path closed", \
	  .run = fn, .err = e }
#define INFO(n, fn) \
	{ .name = n, .expect = "path closed", .run = bad_run_info, .msg = fn }
#define ADMIN(n, fn) \
	{ .name = n, .expect = "path closed", .run = bad_run_admin, .msg = fn }
#define RSP(n, fn, e) \
	{ .name = n, .expect = "response with -" #e ", path up", \
	  .run = bad_run_rsp, .build = fn, .err = e }

static const struct bad_case bad_cases[] = {
	CONREQ("conreq-bad-magic", cr_bad_magic, EPROTONOSUPPORT),
	CONREQ("conreq-bad-version", cr_bad_version, EPROTONOSUPPORT),
	CONREQ("conreq-cid-beyond-cid-num", cr_cid_beyond, EINVAL),
	CONREQ("conreq-cid-num-zero", cr_cid_num_zero, EINVAL),
	CONREQ("conreq-cid-num-huge", cr_cid_num_huge, EINVAL),
	CONREQ("conreq-unknown-session-not-first", cr_not_first, ENXIO),
	REJECT_CLOSE("conreq-duplicate-cid", bad_run_dup_cid, EEXIST),
	REJECT_CLOSE("conreq-cid-num-changes", bad_run_cid_num_change, EAGAIN),
	REJECT_CLOSE("conreq-path-up-again", bad_run_path_again, EAGAIN),
	{ .name = "conreq-second-path-same-addr",
	  .expect = "connection rejected with EEXIST, first path up",
	  .run = bad_run_path_same_addr, .err = EEXIST },
	INFO("info-unterminated-name", m_info_unterminated),
	INFO("info-empty-name", m_info_empty_name),
	INFO("info-name-with-slash", m_info_slash),
	INFO("info-overlong", m_info_overlong),
	INFO("info-short", m_info_short),
	INFO("info-unknown-type", m_info_unknown_type),
	INFO("info-name-dot", m_info_dot),
	INFO("info-name-dotdot", m_info_dotdot),
	INFO("info-name-control-char", m_info_control),
	CLOSE("info-duplicate-sessname", bad_run_dup_sessname),
	CLOSE("info-before-all-connections", bad_run_info_early),
	{ .name = "limit-half-open",
	  .expect = "max_half_open_paths at most, the next refused with EBUSY, closed in time",
	  .run = bad_run_half_open },
	{ .name = "conn-joins-closing-path",
	  .expect = "connection refused, or closed with its path",
	  .run = bad_run_join_closing },
	CLOSE("hb-without-admin-connection", bad_run_hb_no_admin),
	CLOSE("hb-before-info", bad_run_hb_before_info),
	CLOSE("hb-on-io-connection", bad_run_hb_msg_io_con),
	CLOSE("hb-ack-on-io-connection", bad_run_hb_ack_io_con),
	CLOSE("imm-io-before-info", bad_run_io_before_info),
	ADMIN("admin-second-info-req", m_info_again),
	ADMIN("admin-unknown-type", m_info_unknown_type),
	CLOSE("imm-chunk-beyond-queue-depth", bad_run_chunk_beyond),
	CLOSE("imm-unknown-type", bad_run_imm_unknown),
	CLOSE("imm-response-type", bad_run_imm_rsp),
	CLOSE("rdma-write-past-chunk", bad_run_write_past_chunk),
	CLOSE("read-desc-bad-rkey", bad_run_read_bad_rkey),
	CLOSE("rdma-write-other-session-chunk", bad_run_write_other_sess),
	CLOSE("rdma-write-chunk-in-use", bad_run_write_chunk_in_use),
	RSP("trailer-offset-beyond-chunk", b_off_beyond_chunk, EINVAL),
	RSP("trailer-across-chunk-end", b_trailer_across_end, EINVAL),
	RSP("trailer-unknown-type", b_trailer_unknown_type, EINVAL),
	RSP("write-usr-len-beyond-offset", b_write_usr_len_beyond_off, EINVAL),
	RSP("write-usr-len-beyond-max-hdr", b_write_usr_len_beyond_max, EINVAL),
	RSP("read-usr-len-beyond-offset", b_read_usr_len_beyond_off, EINVAL),
	RSP("read-sg-cnt-huge", b_read_sg_cnt_huge, EINVAL),
	RSP("read-sg-cnt-two", b_read_sg_cnt_two, EINVAL),
	RSP("read-sg-cnt-zero", b_read_sg_cnt_zero, EINVAL),
	RSP("read-desc-len-beyond-chunk", b_read_desc_len_beyond, EINVAL),
	RSP("read-unknown-flags", b_read_unknown_flags, EINVAL),
	RSP("read-desc-past-chunk", b_read_desc_past_chunk, EINVAL),
	RSP("rnbd-io-unknown-device", b_io_unknown_device, EINVAL),
	RSP("rnbd-io-unknown-op", b_io_unknown_op, EINVAL),
	RSP("rnbd-io-unknown-flags", b_io_unknown_flags, EINVAL),
	RSP("rnbd-io-beyond-device", b_io_beyond_device, EINVAL),
	RSP("rnbd-io-sector-overflow", b_io_sector_overflow, EINVAL),
	RSP("rnbd-io-unaligned-size", b_io_unaligned, EINVAL),
	RSP("rnbd-write-size-mismatch", b_write_size_mismatch, EINVAL),
	RSP("rnbd-read-size-mismatch", b_read_len_mismatch, EINVAL),
	RSP("rnbd-io-short-header", b_io_short_header, EINVAL),
	RSP("rnbd-flush-with-size", b_flush_with_size, EINVAL),
	RSP("rnbd-unknown-msg-type", b_msg_unknown_type, EINVAL),
	RSP("rnbd-close-unknown-device", b_close_unknown_device, EINVAL),
	RSP("rnbd-open-unterminated-name", b_open_unterminated, EINVAL),
	RSP("rnbd-open-escaping-path", b_open_escape, EINVAL),
	RSP("rnbd-open-bad-access-mode", b_open_bad_mode, EINVAL),
	RSP("rnbd-open-missing-device", b_open_missing, ENOENT),
	RSP("rnbd-open-twice", b_open_twice, EEXIST),
	RSP("rnbd-open-short-response", b_open_short_rsp, EINVAL),
	RSP("rnbd-sess-info-short-response", b_sess_info_short_rsp, EINVAL),
	RSP("rnbd-io-prio-bad-class", b_io_prio_bad_class, EINVAL),
	RSP("rnbd-io-prio-none-with-level", b_io_prio_none_level, EINVAL),
	{ .name = "rnbd-io-prio-realtime", .expect = "response with 0, path up",
	  .run = bad_run_rsp, .build = b_io_prio_rt },
	RSP("rnbd-read-fua", b_read_fua, EINVAL),
	RSP("rnbd-discard-preflush", b_discard_preflush, EINVAL),
	RSP("rnbd-write-zeroes-fua", b_write_zeroes_fua, EINVAL),
	{ .name = "rnbd-reopen-new-id",
	  .expect = "a device closed and opened again gets a new id",
	  .run = bad_run_reopen },
	{ .name = "rnbd-close-while-open",
	  .expect = "a CLOSE of an id being opened finds nothing, answers -EINVAL",
	  .run = bad_run_close_while_open },
	{ .name = "rnbd-sess-info-no-stale-bytes",
	  .expect = "answer with no byte of the chunk's last request",
	  .run = bad_run_stale },
};

/*
 * Whatever the case did, the server still serves the others: a case that
 * passes ends with IO of the shared session, and a case that ran (did not
 * skip) fails when the shared session broke while it ran.  Not the case
 * after it: that one fails when it broke between the two (a server that
 * closes the path some time after the message that made it do so), and
 * its note names the case to blame.
 */
static enum bad_verdict bad_run_case(struct bad_ctx *ctx,
				     const struct bad_case *c)
{
	enum bad_verdict v;
	bool broke_before;
	size_t len;
	int err;

	ctx->note[0] = '\0';
	broke_before = bad_shared_broke_before(ctx);
	if (bad_shared_get(ctx))
		return BAD_FAIL;
	if (broke_before)
		bad_note(ctx, "a new one opened");
	len = strlen(ctx->note);
	v = c->run(ctx, c);
	if (v == BAD_SKIP) {
		if (strlen(ctx->note) == len)
			bad_note(ctx, "not possible against this server");
		return broke_before ? BAD_FAIL : BAD_SKIP;
	}
	if (v == BAD_PASS) {
		err = bad_good_io(ctx);
		if (err) {
			bad_note(ctx, "then the shared session's IO failed: %d",
				 err);
			v = BAD_FAIL;
		}
	}
	if (bad_shared_broken(ctx, "during this case"))
		return BAD_FAIL;
	if (v == BAD_PASS)
		bad_note(ctx, "the shared session still serves");
	ctx->last = c->name;
	return broke_before ? BAD_FAIL : v;
}

static const struct bad_case *bad_find_case(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad_cases); i++)
		if (!strcmp(bad_cases[i].name, name))
			return &bad_cases[i];
	return NULL;
}

/* debugfs */

static const char *const bad_verdict_str[] = {
	[BAD_PASS] = "pass",
	[BAD_FAIL] = "fail",
	[BAD_SKIP] = "skip",
};

static ssize_t bad_run_write(struct file *file, const char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	const struct bad_case *c;
	enum bad_verdict v;
	char name[64];

	if (count >= sizeof(name))
		return -EINVAL;
	if (copy_from_user(name, ubuf, count))
		return -EFAULT;
	name[count] = '\0';
	c = bad_find_case(strim(name));
	if (!c) {
		pr_err("no case '%s'\n", strim(name));
		return -EINVAL;
	}
	if (mutex_lock_interruptible(&bad_mutex))
		return -EINTR;
	v = bad_run_case(bad_ctx, c);
	snprintf(bad_result, sizeof(bad_result), "%s %s: %s\n",
		 bad_verdict_str[v], c->name, bad_ctx->note);
	pr_info("%s", bad_result);
	mutex_unlock(&bad_mutex);
	return v == BAD_FAIL ? -EIO : count;
}

static const struct file_operations bad_run_fops = {
	.owner = THIS_MODULE,
	.write = bad_run_write,
	.llseek = noop_llseek,
};

static ssize_t bad_result_read(struct file *file, char __user *ubuf,
			       size_t count, loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&bad_mutex);
	ret = simple_read_from_buffer(ubuf, count, ppos, bad_result,
				      strlen(bad_result));
	mutex_unlock(&bad_mutex);
	return ret;
}

static const struct file_operations bad_result_fops = {
	.owner = THIS_MODULE,
	.read = bad_result_read,
	.llseek = default_llseek,
};

/* The fuzzer */

/* The shared session still serves: 0, else why not. */
static int bad_fuzz_check(void *arg)
{
	struct bad_ctx *ctx = arg;

	if (bad_path_broken(ctx->shared))
		return -ECONNRESET;
	return bad_good_io(ctx);
}

static void bad_fuzz_result(struct bad_ctx *ctx, const struct bad_fuzz_cfg *cfg,
			    const struct bad_fuzz_stats *st, int err)
{
	if (!err) {
		snprintf(bad_result, sizeof(bad_result),
			 "pass fuzz: seed %llu: %lu messages in %u ms, %lu requests answered, %lu connections refused, %lu paths, %lu closed by the server; the shared session still serves\n",
			 cfg->seed, st->msgs, st->ms, st->answered,
			 st->refused, st->paths, st->closed);
		return;
	}
	if (!ctx->note[0])
		bad_note(ctx, "could not run: %d", err);
	snprintf(bad_result, sizeof(bad_result), "fail fuzz: seed %llu: %s\n",
		 cfg->seed, ctx->note);
}

/*
 * "<seed> <count> <time_ms>": a fuzz run, beside the shared session that
 * must serve throughout.  Its result is read from result, as a case's.
 */
static ssize_t bad_fuzz_write(struct file *file, const char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	struct bad_fuzz_cfg cfg = {
		.device = bad_device,
		.check = bad_fuzz_check,
		.arg = bad_ctx,
	};
	struct bad_ctx *ctx = bad_ctx;
	struct bad_fuzz_stats st = {};
	char line[64];
	int err;

	if (count >= sizeof(line))
		return -EINVAL;
	if (copy_from_user(line, ubuf, count))
		return -EFAULT;
	line[count] = '\0';
	if (sscanf(line, "%llu %lu %u", &cfg.seed, &cfg.count,
		   &cfg.time_ms) != 3 || !cfg.count || !cfg.time_ms) {
		pr_err("fuzz: write '<seed> <count> <time_ms>', not '%s'\n",
		       strim(line));
		return -EINVAL;
	}
	if (mutex_lock_interruptible(&bad_mutex))
		return -EINTR;
	ctx->note[0] = '\0';
	err = bad_shared_get(ctx);
	if (!err)
		err = bad_fuzz(&ctx->t, &cfg, &st, ctx->note,
			       sizeof(ctx->note));
	if (ctx->shared && bad_shared_broken(ctx, "during the fuzz run"))
		err = err ?: -ECONNRESET;
	ctx->last = "the fuzz run";
	bad_fuzz_result(ctx, &cfg, &st, err);
	pr_info("%s", bad_result);
	mutex_unlock(&bad_mutex);
	return err ? -EIO : count;
}

static const struct file_operations bad_fuzz_fops = {
	.owner = THIS_MODULE,
	.write = bad_fuzz_write,
};

static int bad_cases_show(struct seq_file *m, void *v)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad_cases); i++)
		seq_printf(m, "%s\t%s\n", bad_cases[i].name,
			   bad_cases[i].expect);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(bad_cases);

/* Module */

static int bad_check_params(struct bad_target *t)
{
	if (!bad_server || !bad_device || !bad_device[0]) {
		pr_err("server= and device= are needed\n");
		return -EINVAL;
	}
	if (bad_timeout_ms < 100 || bad_timeout_ms > 600000) {
		pr_err("timeout_ms must be 100 to 600000, got %u\n",
		       bad_timeout_ms);
		return -EINVAL;
	}
	if (!bad_half_open || bad_half_open > BAD_HALF_OPEN_MAX) {
		pr_err("half_open must be 1 to %u, got %u\n",
		       BAD_HALF_OPEN_MAX, bad_half_open);
		return -EINVAL;
	}
	if (strlen(bad_device) >= NAME_MAX) {
		pr_err("device must be shorter than %d characters\n", NAME_MAX);
		return -EINVAL;
	}
	t->addr.src = &t->src;
	t->addr.dst = &t->dst;
	t->timeout_ms = bad_timeout_ms;
	return rtrs_addr_to_sockaddr(bad_server, strlen(bad_server), bad_port,
				     &t->addr);
}

static int __init bad_init(void)
{
	int err;

	bad_ctx = kzalloc(sizeof(*bad_ctx), GFP_KERNEL);
	if (!bad_ctx)
		return -ENOMEM;
	err = bad_check_params(&bad_ctx->t);
	if (err) {
		kfree(bad_ctx);
		return err;
	}
	bad_debugfs = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("cases", 0444, bad_debugfs, NULL, &bad_cases_fops);
	debugfs_create_file("run", 0200, bad_debugfs, NULL, &bad_run_fops);
	debugfs_create_file("fuzz", 0200, bad_debugfs, NULL, &bad_fuzz_fops);
	debugfs_create_file("result", 0400, bad_debugfs, NULL,
			    &bad_result_fops);
	return 0;
}

static void __exit bad_exit(void)
{
	/* Waits for a case that is running. */
	debugfs_remove_recursive(bad_debugfs);
	bad_shared_put(bad_ctx);
	kfree(bad_ctx);
}

module_init(bad_init);
module_exit(bad_exit);

MODULE_DESCRIPTION("RTRS test client that sends a server malformed messages");
MODULE_LICENSE("GPL");
