// SPDX-License-Identifier: GPL-2.0-only
/*
 * RNBD server: the admin's access rules, which say which block devices
 * may be opened, by which sessions, from which client addresses and in
 * which access mode.
 *
 * Without a rule the server opens whatever a client names under
 * dev_search_path, as RNBD always did.  Once a rule exists, an OPEN is
 * allowed only when, for each path the session has up, a rule matches
 * the device's full path, the session's name, that path's address and
 * the access mode asked for; a path that joins a session later must be
 * allowed so for every device the session has open.  A device in use on
 * the server (mounted, or opened exclusively) is exported only where the
 * rules that allow it say in_use=allow: else the server holds it
 * exclusively while exported.  Rules changed later do not close what is
 * open: force_close does.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/inet.h>
#include <linux/parser.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <net/ipv6.h>
#include <rdma/ib.h>

#include "rnbd-srv.h"

/* Rules, and how long a device path of a rule may be. */
#define RNBD_SRV_MAX_RULES	64
#define RNBD_SRV_RULE_PATH_MAX	256

enum rnbd_srv_addr_family {
	RNBD_SRV_ADDR_ANY,
	RNBD_SRV_ADDR_IP4,
	RNBD_SRV_ADDR_IP6,
	RNBD_SRV_ADDR_GID,
};

/**
 * struct rnbd_srv_addr - a client address, or a prefix of one
 * @family: what @addr holds
 * @addr: the address, in network order: 4 bytes for IP4, 16 otherwise
 * @prefix: how many leading bits of @addr count
 */
struct rnbd_srv_addr {
	enum rnbd_srv_addr_family family;
	u8 addr[16];
	unsigned int prefix;
};

/**
 * struct rnbd_srv_rule - what one rule allows
 * @entry: in rnbd_srv_rules
 * @path: a device's full path, or, ending in '/', a directory and what
 *	  is under it
 * @sessname: the session's name; empty for any
 * @addr: where every path of the session comes from
 * @max_mode: the widest access mode: RO allows ro; RW ro and rw;
 *	      MIGRATION all three
 * @in_use: the device may be exported while in use on the server
 * @text: the rule as rnbd_srv_rules_show() prints it and access_del
 *	  takes it
 */
struct rnbd_srv_rule {
	struct list_head entry;
	char path[RNBD_SRV_RULE_PATH_MAX];
	char sessname[NAME_MAX];
	struct rnbd_srv_addr addr;
	enum rnbd_access_mode max_mode;
	bool in_use;
	char text[];
};

/* Protects rnbd_srv_rules and rnbd_srv_nr_rules. */
static DEFINE_MUTEX(rnbd_srv_rules_mutex);
static LIST_HEAD(rnbd_srv_rules);
static unsigned int rnbd_srv_nr_rules;

enum {
	RNBD_RULE_PATH,
	RNBD_RULE_SESSNAME,
	RNBD_RULE_ADDR,
	RNBD_RULE_MODE,
	RNBD_RULE_IN_USE,
	RNBD_RULE_ERR,
};

static const match_table_t rnbd_srv_rule_tokens = {
	{ RNBD_RULE_PATH, "path=%s" },
	{ RNBD_RULE_SESSNAME, "sessname=%s" },
	{ RNBD_RULE_ADDR, "addr=%s" },
	{ RNBD_RULE_MODE, "access_mode=%s" },
	{ RNBD_RULE_IN_USE, "in_use=%s" },
	{ RNBD_RULE_ERR, NULL },
};

/* The bits of @a past its prefix cleared, so that equal prefixes read equal. */
static void rnbd_srv_mask_addr(struct rnbd_srv_addr *a)
{
	unsigned int i, bit;

	for (i = 0; i < sizeof(a->addr); i++) {
		bit = i * 8;
		if (bit >= a->prefix)
			a->addr[i] = 0;
		else if (a->prefix - bit < 8)
			a->addr[i] &= 0xff00 >> (a->prefix - bit);
	}
}

