// SPDX-License-Identifier: GPL-2.0-only
/*
 * RTRS client statistics of a path, and their files in
 * /sys/class/rtrs-client/<sessname>/paths/<src@dst>/stats/.
 *
 * The IO counters are per CPU, so that counting an IO touches no line
 * another CPU writes.  A counter is written only by its own CPU, except a
 * CPU's migrations away (migr_from), which the CPU a completion ran on
 * counts: that one is atomic.  Reading sums over the possible CPUs; a reset
 * racing with IO may leave an IO half counted, as upstream's does: these
 * are statistics, not accounting.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kobject.h>
#include <linux/log2.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "rtrs-clt.h"

/*
 * rdma_lat's rows: requests answered in under 1 ms, under 2 ms (and 1 ms
 * or more), under 4 ms, ... under 65536 ms, then the slower ones.
 */
#define RTRS_CLT_LAT_ROWS	18
/* sg_entries' rows: requests of 0 to 16 sg entries, then of more. */
#define RTRS_CLT_SG_ROWS	18

/**
 * struct rtrs_clt_stats_pcpu - what one CPU counted for a path
 * @cnt: requests posted, by direction (READ, WRITE)
 * @bytes: their bytes of user header and data, by direction
 * @sg: requests posted, by their number of sg entries: rows of sg_entries
 * @lat: responses, by direction and the request's latency: rows of rdma_lat
 * @lat_max_ms: the longest latency in ms, by direction
 * @failover: requests this path took over from a failed one
 * @migr_to: responses handled on this CPU to requests submitted on another
 * @migr_from: responses handled on another CPU to requests submitted on
 *	       this one
 */
struct rtrs_clt_stats_pcpu {
	u64 cnt[2];
	u64 bytes[2];
	u64 sg[RTRS_CLT_SG_ROWS];
	u64 lat[2][RTRS_CLT_LAT_ROWS];
	u32 lat_max_ms[2];
	u64 failover;
	int migr_to;
	atomic_t migr_from;
};

/**
 * struct rtrs_clt_stats - the statistics of a path
 * @pcpu: the IO counters
 * @reconnects: reconnects of the path that succeeded
 * @reconnect_fails: reconnect attempts that failed
 */
struct rtrs_clt_stats {
	struct rtrs_clt_stats_pcpu __percpu *pcpu;
	atomic_t reconnects;
	atomic_t reconnect_fails;
};

/**
 * rtrs_clt_stats_alloc() - zeroed statistics for a new path
 *
 * Return: them, or NULL when out of memory.
 */
struct rtrs_clt_stats *rtrs_clt_stats_alloc(void)
{
	struct rtrs_clt_stats *stats;

	stats = kzalloc(sizeof(*stats), GFP_KERNEL);
	if (!stats)
		return NULL;
	stats->pcpu = alloc_percpu(struct rtrs_clt_stats_pcpu);
	if (!stats->pcpu) {
		kfree(stats);
		return NULL;
	}
	return stats;
}

/**
 * rtrs_clt_stats_free() - free a path's statistics
 * @stats: what rtrs_clt_stats_alloc() returned, or NULL
 */
void rtrs_clt_stats_free(struct rtrs_clt_stats *stats)
{
	if (!stats)
		return;
	free_percpu(stats->pcpu);
	kfree(stats);
}

/**
 * rtrs_clt_stats_rdma() - count a request posted on the path
 * @stats: the path's statistics
 * @dir: READ or WRITE
 * @bytes: its user header and data, as upstream counts them
 * @sg_cnt: the sg entries of its data
 *
 * Context: any.
 */
void rtrs_clt_stats_rdma(struct rtrs_clt_stats *stats, int dir, size_t bytes,
			 unsigned int sg_cnt)
{
	unsigned int d = dir == WRITE;

	this_cpu_inc(stats->pcpu->cnt[d]);
	this_cpu_add(stats->pcpu->bytes[d], bytes);
	this_cpu_inc(stats->pcpu->sg[min(sg_cnt, RTRS_CLT_SG_ROWS - 1)]);
}

