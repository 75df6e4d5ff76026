/* SPDX-License-Identifier: ISC */
/*
 * store_maint.c: the store's upkeep between batches, behind one call,
 * store_maint (its schedule below): the checkpoint, keeping the buffer
 * pool clean, the tables' write-back, and the removal of the log files
 * recovery no longer needs (handed to store_trash.c's thread).
 */
#include "config.h"

#include <fcntl.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "store.h"
#include "store_int.h"

#define MAINT_WRITEBACK_MS	250	/* between the keep-clean ticks */
#define MAINT_CLEAN_MS		5	/* between the checkpoint's page steps */
#define MAINT_CLEAN_PAGES	64	/* a step's pages, at least: 1-4 ms */
#define MAINT_SETTLE_MS		100	/* their write-back, before the sync */
#define MAINT_KEEP_PCT		80	/* of the cache kept clean, every tick */
#define MAINT_HYST_PCT		5	/* cleaned beyond it when it is not */

enum { MAINT_IDLE, MAINT_CLEANING, MAINT_SETTLING };

static int	 store_log_prune(struct store *);
static void	 maint_tick(struct store *);
static void	 maint_step(struct store *, uint64_t);

/* Log files no longer needed after this are removed here, not by BDB
 * (no DB_LOG_AUTO_REMOVE): renamed aside and emptied by the trash thread
 * (store_log_prune). */
/* None after a failed sync: it would write the checkpoint record over
 * pages the kernel may have dropped, and let go of the log that recovery
 * needs to write them again (docs/DEPARTURES 12).  A failure that is not a
 * sync's (a page write, the disk full) loses nothing: the pages stay dirty
 * in the cache, no checkpoint record is written, no log file goes. */
int
store_checkpoint(struct store *st)
{
	int ret;

	st->dberr[0] = '\0';
	store_sync_check(st, "before a checkpoint");
	if (st->lost) {
		store_seterr(st, 0, "store %s: no checkpoint until a restart "
		    "runs recovery, after: %s", st->dir, st->lost_why);
		return -1;
	}
	/* None while a backup reads the tables' pages: its sync of the
	 * buffer pool would stall on them (store_backup_pages_take); the
	 * next one comes at its time. */
	if (!store_backup_pages_take(st))
		return 0;
	ret = store_env_checkpoint(st);
	store_backup_pages_give(st);
	if (ret != 0) {
		store_seterr(st, ret, "store %s: checkpoint", st->dir);
		store_sync_check(st, "checkpoint");
		return -1;
	}
	store_sync_check(st, "checkpoint");
	if (st->lost)
		return -1;
	return store_log_prune(st);
}

/* The buffer pool's pages and the dirty ones among them. */
static int
cache_pages(struct store *st, unsigned long *total, unsigned long *dirty)
{
	int ret;

	st->dberr[0] = '\0';
	if ((ret = store_env_cache(st, total, dirty)) != 0) {
		store_seterr(st, ret, "store %s: cache statistics", st->dir);
		return -1;
	}
	if (*dirty > *total)	/* counted while pages changed */
		*dirty = *total;
	return 0;
}

/* memp_trickle to pct per cent clean: the pages written, or -1.  BDB
 * flushes the log first if a lazy commit left some of it unsynced, which
 * the WAL rule needs before any page is written.  That flush's sync is one
 * of those store_sync keeps: its failure loses the store.  A page write
 * that fails (the disk full) is not fatal: the page stays dirty in the
 * cache and the checkpoint writes and syncs it again; a write-back that
 * fails later is reported to the checkpoint's sync of the file. */
static int
trickle(struct store *st, int pct)
{
	int ret, wrote = 0;

	st->dberr[0] = '\0';
	/* Nothing while a backup reads the tables' pages: memp_trickle
	 * would stall on them (store_backup_pages_take). */
	if (!store_backup_pages_take(st))
		return 0;
	ret = store_env_trickle(st, pct, &wrote);
	store_backup_pages_give(st);
	if (ret != 0) {
		store_seterr(st, ret, "store %s: writing cache pages", st->dir);
		return -1;
	}
	return wrote;
}

/*
 * The checkpoint writes every page dirty in the buffer pool and then syncs
 * the tables, all in the loop: after a backlog has filled the cache with
 * dirty pages, some 7,000 writes and 300 ms in which the master does
 * nothing else (docs/PERFORMANCE).  A step writes `pages` of them or more
 * through memp_trickle, whose argument is the share of the cache to make
 * clean, in whole per cents: the clean share now plus `pages`,
 * rounded up, so up to a per cent of the cache more.  memp_trickle walks
 * the cache and sorts its dirty pages each time, so a step costs about as
 * much again as its writes.
 */
long
store_clean_step(struct store *st, int pages)
{
	unsigned long total, dirty, pct;
	int wrote;

	if (cache_pages(st, &total, &dirty) == -1)
		return -1;
	if (dirty <= (unsigned long)pages)
		return (long)dirty;
	pct = ((total - dirty + (unsigned long)pages) * 100 + total - 1) /
	    total;
	if (pct > 100)
		pct = 100;
	if ((wrote = trickle(st, (int)pct)) == -1)
		return -1;
	return (long)(dirty - ((unsigned long)wrote < dirty ?
	    (unsigned long)wrote : dirty));
}

