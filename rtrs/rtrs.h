/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RTRS: RDMA transport, the API offered to its users (ULPs such as RNBD).
 *
 * This header is all a ULP may include from RTRS.
 */
#ifndef RTRS_H
#define RTRS_H

#include <linux/socket.h>
#include <linux/types.h>

/**
 * struct rtrs_addr - the two ends of one path
 * @src: local address to bind to; its family is AF_UNSPEC when the route
 *	 to @dst should choose it
 * @dst: the peer's address
 */
struct rtrs_addr {
	struct sockaddr_storage *src;
	struct sockaddr_storage *dst;
};

int rtrs_addr_to_sockaddr(const char *str, size_t len, u16 port,
			  struct rtrs_addr *addr);
int rtrs_sockaddr_to_str(const struct sockaddr *addr, char *buf, size_t len);

#endif /* RTRS_H */