/**
 * rtrs_clt_stats_latency() - count the response to a request by its latency
 * @stats: the path's statistics
 * @dir: READ or WRITE
 * @ns: from the request's post to its response
 *
 * Context: any.  A maximum raced by a preemption may be lost: statistics.
 */
void rtrs_clt_stats_latency(struct rtrs_clt_stats *stats, int dir, u64 ns)
{
	u32 ms = min_t(u64, div_u64(ns, NSEC_PER_MSEC), U32_MAX);
	unsigned int d = dir == WRITE;

	this_cpu_inc(stats->pcpu->lat[d][ms ? min(ilog2(ms) + 1,
						  RTRS_CLT_LAT_ROWS - 1) : 0]);
	if (ms > this_cpu_read(stats->pcpu->lat_max_ms[d]))
		this_cpu_write(stats->pcpu->lat_max_ms[d], ms);
}

/**
 * rtrs_clt_stats_completion() - count the response to a request where it
 *				 is handled
 * @stats: the path's statistics
 * @submit_cpu: the CPU the request was submitted on (its permit's)
 *
 * A response handled on another CPU than its request's is a migration:
 * from @submit_cpu, to this one.
 *
 * Context: any.
 */
void rtrs_clt_stats_completion(struct rtrs_clt_stats *stats,
			       unsigned int submit_cpu)
{
	unsigned int cpu = get_cpu();

	if (cpu != submit_cpu) {
		this_cpu_inc(stats->pcpu->migr_to);
		atomic_inc(&per_cpu_ptr(stats->pcpu, submit_cpu)->migr_from);
	}
	put_cpu();
}

/**
 * rtrs_clt_stats_failover() - count a request the path took over from a
 *			       failed path
 * @stats: the statistics of the path that took it
 *
 * Context: any.
 */
void rtrs_clt_stats_failover(struct rtrs_clt_stats *stats)
{
	this_cpu_inc(stats->pcpu->failover);
}

/**
 * rtrs_clt_stats_reconnect() - count the end of a reconnect attempt
 * @stats: the path's statistics
 * @ok: the path is up again
 *
 * Only for reconnects: a path's first connection is not one.
 *
 * Context: any.
 */
void rtrs_clt_stats_reconnect(struct rtrs_clt_stats *stats, bool ok)
{
	atomic_inc(ok ? &stats->reconnects : &stats->reconnect_fails);
}

static void rtrs_clt_stats_reset_rdma(struct rtrs_clt_path *path)
{
	struct rtrs_clt_stats *stats = path->stats;
	struct rtrs_clt_stats_pcpu *s;
	int cpu;

	for_each_possible_cpu(cpu) {
		s = per_cpu_ptr(stats->pcpu, cpu);
		memset(s->cnt, 0, sizeof(s->cnt));
		memset(s->bytes, 0, sizeof(s->bytes));
		s->failover = 0;
	}
}

static void rtrs_clt_stats_reset_sg(struct rtrs_clt_path *path)
{
	struct rtrs_clt_stats_pcpu *s;
	int cpu;

	for_each_possible_cpu(cpu) {
		s = per_cpu_ptr(path->stats->pcpu, cpu);
		memset(s->sg, 0, sizeof(s->sg));
	}
}

static void rtrs_clt_stats_reset_lat(struct rtrs_clt_path *path)
{
	struct rtrs_clt_stats_pcpu *s;
	int cpu;

	for_each_possible_cpu(cpu) {
		s = per_cpu_ptr(path->stats->pcpu, cpu);
		memset(s->lat, 0, sizeof(s->lat));
		memset(s->lat_max_ms, 0, sizeof(s->lat_max_ms));
	}
}

static void rtrs_clt_stats_reset_migr(struct rtrs_clt_path *path)
{
	struct rtrs_clt_stats *stats = path->stats;
	struct rtrs_clt_stats_pcpu *s;
	int cpu;

	for_each_possible_cpu(cpu) {
		s = per_cpu_ptr(stats->pcpu, cpu);
		s->migr_to = 0;
		atomic_set(&s->migr_from, 0);
	}
}

static void rtrs_clt_stats_reset_reconnects(struct rtrs_clt_path *path)
{
	struct rtrs_clt_stats *stats = path->stats;

	atomic_set(&stats->reconnects, 0);
	atomic_set(&stats->reconnect_fails, 0);
}

