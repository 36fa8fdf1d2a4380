/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel API differences RTRS meets between the kernels the modules
 * build for (Debian's 6.1 and 6.12).  RNBD, which sits on RTRS, has its
 * own in rnbd-compat.h and takes this one too.
 */
#ifndef RTRS_COMPAT_H
#define RTRS_COMPAT_H

#include <linux/version.h>

/*
 * A string field of a tracepoint: 6.10 dropped __assign_str()'s source,
 * which __string() names already.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define rtrs_compat_assign_str(dst, src)	__assign_str(dst)
#else
#define rtrs_compat_assign_str(dst, src)	__assign_str(dst, src)
#endif

#endif /* RTRS_COMPAT_H */