/*
 * Keep at least low per cent of the buffer pool clean: when less is, write
 * dirty pages until high per cent is (memp_trickle).  Under a load that
 * dirties pages as fast as it can, such as a backlog's fill, the whole
 * cache is otherwise dirty when the checkpoint comes; called every quarter
 * second with 80 and 85 it writes a few hundred pages every tick or two
 * during a fill (pages that eviction would have written anyway).  The
 * margin between low and high is for a light load that dirties a few
 * pages a tick: memp_trickle sorts every dirty page before it writes the
 * first, and called each tick to write a handful it held the loop that
 * long four times a second; the count here (memp_stat) is cheap.  The
 * figures: docs/PERFORMANCE.
 */
int
store_keep_clean(struct store *st, int low, int high)
{
	unsigned long total, dirty;

	if (cache_pages(st, &total, &dirty) == -1)
		return -1;
	/* As memp_trickle counts: enough when the clean pages are as many
	 * as low per cent of the pages, rounded down. */
	if (total == 0 || total - dirty >= total * (unsigned long)low / 100)
		return 0;
	return trickle(st, high);
}

/* Remove the log files that recovery no longer needs, exactly those
 * log_archive lists (flags 0), oldest first, stopping at the first that
 * cannot go, so that the log left has no gap (a gap hides the files
 * before it from log_archive, log cursors and backups).  Nothing after a
 * failed sync (store_checkpoint: log_archive counts from the last
 * checkpoint, and one after a failed sync would have claimed pages that
 * were dropped).  Nothing here syncs: a failure leaves a file that is no
 * longer needed on the disk, which costs only its space, and the trash
 * thread's truncations and unlinks likewise.  Each is renamed out of the
 * log's names at once and emptied later by the trash thread (trash_main):
 * unlinking a 32 MiB file that was just written stalls the caller while
 * the kernel drops its cached pages, which would be the loop, for each
 * file at every checkpoint (docs/DEPARTURES 16 has the figures).  None while a backup exists
 * (store_backup_new to store_backup_free). */
static int
store_log_prune(struct store *st)
{
	char **list, **p, to[PATH_MAX];
	const char *base;
	unsigned long n;
	uint32_t *nt;
	int ret, stop = 0;

	/* Not while a backup runs: it copies the log files present, from
	 * the newest back to the first gap (store_backup.c). */
	if (st->backup != NULL)
		return 0;
	if ((ret = store_env_log_archive(st, &list)) != 0) {
		store_seterr(st, ret, "store %s: log_archive", st->dir);
		return -1;
	}
	if (list == NULL)
		return 0;
	for (p = list; *p != NULL && !stop; p++) {
		base = strrchr(*p, '/');
		base = base != NULL ? base + 1 : *p;
		if (strncmp(base, "log.", 4) != 0 ||
		    (n = strtoul(base + 4, NULL, 10)) == 0 || n > UINT32_MAX) {
			log_warnx("store %s: log_archive listed %s, not a log "
			    "file of the store: no log file removed after it",
			    st->dir, *p);
			break;
		}
		/* Under the queue's mutex throughout: the thread waits for
		 * it, never the loop. */
		pthread_mutex_lock(&st->trash.mu);
		if (st->trash.n == st->trash.cap) {
			if ((nt = reallocarray(st->trash.files, st->trash.cap ?
			    st->trash.cap * 2 : 16, sizeof(*nt))) == NULL) {
				pthread_mutex_unlock(&st->trash.mu);
				log_warnx("store %s: out of memory", st->dir);
				break;
			}
			st->trash.files = nt;
			st->trash.cap = st->trash.cap ? st->trash.cap * 2 : 16;
		}
		trash_path(st, (uint32_t)n, to, sizeof(to));
		if (rename(*p, to) == 0) {
			st->trash.files[st->trash.n++] = (uint32_t)n;
			pthread_cond_broadcast(&st->trash.cv);
		} else if (errno != ENOENT) {
			log_warn("store %s: rename %s to %s", st->dir, *p, to);
			stop = 1;
		}
		pthread_mutex_unlock(&st->trash.mu);
	}
	free(list);
	return 0;
}

/*
 * Start the write-back of the tables' pages the buffer pool has written
 * out (evicted, or cleaned: store_keep_clean) since the last call.  Left
 * to the kernel, they wait up to its 30 s expiry and then go in bulk, and
 * the next checkpoint's sync of the tables must write whatever is still
 * dirty: with a backlog that fills the cache, half a second or more in
 * which the loop is held, and log syncs of 100-250 ms behind the kernel's
 * bulk write-back (docs/PERFORMANCE).  Called every quarter second, it
 * spreads those writes.  Its failure is not fatal and is not looked at:
 * SYNC_FILE_RANGE_WRITE only starts the write-back, and a write-back that
 * fails is reported to the next fsync of the file, the checkpoint's.  It
 * must stay without SYNC_FILE_RANGE_WAIT_*: waiting collects the error on
 * BDB's own descriptor (Linux reports it once per open file), and the
 * checkpoint's sync would then succeed over the dropped pages.
 */