static void rtrs_clt_stats_reset_wr(struct rtrs_clt_path *path)
{
	rtrs_wr_stats_reset(&path->s);
}

static void rtrs_clt_stats_reset_wc(struct rtrs_clt_path *path)
{
	rtrs_wc_stats_reset(&path->s);
}

/*
 * Every counter, and the path's inflight too, as upstream's reset_all
 * does: rtrs-clt.c keeps it from going below zero afterwards.
 */
static void rtrs_clt_stats_reset_all(struct rtrs_clt_path *path)
{
	rtrs_clt_stats_reset_rdma(path);
	rtrs_clt_stats_reset_wr(path);
	rtrs_clt_stats_reset_wc(path);
	rtrs_clt_stats_reset_sg(path);
	rtrs_clt_stats_reset_lat(path);
	rtrs_clt_stats_reset_migr(path);
	rtrs_clt_stats_reset_reconnects(path);
	atomic_set(&path->inflight, 0);
}

/* stats/ is a named group of the path's kobject: kobj is the path's. */

static struct rtrs_clt_path *rtrs_clt_stats_path(struct kobject *kobj)
{
	return container_of(kobj, struct rtrs_clt_path, kobj);
}

/* A stats file's write: "1" resets what @reset resets, nothing else. */
static ssize_t rtrs_clt_stats_store(struct kobject *kobj,
				    struct kobj_attribute *attr,
				    const char *buf, size_t count,
				    void (*reset)(struct rtrs_clt_path *path))
{
	struct rtrs_clt_path *path = rtrs_clt_stats_path(kobj);
	char file[32];
	int err;

	snprintf(file, sizeof(file), "stats/%s", attr->attr.name);
	err = rtrs_sysfs_write_one(&path->s, path->name, file, buf);
	if (err)
		return err;
	reset(path);
	return count;
}

/*
 * rdma: "<reads> <bytes read> <writes> <bytes written> <inflight>
 * <failovers>", upstream's.
 */
static ssize_t rdma_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *page)
{
	struct rtrs_clt_path *path = rtrs_clt_stats_path(kobj);
	struct rtrs_clt_stats_pcpu *s, sum = {};
	int cpu;

	for_each_possible_cpu(cpu) {
		s = per_cpu_ptr(path->stats->pcpu, cpu);
		sum.cnt[READ] += s->cnt[READ];
		sum.bytes[READ] += s->bytes[READ];
		sum.cnt[WRITE] += s->cnt[WRITE];
		sum.bytes[WRITE] += s->bytes[WRITE];
		sum.failover += s->failover;
	}
	return sysfs_emit(page, "%llu %llu %llu %llu %u %llu\n",
			  sum.cnt[READ], sum.bytes[READ], sum.cnt[WRITE],
			  sum.bytes[WRITE], atomic_read(&path->inflight),
			  sum.failover);
}

static ssize_t rdma_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t count)
{
	return rtrs_clt_stats_store(kobj, attr, buf, count,
				    rtrs_clt_stats_reset_rdma);
}

/*
 * sg_entries: a row per number of sg entries, 0 to 16, then ">16": the
 * requests posted with so many, summed over the CPUs (a table per CPU, as
 * the seed's, would not fit a page on a large machine).
 */
static ssize_t sg_entries_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *page)
{
	struct rtrs_clt_stats *stats = rtrs_clt_stats_path(kobj)->stats;
	u64 sum[RTRS_CLT_SG_ROWS] = {};
	int cpu, i, len = 0;

	for_each_possible_cpu(cpu) {
		for (i = 0; i < RTRS_CLT_SG_ROWS; i++)
			sum[i] += per_cpu_ptr(stats->pcpu, cpu)->sg[i];
	}
	for (i = 0; i < RTRS_CLT_SG_ROWS - 1; i++)
		len += sysfs_emit_at(page, len, "%d: %llu\n", i, sum[i]);
	return len + sysfs_emit_at(page, len, ">%d: %llu\n", i - 1, sum[i]);
}