/* "ip:<IPv4 or IPv6>[/<prefix>]" or "gid:<GID>[/<prefix>]" */
static int rnbd_srv_parse_addr(const char *str, struct rnbd_srv_addr *a)
{
	const char *slash = strchr(str, '/');
	size_t len = slash ? slash - str : strlen(str);
	unsigned int max;

	if (str_has_prefix(str, "gid:")) {
		str += strlen("gid:");
		len -= strlen("gid:");
		if (!in6_pton(str, len, a->addr, -1, NULL))
			return -EINVAL;
		a->family = RNBD_SRV_ADDR_GID;
	} else if (str_has_prefix(str, "ip:")) {
		str += strlen("ip:");
		len -= strlen("ip:");
		if (in4_pton(str, len, a->addr, -1, NULL))
			a->family = RNBD_SRV_ADDR_IP4;
		else if (in6_pton(str, len, a->addr, -1, NULL))
			a->family = RNBD_SRV_ADDR_IP6;
		else
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	max = a->family == RNBD_SRV_ADDR_IP4 ? 32 : 128;
	a->prefix = max;
	if (slash && (kstrtouint(slash + 1, 10, &a->prefix) ||
		      a->prefix > max))
		return -EINVAL;
	rnbd_srv_mask_addr(a);
	return 0;
}

static int rnbd_srv_parse_mode(const char *str, enum rnbd_access_mode *mode)
{
	enum rnbd_access_mode m;

	for (m = RNBD_ACCESS_RO; m <= RNBD_ACCESS_MIGRATION; m++) {
		if (!strcmp(str, rnbd_access_mode_str(m))) {
			*mode = m;
			return 0;
		}
	}
	return -EINVAL;
}

static int rnbd_srv_parse_path(const char *val, struct rnbd_srv_rule *r)
{
	if (val[0] != '/' || rnbd_srv_path_escapes(val) ||
	    strscpy(r->path, val, sizeof(r->path)) < 0)
		return -EINVAL;
	rnbd_srv_squeeze_slashes(r->path);
	return 0;
}

static int rnbd_srv_parse_in_use(const char *val, bool *in_use)
{
	if (!strcmp(val, "allow"))
		*in_use = true;
	else if (!strcmp(val, "deny"))
		*in_use = false;
	else
		return -EINVAL;
	return 0;
}

/* One "key=value" of a rule into @r; @what says what was wrong. */
static int rnbd_srv_parse_opt(char *opt, struct rnbd_srv_rule *r,
			      const char **what)
{
	substring_t args[MAX_OPT_ARGS];
	int token, err;
	char *val;

	token = match_token(opt, rnbd_srv_rule_tokens, args);
	if (token == RNBD_RULE_ERR) {
		*what = "unknown option or missing value";
		return -EINVAL;
	}
	val = match_strdup(&args[0]);
	if (!val)
		return -ENOMEM;
	switch (token) {
	case RNBD_RULE_PATH:
		*what = "path must be absolute, without '..', shorter than 256";
		err = rnbd_srv_parse_path(val, r);
		break;
	case RNBD_RULE_SESSNAME:
		*what = "sessname is too long";
		err = strscpy(r->sessname, val, sizeof(r->sessname)) < 0 ?
		      -EINVAL : 0;
		break;
	case RNBD_RULE_ADDR:
		*what = "addr must be ip:<address>[/<prefix>] or gid:<GID>[/<prefix>]";
		err = rnbd_srv_parse_addr(val, &r->addr);
		break;
	case RNBD_RULE_MODE:
		*what = "access_mode must be ro, rw or migration";
		err = rnbd_srv_parse_mode(val, &r->max_mode);
		break;
	default:
		*what = "in_use must be allow or deny";
		err = rnbd_srv_parse_in_use(val, &r->in_use);
		break;
	}
	kfree(val);
	return err;
}

/* @r->text: every field, in one order, so that equal rules read equal. */
static int rnbd_srv_rule_text(const struct rnbd_srv_rule *r, char *buf,
			      size_t len)
{
	const struct rnbd_srv_addr *a = &r->addr;
	int n;

	n = scnprintf(buf, len, "path=%s", r->path);
	if (r->sessname[0])
		n += scnprintf(buf + n, len - n, " sessname=%s", r->sessname);
	if (a->family == RNBD_SRV_ADDR_IP4)
		n += scnprintf(buf + n, len - n, " addr=ip:%pI4/%u", a->addr,
			       a->prefix);
	else if (a->family != RNBD_SRV_ADDR_ANY)
		n += scnprintf(buf + n, len - n, " addr=%s:%pI6c/%u",
			       a->family == RNBD_SRV_ADDR_GID ? "gid" : "ip",
			       a->addr, a->prefix);
	n += scnprintf(buf + n, len - n, " access_mode=%s in_use=%s",
		       rnbd_access_mode_str(r->max_mode),
		       r->in_use ? "allow" : "deny");
	return n;
}

/* The longest rule text: the path, the name, an IPv6 prefix, the rest. */
#define RNBD_SRV_RULE_TEXT_MAX	\
	(RNBD_SRV_RULE_PATH_MAX + NAME_MAX + 128)

/* A rule from what was written to access_add or access_del. */
static struct rnbd_srv_rule *rnbd_srv_parse_rule(const char *buf)
{
	struct rnbd_srv_rule *r;
	char *copy, *p, *opt;
	const char *what = NULL;
	int err = 0;

	r = kzalloc(sizeof(*r) + RNBD_SRV_RULE_TEXT_MAX, GFP_KERNEL);
	copy = kstrdup(buf, GFP_KERNEL);
	if (!r || !copy) {
		err = -ENOMEM;
		goto out;
	}
	r->max_mode = RNBD_ACCESS_RW;
	p = copy;
	while ((opt = strsep(&p, " \t\n")) != NULL) {
		if (!*opt)
			continue;
		err = rnbd_srv_parse_opt(opt, r, &what);
		if (err)
			break;
	}
	if (!err && !r->path[0]) {
		what = "path is missing";
		err = -EINVAL;
	}
	if (err == -EINVAL)
		pr_err_ratelimited("access rule '%.*s': %s\n",
				   (int)strcspn(buf, "\n"), buf, what);
	else if (!err)
		rnbd_srv_rule_text(r, r->text, RNBD_SRV_RULE_TEXT_MAX);
out:
	kfree(copy);
	if (err) {
		kfree(r);
		return ERR_PTR(err);
	}
	return r;
}

static struct rnbd_srv_rule *rnbd_srv_find_rule(const char *text)
{
	struct rnbd_srv_rule *r;

	lockdep_assert_held(&rnbd_srv_rules_mutex);
	list_for_each_entry(r, &rnbd_srv_rules, entry)
		if (!strcmp(r->text, text))
			return r;
	return NULL;
}

/**
 * rnbd_srv_rule_add() - add a rule, as written to access_add
 * @buf: the rule
 *
 * Return: 0; -EINVAL for a rule that does not parse, -EEXIST for one that
 * exists, -ENOSPC past RNBD_SRV_MAX_RULES or what rules shows in a page.
 */
int rnbd_srv_rule_add(const char *buf)
{
	struct rnbd_srv_rule *r, *old;
	size_t shown = 0;
	int err = 0;

	r = rnbd_srv_parse_rule(buf);
	if (IS_ERR(r))
		return PTR_ERR(r);
	mutex_lock(&rnbd_srv_rules_mutex);
	if (rnbd_srv_find_rule(r->text)) {
		pr_err_ratelimited("access rule '%s' exists\n", r->text);
		err = -EEXIST;
		goto out;
	}
	list_for_each_entry(old, &rnbd_srv_rules, entry)
		shown += strlen(old->text) + 1;
	if (rnbd_srv_nr_rules >= RNBD_SRV_MAX_RULES ||
	    shown + strlen(r->text) + 1 >= PAGE_SIZE) {
		pr_err_ratelimited("access rule '%s': no room for more rules\n",
				   r->text);
		err = -ENOSPC;
		goto out;
	}
	list_add_tail(&r->entry, &rnbd_srv_rules);
	rnbd_srv_nr_rules++;
	pr_info("access rule added: %s\n", r->text);
	r = NULL;
out:
	mutex_unlock(&rnbd_srv_rules_mutex);
	kfree(r);
	return err;
}

/**
 * rnbd_srv_rule_del() - remove a rule, as written to access_del
 * @buf: the rule, in any form that parses to it
 *
 * What the rule let open stays open.
 *
 * Return: 0, -EINVAL for a rule that does not parse, -ENOENT for one that
 * does not exist.
 */
int rnbd_srv_rule_del(const char *buf)
{
	struct rnbd_srv_rule *r, *old;
	int err = 0;

	r = rnbd_srv_parse_rule(buf);
	if (IS_ERR(r))
		return PTR_ERR(r);
	mutex_lock(&rnbd_srv_rules_mutex);
	old = rnbd_srv_find_rule(r->text);
	if (old) {
		list_del(&old->entry);
		rnbd_srv_nr_rules--;
		pr_info("access rule removed: %s\n", old->text);
		kfree(old);
	} else {
		pr_err_ratelimited("access rule '%s' does not exist\n",
				   r->text);
		err = -ENOENT;
	}
	mutex_unlock(&rnbd_srv_rules_mutex);
	kfree(r);
	return err;
}

/**
 * rnbd_srv_rules_show() - the rules, a line each, as access_rules shows
 * @buf: a sysfs page
 *
 * Return: the bytes written.
 */
ssize_t rnbd_srv_rules_show(char *buf)
{
	struct rnbd_srv_rule *r;
	int n = 0;

	mutex_lock(&rnbd_srv_rules_mutex);
	list_for_each_entry(r, &rnbd_srv_rules, entry)
		n += sysfs_emit_at(buf, n, "%s\n", r->text);
	mutex_unlock(&rnbd_srv_rules_mutex);
	return n;
}

void rnbd_srv_rules_exit(void)
{
	struct rnbd_srv_rule *r, *tmp;

	list_for_each_entry_safe(r, tmp, &rnbd_srv_rules, entry)
		kfree(r);
}

/* A peer's address as a rule's: IPv4 mapped into IPv6 counts as IPv4. */
static void rnbd_srv_peer_addr(const struct sockaddr *sa,
			       struct rnbd_srv_addr *a)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

	memset(a, 0, sizeof(*a));
	switch (sa->sa_family) {
	case AF_INET:
		a->family = RNBD_SRV_ADDR_IP4;
		memcpy(a->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		break;
	case AF_INET6:
		if (ipv6_addr_v4mapped(&sin6->sin6_addr)) {
			a->family = RNBD_SRV_ADDR_IP4;
			memcpy(a->addr, &sin6->sin6_addr.s6_addr32[3], 4);
		} else {
			a->family = RNBD_SRV_ADDR_IP6;
			memcpy(a->addr, &sin6->sin6_addr, 16);
		}
		break;
	case AF_IB:
		a->family = RNBD_SRV_ADDR_GID;
		memcpy(a->addr, &((const struct sockaddr_ib *)sa)->sib_addr, 16);
		break;
	}
}

static bool rnbd_srv_addr_match(const struct rnbd_srv_addr *rule,
				const struct rnbd_srv_addr *peer)
{
	unsigned int bytes = rule->prefix / 8, bits = rule->prefix % 8;

	if (rule->family == RNBD_SRV_ADDR_ANY)
		return true;
	if (rule->family != peer->family ||
	    memcmp(rule->addr, peer->addr, bytes))
		return false;
	return !bits ||
	       !((rule->addr[bytes] ^ peer->addr[bytes]) & (0xff00 >> bits));
}

static bool rnbd_srv_path_match(const struct rnbd_srv_rule *r,
				const char *path)
{
	size_t len = strlen(r->path);

	if (r->path[len - 1] == '/')
		return !strncmp(r->path, path, len) && path[len];
	return !strcmp(r->path, path);
}

/**
 * struct rnbd_srv_access_req - what a session asks, seen by the rules
 * @sess: the session
 * @path: the device's full path, without repeated slashes
 * @mode: the access mode asked for
 * @refused: the address of the first path no rule allowed
 * @in_use: the rules that allow it allow a device in use on the server
 * @peers: how many paths were checked
 */
struct rnbd_srv_access_req {
	struct rnbd_srv_session *sess;
	const char *path;
	enum rnbd_access_mode mode;
	struct sockaddr_storage refused;
	bool in_use;
	unsigned int peers;
};

/*
 * Does a rule allow @req from @peer?  @req->in_use stays only where a rule
 * that allows it says in_use=allow.
 */
static bool rnbd_srv_rules_allow(struct rnbd_srv_access_req *req,
				 const struct sockaddr *peer)
{
	const struct rnbd_srv_rule *r;
	struct rnbd_srv_addr a;
	bool allowed = false, in_use = false;

	lockdep_assert_held(&rnbd_srv_rules_mutex);
	rnbd_srv_peer_addr(peer, &a);
	list_for_each_entry(r, &rnbd_srv_rules, entry) {
		if (!rnbd_srv_path_match(r, req->path) ||
		    (r->sessname[0] && strcmp(r->sessname, req->sess->sessname)) ||
		    req->mode > r->max_mode || !rnbd_srv_addr_match(&r->addr, &a))
			continue;
		allowed = true;
		in_use |= r->in_use;
	}
	req->in_use &= in_use;
	return allowed;
}

static int rnbd_srv_check_peer(const struct sockaddr *peer, void *data)
{
	struct rnbd_srv_access_req *req = data;

	req->peers++;
	if (rnbd_srv_rules_allow(req, peer))
		return 0;
	memcpy(&req->refused, peer, sizeof(req->refused));
	return -EACCES;
}

/**
 * rnbd_srv_access_check() - may the session open the device?
 * @sess: the session; its caller holds @sess->open_mutex
 * @path: the full path the server opens, as rnbd_srv_full_path() made it
 * @mode: the access mode the client asked for
 * @excl: set where the device must be opened exclusively: it may not be
 *	  in use on the server
 *
 * Every path of the session that is up must be allowed by a rule for
 * @path, the session's name and @mode; with no rule, anything is.
 *
 * Return: 0, -EACCES when the rules refuse (logged), -ECONNRESET when the
 * session has no path up.
 */
int rnbd_srv_access_check(struct rnbd_srv_session *sess, const char *path,
			  enum rnbd_access_mode mode, bool *excl)
{
	struct rnbd_srv_access_req req = {
		.sess = sess, .path = path, .mode = mode, .in_use = true,
	};
	int err = 0;

	lockdep_assert_held(&sess->open_mutex);
	mutex_lock(&rnbd_srv_rules_mutex);
	if (rnbd_srv_nr_rules) {
		err = rtrs_srv_visit_peers(sess->rtrs, rnbd_srv_check_peer,
					   &req);
		/* Its last path went: no address to allow. */
		if (!err && !req.peers)
			err = -ECONNRESET;
	}
	mutex_unlock(&rnbd_srv_rules_mutex);
	if (err == -EACCES)
		rnbd_srv_err_rl(sess, "from %pISc: %s %s refused by the access rules\n",
				&req.refused, rnbd_access_mode_str(mode), path);
	*excl = !req.in_use;
	return err;
}

/**
 * rnbd_srv_access_check_peer() - may a new path use a device?
 * @sess: the session; its caller holds @sess->open_mutex
 * @peer: the client's address of the path
 * @path: the full path of a device the session has open
 * @mode: its access mode
 *
 * Return: 0 when a rule (or no rule at all) allows @peer for the device,
 * or -EACCES (logged).
 */
int rnbd_srv_access_check_peer(struct rnbd_srv_session *sess,
			       const struct sockaddr *peer, const char *path,
			       enum rnbd_access_mode mode)
{
	struct rnbd_srv_access_req req = {
		.sess = sess, .path = path, .mode = mode, .in_use = true,
	};
	int err = 0;

	lockdep_assert_held(&sess->open_mutex);
	mutex_lock(&rnbd_srv_rules_mutex);
	if (rnbd_srv_nr_rules && !rnbd_srv_rules_allow(&req, peer))
		err = -EACCES;
	mutex_unlock(&rnbd_srv_rules_mutex);
	if (err)
		rnbd_srv_err_rl(sess, "from %pISc: path refused: no rule allows %s %s\n",
				peer, rnbd_access_mode_str(mode), path);
	return err;
}