void
store_writeback(struct store *st)
{
	int i, fd;

	for (i = 0; i < T_COUNT; i++)
		if (store_table_fd(st, i, &fd) == 0)
			(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}

void
store_maint_start(struct store *st, uint64_t every_ms, uint64_t now_ms)
{
	memset(&st->maint, 0, sizeof(st->maint));
	st->maint.every = every_ms;
	st->maint.ckpt_at = now_ms + every_ms;
	st->maint.wb_at = now_ms + MAINT_WRITEBACK_MS;
	st->maint.phase = MAINT_IDLE;
}

/*
 * The checkpoint, every `every` ms, in three stages, none of which holds
 * the loop long: the buffer pool's dirty pages written a step at a time
 * (after a backlog filled the cache, one checkpoint writing them all held
 * the loop for hundreds of ms: store_clean_step), their write-back
 * started, and the checkpoint itself, which then has few pages to write
 * and short syncs.  The steps write as many pages as were dirty at the
 * first: under a load that dirties pages as fast as they write them, more
 * steps would write the same hot pages again, and the checkpoint writes
 * what is left.  A checkpoint whose time comes while the last one is
 * still under way is skipped.  Every quarter second besides: when more
 * than a fifth of the buffer pool is dirty, pages are written out until
 * 85 per cent of it is clean (store_keep_clean), and the table pages the
 * pool wrote out since the last tick start their write-back, so that the
 * checkpoint finds neither the pool nor the kernel full of dirty pages
 * (store_writeback).  docs/PERFORMANCE has the figures.
 */
uint64_t
store_maint(struct store *st, uint64_t now_ms, int *did)
{
	struct store_sched *m = &st->maint;
	uint64_t next;

	*did = 0;
	if (now_ms >= m->wb_at) {
		maint_tick(st);
		m->wb_at = now_ms + MAINT_WRITEBACK_MS;
	}
	if (now_ms >= m->ckpt_at) {
		if (m->phase == MAINT_IDLE) {
			m->phase = MAINT_CLEANING;
			m->steps = m->budget = 0;
			m->max_us = m->sum_us = 0;
			m->step_at = now_ms + MAINT_CLEAN_MS;
		}
		while (m->ckpt_at <= now_ms)
			m->ckpt_at += m->every;
	}
	if (m->phase != MAINT_IDLE && now_ms >= m->step_at) {
		maint_step(st, now_ms);
		if (m->phase == MAINT_IDLE)
			*did |= STORE_MAINT_CHECKPOINTED;
	}
	next = m->wb_at < m->ckpt_at ? m->wb_at : m->ckpt_at;
	if (m->phase != MAINT_IDLE && m->step_at < next)
		next = m->step_at;
	return next > now_ms ? next - now_ms : 0;
}

static void
maint_tick(struct store *st)
{
	uint64_t t0 = time_mono_us();
	int n;

	if ((n = store_keep_clean(st, MAINT_KEEP_PCT, MAINT_KEEP_PCT +
	    MAINT_HYST_PCT)) == -1)
		log_warnx("store: writing cache pages: %s",
		    store_strerror(st));
	else if (n > 0)
		log_debug("store: %d dirty pages written (%" PRIu64 " us)", n,
		    time_mono_us() - t0);
	store_writeback(st);
}

/* One step of the checkpoint under way: a step of pages, or, once they
 * are written and their write-back has had its time, the checkpoint. */
static void
maint_step(struct store *st, uint64_t now_ms)
{
	struct store_sched *m = &st->maint;
	uint64_t t0, t1, us;
	long left;

	if (m->phase == MAINT_SETTLING) {
		t0 = time_mono_us();
		if (store_checkpoint(st) == -1)
			log_warnx("checkpoint: %s", store_strerror(st));
		t1 = time_mono_us();
		log_debug("checkpoint done in %" PRIu64 " us", t1 - t0);
		m->phase = MAINT_IDLE;
		return;
	}
	t0 = time_mono_us();
	left = store_clean_step(st, MAINT_CLEAN_PAGES);
	us = time_mono_us() - t0;
	if (us > m->max_us)
		m->max_us = us;
	m->sum_us += us;
	/* Their write-back at once, a step's worth: left for the quarter
	 * second's, thousands of pages went to the disk in one go, and a
	 * log sync waited behind them. */
	store_writeback(st);
	if (left == -1)		/* the caller checks the store */
		log_warnx("checkpoint: %s", store_strerror(st));
	else {
		if (m->steps++ == 0)
			m->budget = left / MAINT_CLEAN_PAGES + 1;
		if (left > MAINT_CLEAN_PAGES && m->steps <= m->budget) {
			m->step_at = now_ms + MAINT_CLEAN_MS;
			return;
		}
	}
	log_debug("checkpoint: %ld steps wrote dirty pages, %ld left (%" PRIu64
	    " us in all, the longest %" PRIu64 " us)", m->steps, left,
	    m->sum_us, m->max_us);
	m->phase = MAINT_SETTLING;
	m->step_at = now_ms + MAINT_SETTLE_MS;
}