static ssize_t sg_entries_store(struct kobject *kobj,
				struct kobj_attribute *attr, const char *buf,
				size_t count)
{
	return rtrs_clt_stats_store(kobj, attr, buf, count,
				    rtrs_clt_stats_reset_sg);
}

/*
 * rdma_lat: "<N> ms: <reads> <writes>", the requests answered in under N
 * ms (and N/2 or more), N from 1 to 65536; then ">= 65536 ms:" the
 * slower ones, and "maximum ms:" the longest latency of each direction.
 */
static ssize_t rdma_lat_show(struct kobject *kobj,
			     struct kobj_attribute *attr, char *page)
{
	struct rtrs_clt_stats *stats = rtrs_clt_stats_path(kobj)->stats;
	u64 sum[2][RTRS_CLT_LAT_ROWS] = {};
	u32 max[2] = {};
	struct rtrs_clt_stats_pcpu *s;
	int cpu, d, i, len = 0;

	for_each_possible_cpu(cpu) {
		s = per_cpu_ptr(stats->pcpu, cpu);
		for (d = 0; d < 2; d++) {
			for (i = 0; i < RTRS_CLT_LAT_ROWS; i++)
				sum[d][i] += s->lat[d][i];
			max[d] = max(max[d], READ_ONCE(s->lat_max_ms[d]));
		}
	}
	for (i = 0; i < RTRS_CLT_LAT_ROWS - 1; i++)
		len += sysfs_emit_at(page, len, "%u ms: %llu %llu\n", 1U << i,
				     sum[0][i], sum[1][i]);
	len += sysfs_emit_at(page, len, ">= %u ms: %llu %llu\n", 1U << (i - 1),
			     sum[0][i], sum[1][i]);
	return len + sysfs_emit_at(page, len, "maximum ms: %u %u\n", max[0],
				   max[1]);
}

static ssize_t rdma_lat_store(struct kobject *kobj,
			      struct kobj_attribute *attr, const char *buf,
			      size_t count)
{
	return rtrs_clt_stats_store(kobj, attr, buf, count,
				    rtrs_clt_stats_reset_lat);
}

/* reconnects: "<successful> <failed>". */
static ssize_t reconnects_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *page)
{
	struct rtrs_clt_stats *stats = rtrs_clt_stats_path(kobj)->stats;

	return sysfs_emit(page, "%d %d\n", atomic_read(&stats->reconnects),
			  atomic_read(&stats->reconnect_fails));
}

static ssize_t reconnects_store(struct kobject *kobj,
				struct kobj_attribute *attr, const char *buf,
				size_t count)
{
	return rtrs_clt_stats_store(kobj, attr, buf, count,
				    rtrs_clt_stats_reset_reconnects);
}

/*
 * cpu_migration_from and cpu_migration_to: a number per possible CPU,
 * each followed by a space, then a newline, as upstream prints them.
 */
static ssize_t rtrs_clt_stats_show_migr(struct kobject *kobj, char *page,
					bool from)
{
	struct rtrs_clt_stats *stats = rtrs_clt_stats_path(kobj)->stats;
	struct rtrs_clt_stats_pcpu *s;
	int cpu, len = 0;

	for_each_possible_cpu(cpu) {
		s = per_cpu_ptr(stats->pcpu, cpu);
		len += sysfs_emit_at(page, len, "%d ",
				     from ? atomic_read(&s->migr_from) :
					    READ_ONCE(s->migr_to));
	}
	return len + sysfs_emit_at(page, len, "\n");
}

static ssize_t cpu_migration_from_show(struct kobject *kobj,
				       struct kobj_attribute *attr, char *page)
{
	return rtrs_clt_stats_show_migr(kobj, page, true);
}

static ssize_t cpu_migration_to_show(struct kobject *kobj,
				     struct kobj_attribute *attr, char *page)
{
	return rtrs_clt_stats_show_migr(kobj, page, false);
}

/* Either file resets both, as upstream's. */
static ssize_t cpu_migration_from_store(struct kobject *kobj,
					struct kobj_attribute *attr,
					const char *buf, size_t count)
{
	return rtrs_clt_stats_store(kobj, attr, buf, count,
				    rtrs_clt_stats_reset_migr);
}

