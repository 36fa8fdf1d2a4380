// SPDX-License-Identifier: GPL-2.0-only
/*
 * RTRS core: what the client and the server side of the transport share.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/inet.h>
#include <linux/module.h>
#include <linux/string.h>
#include <rdma/ib.h>
#include <rdma/rdma_cm.h>

#include "rtrs-pri.h"
#include "rtrs.h"

/*
 * An address is "ip:<IPv4 or IPv6[%scope]>" or "gid:<GID>"; a path is one
 * address or two joined by ',' or '@' (source first).  This bounds the
 * text of a path, both addresses and the separator.
 */
#define RTRS_PATH_STR_MAX	128

static int rtrs_gid_to_sockaddr(const char *gid, u16 port,
				struct sockaddr_storage *ss)
{
	struct sockaddr_ib *sib = (struct sockaddr_ib *)ss;

	if (!in6_pton(gid, -1, sib->sib_addr.sib_raw, -1, NULL))
		return -EINVAL;
	sib->sib_family = AF_IB;
	/* The full-membership default partition, as for any unicast CM. */
	sib->sib_pkey = cpu_to_be16(0xffff);
	sib->sib_sid = cpu_to_be64(RDMA_IB_IP_PS_IB | port);
	sib->sib_sid_mask = cpu_to_be64(~0ULL);
	return 0;
}

static int rtrs_one_addr_to_sockaddr(const char *str, u16 port,
				     struct sockaddr_storage *ss)
{
	char port_str[8];

	memset(ss, 0, sizeof(*ss));
	if (str_has_prefix(str, "gid:"))
		return rtrs_gid_to_sockaddr(str + strlen("gid:"), port, ss);
	if (!str_has_prefix(str, "ip:"))
		return -EINVAL;
	snprintf(port_str, sizeof(port_str), "%u", port);
	return inet_pton_with_scope(&init_net, AF_UNSPEC, str + strlen("ip:"),
				    port_str, ss);
}

/**
 * rtrs_addr_to_sockaddr() - parse the text of a path
 * @str: "[src,]dst" or "[src@]dst", each "ip:<address>" or "gid:<GID>";
 *	 need not be NUL-terminated
 * @len: length of @str
 * @port: destination port (for a GID, the port of the RDMA_PS_IB service id)
 * @addr: where to store both addresses; @addr->src gets family AF_UNSPEC
 *	  when @str names no source
 *
 * Prints one error line naming what it could not parse.
 *
 * Return: 0 on success, -EINVAL when @str is not a valid path.
 */
int rtrs_addr_to_sockaddr(const char *str, size_t len, u16 port,
			  struct rtrs_addr *addr)
{
	char buf[RTRS_PATH_STR_MAX], *dst;

	if (!len || len >= sizeof(buf)) {
		pr_err("path address must be 1 to %zu characters, got %zu\n",
		       sizeof(buf) - 1, len);
		return -EINVAL;
	}
	memcpy(buf, str, len);
	buf[len] = '\0';

	dst = strpbrk(buf, ",@");
	if (dst) {
		*dst++ = '\0';
		if (rtrs_one_addr_to_sockaddr(buf, 0, addr->src)) {
			pr_err("invalid source address '%s'\n", buf);
			return -EINVAL;
		}
	} else {
		dst = buf;
		memset(addr->src, 0, sizeof(*addr->src));
		addr->src->ss_family = AF_UNSPEC;
	}
	if (rtrs_one_addr_to_sockaddr(dst, port, addr->dst)) {
		pr_err("invalid destination address '%s'\n", dst);
		return -EINVAL;
	}
	return 0;
}
EXPORT_SYMBOL_GPL(rtrs_addr_to_sockaddr);

/**
 * rtrs_sockaddr_to_str() - print an address the way rtrs_addr_to_sockaddr()
 *			    reads it
 * @addr: an AF_INET, AF_INET6 or AF_IB address
 * @buf: where to print
 * @len: size of @buf
 *
 * Return: the number of characters printed, or -EINVAL for another family.
 */
int rtrs_sockaddr_to_str(const struct sockaddr *addr, char *buf, size_t len)
{
	const struct sockaddr_ib *sib;

	switch (addr->sa_family) {
	case AF_INET:
	case AF_INET6:
		return scnprintf(buf, len, "ip:%pISc", addr);
	case AF_IB:
		sib = (const struct sockaddr_ib *)addr;
		return scnprintf(buf, len, "gid:%pI6", &sib->sib_addr);
	default:
		return -EINVAL;
	}
}
EXPORT_SYMBOL_GPL(rtrs_sockaddr_to_str);

MODULE_DESCRIPTION("RDMA Transport (RTRS) core");
MODULE_LICENSE("GPL");