static ssize_t cpu_migration_to_store(struct kobject *kobj,
				      struct kobj_attribute *attr,
				      const char *buf, size_t count)
{
	return rtrs_clt_stats_store(kobj, attr, buf, count,
				    rtrs_clt_stats_reset_migr);
}

/* wr_counts: "<posted> <reaped>" (rtrs_wr_stats_show()). */
static ssize_t wr_counts_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *page)
{
	return rtrs_wr_stats_show(&rtrs_clt_stats_path(kobj)->s, page);
}

static ssize_t wr_counts_store(struct kobject *kobj,
			       struct kobj_attribute *attr, const char *buf,
			       size_t count)
{
	return rtrs_clt_stats_store(kobj, attr, buf, count,
				    rtrs_clt_stats_reset_wr);
}

/*
 * wc_completion: "<max> <average>", the most completions one poll of the
 * path's CQs reaped and their mean per poll (rtrs_wc_reaped() says what a
 * poll is), rounded.
 */
static ssize_t wc_completion_show(struct kobject *kobj,
				  struct kobj_attribute *attr, char *page)
{
	struct rtrs_wc_stats sum;

	rtrs_wc_stats_sum(&rtrs_clt_stats_path(kobj)->s, &sum);
	return sysfs_emit(page, "%u %llu\n", sum.max,
			  sum.polls ? div64_u64(sum.reaped + sum.polls / 2,
						sum.polls) : 0);
}

static ssize_t wc_completion_store(struct kobject *kobj,
				   struct kobj_attribute *attr,
				   const char *buf, size_t count)
{
	return rtrs_clt_stats_store(kobj, attr, buf, count,
				    rtrs_clt_stats_reset_wc);
}

static ssize_t reset_all_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *page)
{
	return sysfs_emit(page, "echo 1 to reset all statistics\n");
}

static ssize_t reset_all_store(struct kobject *kobj,
			       struct kobj_attribute *attr, const char *buf,
			       size_t count)
{
	return rtrs_clt_stats_store(kobj, attr, buf, count,
				    rtrs_clt_stats_reset_all);
}

static struct kobj_attribute rtrs_clt_stats_rdma_attr =
	__ATTR_RW_MODE(rdma, 0644);
static struct kobj_attribute rtrs_clt_stats_sg_entries_attr =
	__ATTR_RW_MODE(sg_entries, 0644);
static struct kobj_attribute rtrs_clt_stats_rdma_lat_attr =
	__ATTR_RW_MODE(rdma_lat, 0644);
static struct kobj_attribute rtrs_clt_stats_wr_counts_attr =
	__ATTR_RW_MODE(wr_counts, 0644);
static struct kobj_attribute rtrs_clt_stats_wc_completion_attr =
	__ATTR_RW_MODE(wc_completion, 0644);
static struct kobj_attribute rtrs_clt_stats_reconnects_attr =
	__ATTR_RW_MODE(reconnects, 0644);
static struct kobj_attribute rtrs_clt_stats_migr_from_attr =
	__ATTR_RW_MODE(cpu_migration_from, 0644);
static struct kobj_attribute rtrs_clt_stats_migr_to_attr =
	__ATTR_RW_MODE(cpu_migration_to, 0644);
static struct kobj_attribute rtrs_clt_stats_reset_all_attr =
	__ATTR_RW_MODE(reset_all, 0644);

static struct attribute *rtrs_clt_stats_attrs[] = {
	&rtrs_clt_stats_rdma_attr.attr,
	&rtrs_clt_stats_sg_entries_attr.attr,
	&rtrs_clt_stats_rdma_lat_attr.attr,
	&rtrs_clt_stats_wr_counts_attr.attr,
	&rtrs_clt_stats_wc_completion_attr.attr,
	&rtrs_clt_stats_reconnects_attr.attr,
	&rtrs_clt_stats_migr_from_attr.attr,
	&rtrs_clt_stats_migr_to_attr.attr,
	&rtrs_clt_stats_reset_all_attr.attr,
	NULL,
};

/* paths/<src@dst>/stats/, made and removed with the path's directory. */
const struct attribute_group rtrs_clt_stats_group = {
	.name = "stats",
	.attrs = rtrs_clt_stats_attrs,
};
