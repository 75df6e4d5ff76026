/*
 * store_bdb.c: everything in the store that knows Berkeley DB below its
 * documented API, kept here so that one file says what a libdb upgrade,
 * a backup or replication has to answer for:
 *
 *   - bodies in the log (docs/DEPARTURES 16): records of the
 *     application's own type written with log_put, read back from BDB's
 *     log files by hand (their record header, LOGFILE_HDR, is libdb
 *     5.3's), and moved into their records before their file is removed;
 *   - the zero-fill ahead of the log's end (docs/DEPARTURES 20);
 *   - the region home on a tmpfs under /dev/shm (docs/DEPARTURES 21).
 */
#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <fcntl.h>

#include <db.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "logsum.h"
#include "store.h"
#include "store_bdb.h"
#include "store_int.h"

#define STORE_LOG_AHEAD		(4u * 1024 * 1024)	/* zeroed ahead */
#define STORE_LOG_REFILL	(1u * 1024 * 1024)	/* of the log's end */
#define STORE_ZERO_BUF		(256u * 1024)
/* Bodies in the log: a record of the application's own type, written with
 * DB_ENV->log_put outside the batch's transaction: u32 type, u32 txnid 0
 * and a zero prev LSN (the layout recovery reads from every record), the
 * hook's seq (u64 big-endian), then the body. */
#define STORE_LOGREC_BODY	(DB_user_BEGIN + 1)
#define STORE_LOGREC_SEQ	16	/* offset of the seq */
#define STORE_LOGREC_HDR	24	/* of the body */
#define STORE_RA_SIZE		(64 * 1024)	/* body read-ahead */
#define LOGFILE_HDR		12	/* a record's header in a log file,
					 * without encryption: u32 prev,
					 * u32 len (header included), u32
					 * checksum, host byte order */
#define STORE_MIGRATE_VISIT	8192	/* records one pass visits at most
					 * (a few ms: a restart may find a
					 * million hooks to pass over) */

static int	 log_end(struct store *, uint32_t *, uint64_t *);
static int	 log_open(struct store *, uint32_t, int, int *);
static void	 body_err(struct store *, int, uint64_t,
		    const struct store_hook_rec *, const char *, ...)
		    __attribute__((format(printf, 5, 6)));
static void	 migrate_stuck(struct store *, uint64_t);

/*
 * Where Berkeley DB keeps its region files (the environment's home): on
 * a tmpfs, in a directory of this user's named after the data directory's
 * device and inode, while the tables and the log stay in the data
 * directory (set_data_dir, set_lg_dir).  The regions are mapped shared;
 * in the data directory the kernel wrote the 42 MB that hold the buffer
 * pool back to the disk every 30 s, and after a backlog's fill that held
 * the master 60-90 ms (docs/DEPARTURES 21).  Nothing in them outlives the
 * process: every open recovers from the log and makes them anew.
 */
static const char	*store_region_base = "/dev/shm";

void
store_set_region_base(const char *base)
{
	store_region_base = base;
}

/*
 * A home is in use while a store holds the flock of its REGION_LOCK; one
 * whose lock can be had is a crashed store's, whose region files no open
 * needs (each recovers from the log), and every open removes those of its
 * user (region_sweep): a data directory that is never started again after
 * a crash would otherwise keep its cache's tens of MiB in memory until a
 * reboot.  The open takes its own home's lock first, and keeps the home
 * only if the lock file it holds is still the one in it (a sweep in
 * another process removes the lock file before the home).
 */
#define REGION_LOCK	"lock"
#define REGION_FILES	9	/* __db.001 to __db.009 */

static int
region_lock(const char *home, int create)
{
	struct stat a, b;
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/" REGION_LOCK, home);
	if ((fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW |
	    (create ? O_CREAT : 0), 0600)) == -1)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) == -1 || fstat(fd, &a) == -1 ||
	    lstat(path, &b) == -1 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		int e = errno == EWOULDBLOCK ? EWOULDBLOCK : ESTALE;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* The region files of a home (__db.001, ...), and with rmhome its lock
 * and the home itself (the lock held by the caller). */
void
bdb_region_remove(const char *home, int rmhome)
{
	char path[PATH_MAX];
	int i;

	for (i = 1; i <= REGION_FILES; i++) {
		snprintf(path, sizeof(path), "%s/__db.%03d", home, i);
		(void)unlink(path);
	}
	if (rmhome) {
		snprintf(path, sizeof(path), "%s/" REGION_LOCK, home);
		(void)unlink(path);
		(void)rmdir(home);
	}
}

/* Our user's homes other than ours whose lock no one holds. */
static void
region_sweep(const char *ours)
{
	struct dirent *de;
	struct stat sb;
	DIR *d;
	char prefix[64], path[PATH_MAX];
	int fd, n;

	if ((d = opendir(store_region_base)) == NULL)
		return;
	snprintf(prefix, sizeof(prefix), "ankusa-store-%lu-",
	    (unsigned long)geteuid());
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		n = snprintf(path, sizeof(path), "%s/%s", store_region_base,
		    de->d_name);
		if (n < 0 || (size_t)n >= sizeof(path) ||
		    strcmp(path, ours) == 0)
			continue;
		if (lstat(path, &sb) == -1 || !S_ISDIR(sb.st_mode) ||
		    sb.st_uid != geteuid())
			continue;
		if ((fd = region_lock(path, 0)) == -1)
			continue;	/* in use, or not one of ours */
		log_debug("store: removing %s, left by a store that did not "
		    "close", path);
		bdb_region_remove(path, 1);
		close(fd);
	}
	closedir(d);
}

/* The home for the data directory dsb, its lock held in *fdp; NULL (the
 * data directory then) when no safe directory can be had. */
char *
bdb_region_home(const struct stat *dsb, int *fdp)
{
	struct stat sb;
	char path[PATH_MAX], *home;
	int n, tries;

	if (store_region_base == NULL)
		return NULL;
	n = snprintf(path, sizeof(path), "%s/ankusa-store-%lu-%llx-%llx",
	    store_region_base, (unsigned long)geteuid(),
	    (unsigned long long)dsb->st_dev, (unsigned long long)dsb->st_ino);
	if (n < 0 || (size_t)n >= sizeof(path))
		return NULL;
	for (tries = 0; tries < 3; tries++) {
		if (mkdir(path, 0700) == -1 && errno != EEXIST)
			return NULL;
		/* Someone else's, or a link planted in a shared /dev/shm:
		 * no. */
		if (lstat(path, &sb) == -1 || !S_ISDIR(sb.st_mode) ||
		    sb.st_uid != geteuid() || (sb.st_mode & 077) != 0) {
			log_warnx("store: %s is not a private directory of "
			    "ours; the region files stay in the data "
			    "directory", path);
			return NULL;
		}
		if ((*fdp = region_lock(path, 1)) != -1)
			break;
		if (errno == EWOULDBLOCK) {
			log_warnx("store: %s is in use by another process; "
			    "the region files stay in the data directory",
			    path);
			return NULL;
		}
		/* Removed by another's sweep meanwhile: make it anew. */
	}
	if (tries == 3)
		return NULL;
	region_sweep(path);
	if ((home = strdup(path)) == NULL) {
		close(*fdp);
		*fdp = -1;
	}
	return home;
}

/*
 * Bodies in the log.
 *
 * A body of STORE_LOGBODY_MIN to STORE_LOGBODY_MAX bytes is written once,
 * as a log record of its own (bdb_body_log), and its hook's record keeps the
 * record's position instead of the bytes.  In the hooks B-tree a body was
 * logged with its put, logged again with the page split that moved it,
 * written and checksummed again with its page, and logged once more with
 * its delete; a relay's hooks mostly live for a few seconds, and their
 * bodies need not be anywhere but the log.  The batch's sync covers the
 * body record, which precedes the batch's commit record in the log.
 *
 * Reads (bdb_body_fetch) go to the log files themselves, through a read-ahead,
 * and check BDB's checksum of the record and that the record is this
 * hook's body.
 *
 * A log file can go only when recovery no longer needs it (log_archive)
 * and it holds no live body.  Bodies are logged in seq order (a seq is
 * taken just before its body is logged, in the one thread that writes),
 * so the oldest live body is that of the first hook, in seq order, whose
 * record still points into the log.  store_body_migrate walks the hooks
 * from inline_below (below which every hook holds its body, or none) to
 * that hook, moving into their records the bodies that sit more than
 * body.retain files behind the current one: a body a dead or slow sink
 * keeps for long ends up where it was before, in the B-tree, and does not
 * hold its log file (and every file after it) on the disk.  The pass
 * records the file it stopped at (pin); store_log_prune removes the files
 * below it.  A record written after the pass holds a body in a file at or
 * after the current one, and a migrated or deleted one holds none, so the
 * pin stays a lower bound until the next pass.
 */

/* A migrate pass stopped at the hook at seq, whose record or body it could
 * not read (st->err says why): said once per hook, not at every pass. */
static void
migrate_stuck(struct store *st, uint64_t seq)
{
	if (st->stuck_seq == seq + 1)
		return;
	st->stuck_seq = seq + 1;
	log_warnx("%s; the log files from the one its body may be in on are "
	    "kept until it can be read or is gone", st->err);
}

/* d over the caller's len bytes at buf: a key (size len) to read into,
 * or with partial, a value of which only the first len bytes are read. */
void
bdb_dbt_user(DBT *d, void *buf, size_t len, int partial)
{
	memset(d, 0, sizeof(*d));
	d->data = buf;
	d->ulen = (uint32_t)len;
	d->flags = DB_DBT_USERMEM;
	if (partial) {
		d->dlen = (uint32_t)len;
		d->flags |= DB_DBT_PARTIAL;
	} else
		d->size = (uint32_t)len;
}

/* Recovery passes records of the application's types here: a body record
 * belongs to no transaction and needs nothing redone or undone. */
int
bdb_app_dispatch(DB_ENV *env, DBT *rec, DB_LSN *lsn, db_recops op)
{
	uint32_t type;

	if (rec->size >= sizeof(type)) {
		memcpy(&type, rec->data, sizeof(type));
		if (type == STORE_LOGREC_BODY)
			return 0;
	}
	return EINVAL;
}

/* Log h's body (h->seq set); *at gets the record's position. */
int
bdb_body_log(struct store *st, const struct store_hook *h,
    struct store_lsn *at)
{
	uint32_t type = STORE_LOGREC_BODY;
	size_t need = STORE_LOGREC_HDR + h->body_len;
	unsigned char *nb;
	DB_LSN lsn;
	DBT d;
	int ret;

	if (need > st->body.lbufcap) {
		if ((nb = realloc(st->body.lbuf, need)) == NULL) {
			store_seterr(st, 0, "store %s: out of memory",
			    st->dir);
			return -1;
		}
		st->body.lbuf = nb;
		st->body.lbufcap = need;
	}
	memcpy(st->body.lbuf, &type, sizeof(type));
	memset(st->body.lbuf + 4, 0, STORE_LOGREC_SEQ - 4); /* txnid, prev */
	rec_put_u64(st->body.lbuf + STORE_LOGREC_SEQ, h->seq);
	memcpy(st->body.lbuf + STORE_LOGREC_HDR, h->body, h->body_len);
	memset(&d, 0, sizeof(d));
	d.data = st->body.lbuf;
	d.size = (uint32_t)need;
	if ((ret = st->env->log_put(st->env, &lsn, &d, 0)) != 0) {
		store_seterr(st, ret, "store %s: hook seq %" PRIu64 ": log "
		    "its body", st->dir, h->seq);
		return -1;
	}
	at->file = lsn.file;
	at->offset = lsn.offset;
	st->body.logged_end.file = lsn.file;
	st->body.logged_end.offset = lsn.offset + LOGFILE_HDR +
	    (uint32_t)need;
	return 0;
}

/* Whether the log record p (size bytes, after BDB's header) is the body of
 * the hook at seq, whose record out is. */
static int
body_is(uint64_t seq, const struct store_hook_rec *out,
    const unsigned char *p, size_t size)
{
	uint32_t type;

	if (size != STORE_LOGREC_HDR + out->body_size)
		return 0;
	memcpy(&type, p, sizeof(type));
	return type == STORE_LOGREC_BODY &&
	    rec_get_u64(p + STORE_LOGREC_SEQ) == seq;
}

/* Copy the body out of its log record p into out->body_mem. */
static int
body_take(struct store *st, struct store_hook_rec *out,
    const unsigned char *p)
{
	if ((out->body_mem = malloc(out->body_size + 1)) == NULL) {
		store_seterr(st, 0, "store %s: out of memory", st->dir);
		return -1;
	}
	memcpy(out->body_mem, p + STORE_LOGREC_HDR, out->body_size);
	out->hook.body = out->body_mem;
	out->hook.body_len = out->body_size;
	return 0;
}

/* err = "...: its body, at <file>/<offset> in the log, <what>". */
static void
body_err(struct store *st, int rc, uint64_t seq,
    const struct store_hook_rec *out, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	store_seterr(st, rc, "store %s: hook seq %" PRIu64 ": its body, at %"
	    PRIu32 "/%" PRIu32 " in the log, %s", st->dir, seq,
	    out->body_file, out->body_off, what);
}

void
bdb_ra_close(struct store *st)
{
	if (st->ra.fd != -1)
		close(st->ra.fd);
	st->ra.fd = -1;
	st->ra.len = 0;
}

/*
 * The length, header included, of the intact log record that the avail
 * bytes at p begin with, or 0: BDB's header (LOGFILE_HDR) and the record,
 * whose checksum, in an environment without encryption, is logsum over
 * the record, XORed with the header's prev and len.
 */
static uint32_t
logrec_intact(const unsigned char *p, size_t avail)
{
	uint32_t prev, len, sum;

	if (avail < LOGFILE_HDR)
		return 0;
	memcpy(&prev, p, sizeof(prev));
	memcpy(&len, p + 4, sizeof(len));
	memcpy(&sum, p + 8, sizeof(sum));
	if (len < LOGFILE_HDR || len > avail)
		return 0;
	return (logsum(p + LOGFILE_HDR, len - LOGFILE_HDR) ^ prev ^ len) ==
	    sum ? len : 0;
}

/* Read want bytes (need at least) of log file ra.file at off into buf. */
static int
body_pread(struct store *st, uint64_t seq, const struct store_hook_rec *out,
    unsigned char *buf, size_t want, size_t need, size_t *got)
{
	ssize_t n;

	st->body.preads++;
	if ((n = pread(st->ra.fd, buf, want, (off_t)out->body_off)) == -1 ||
	    (size_t)n < need) {
		body_err(st, 0, seq, out, "cannot be read: %s", n == -1 ?
		    strerror(errno) : "the log file ends before it");
		return -1;
	}
	*got = (size_t)n;
	return 0;
}

/* Fill ra.buf from the record of out's body (need bytes) on: not past the
 * end of the last body record flushed, after which the file may hold
 * zeros that later records replace. */
static int
ra_fill(struct store *st, uint64_t seq, const struct store_hook_rec *out,
    size_t need)
{
	size_t want = STORE_RA_SIZE;

	if (out->body_file == st->body.flushed_end.file &&
	    st->body.flushed_end.offset > out->body_off &&
	    st->body.flushed_end.offset - out->body_off < want)
		want = st->body.flushed_end.offset - out->body_off;
	if (want < need)
		want = need;
	st->ra.len = 0;
	if (body_pread(st, seq, out, st->ra.buf, want, need, &st->ra.len) == -1)
		return -1;
	st->ra.start = out->body_off;
	return 0;
}

/*
 * The body of the hook at seq, whose record out holds its log position,
 * into out->body_mem (and out->hook.body), read from the log file itself:
 * the record is taken only if BDB's checksum of it holds and it is this
 * hook's body.  (BDB's log cursor would check the same, but it panics the
 * environment when a checksum fails, so that one damaged body would stop
 * the store; and it reads a record's header, then the 32 KB of the file
 * that end at the record.)
 *
 * Bodies are mostly read in the order they were logged, a few hundred
 * bytes apart, so a body of up to STORE_RA_SIZE is read through ra.buf, a
 * read-ahead from the last record that missed it: one pread serves dozens.
 * A body is read only after the flush of its batch, whose commit record
 * follows it, and a record's bytes do not change once written (recovery,
 * which may cut the end of the last file, runs at open, before any read).
 * Past the last record written out, though, the file may hold zeros that
 * later records replace: ra_fill stops at body.flushed_end, and a record that
 * does not check out in a buffer filled before this read (before a
 * restart, body.flushed_end is not known) is read again.
 */
int
bdb_body_fetch(struct store *st, uint64_t seq, struct store_hook_rec *out)
{
	size_t avail, need = LOGFILE_HDR + STORE_LOGREC_HDR + out->body_size;
	uint64_t at;
	unsigned char *big = NULL;
	const unsigned char *p;
	uint32_t len;
	int rc;

	if (st->ra.fd == -1 || st->ra.file != out->body_file) {
		bdb_ra_close(st);
		if ((st->ra.fd = log_open(st, out->body_file, O_RDONLY,
		    &rc)) == -1) {
			body_err(st, rc, seq, out, "cannot be read: %s",
			    rc != 0 ? "no log file name" : strerror(errno));
			return -1;
		}
		st->ra.file = out->body_file;
	}
	if (need > STORE_RA_SIZE) {
		if ((p = big = malloc(need)) == NULL) {
			store_seterr(st, 0, "store %s: out of memory", st->dir);
			return -1;
		}
		if (body_pread(st, seq, out, big, need, need, &avail) == -1) {
			free(big);
			return -1;
		}
		len = logrec_intact(p, avail);
	} else {
		if (st->ra.buf == NULL &&
		    (st->ra.buf = malloc(STORE_RA_SIZE)) == NULL) {
			store_seterr(st, 0, "store %s: out of memory", st->dir);
			return -1;
		}
		at = out->body_off;
		if (at < st->ra.start ||
		    at + need > st->ra.start + st->ra.len) {
			if (ra_fill(st, seq, out, need) == -1)
				return -1;
			len = logrec_intact(st->ra.buf, st->ra.len);
		} else if ((len = logrec_intact(st->ra.buf + (at -
		    st->ra.start), st->ra.len - (at - st->ra.start))) == 0) {
			/* Filled before the record was written: again. */
			if (ra_fill(st, seq, out, need) == -1)
				return -1;
			len = logrec_intact(st->ra.buf, st->ra.len);
		}
		p = st->ra.buf + (at - st->ra.start);
	}
	rc = -1;
	if (len == 0)
		body_err(st, 0, seq, out, "is damaged (the record's "
		    "checksum does not hold)");
	else if (!body_is(seq, out, p + LOGFILE_HDR, len - LOGFILE_HDR))
		store_seterr(st, 0, "store %s: hook seq %" PRIu64 ": the log "
		    "record at %" PRIu32 "/%" PRIu32 " is not its body",
		    st->dir, seq, out->body_file, out->body_off);
	else if ((rc = body_take(st, out, p + LOGFILE_HDR)) == 0)
		st->body.reads++;
	free(big);
	return rc;
}

void
store_body_reads(struct store *st, uint64_t *reads, uint64_t *preads)
{
	*reads = st->body.reads;
	*preads = st->body.preads;
}

/* The log's end: the file the next record goes to and its offset there.
 * -1 if BDB cannot say. */
static int
log_end(struct store *st, uint32_t *file, uint64_t *off)
{
	DB_LOG_STAT *sp;

	if (st->env->log_stat(st->env, &sp, 0) != 0)
		return -1;
	*file = sp->st_cur_file;
	*off = sp->st_cur_offset;
	free(sp);
	return 0;
}

/* Log file n opened with flags: its descriptor, or -1 with errno set, or
 * with *dbrc set when BDB gave no name for it. */
static int
log_open(struct store *st, uint32_t n, int flags, int *dbrc)
{
	char name[PATH_MAX];
	DB_LSN lsn;

	lsn.file = n;
	lsn.offset = 0;
	if ((*dbrc = st->env->log_file(st->env, &lsn, name,
	    sizeof(name))) != 0)
		return -1;
	return open(name, flags | O_CLOEXEC);
}

uint32_t
store_log_current(struct store *st)
{
	uint64_t off;
	uint32_t cur;

	return log_end(st, &cur, &off) == 0 ? cur : 0;
}

uint32_t
store_body_pin(struct store *st)
{
	return st->pin_known ? st->pin : 0;
}

int
store_body_behind(const struct store *st)
{
	return st->behind;
}

void
store_set_body_retain(struct store *st, uint32_t files)
{
	st->body.retain = files;
}

int
store_body_migrate(struct store *st, int max)
{
	struct store_batch *b;
	struct store_hook_rec rec;
	unsigned char kb[8], head[6];
	uint32_t cur, pin = 0;
	uint64_t seq, below0 = st->inline_below;
	void *val;
	size_t len;
	DBC *c = NULL;
	DBT k, v, fv, nv;
	int ret, moved = 0, visited = 0, found = 0, pinned = 0, rc = -1;

	st->behind = 0;
	if (st->batch_open || st->lost)
		return 0;
	if ((cur = store_log_current(st)) == 0) {
		store_seterr(st, 0, "store %s: log_stat failed", st->dir);
		return -1;
	}
	if ((b = store_batch_begin(st)) == NULL)
		return -1;
	if ((ret = st->db[T_HOOKS]->cursor(st->db[T_HOOKS], b->txn, &c,
	    0)) != 0) {
		store_seterr(st, ret, "store %s/hooks.db: cursor", st->dir);
		store_batch_abort(b);
		return -1;
	}
	store_key_hook(kb, st->inline_below);
	/* Each record's version, head length and flags only: most of the
	 * walk passes over hooks whose bodies are in their records. */
	bdb_dbt_user(&k, kb, sizeof(kb), 0);
	bdb_dbt_user(&v, head, sizeof(head), 1);
	memset(&fv, 0, sizeof(fv));
	fv.flags = DB_DBT_REALLOC;
	for (ret = c->get(c, &k, &v, DB_SET_RANGE); ret == 0;
	    ret = c->get(c, &k, &v, DB_NEXT)) {
		if (k.size != sizeof(kb))
			continue;
		seq = rec_get_u64(kb);
		if (++visited > STORE_MIGRATE_VISIT) {
			st->behind = 1;
			break;
		}
		if (v.size < sizeof(head) || head[0] != STORE_REC_VERSION ||
		    (head[5] & HOOK_FLAG_LOGGED) == 0) {
			st->inline_below = seq + 1;
			continue;
		}
		if ((ret = c->get(c, &k, &fv, DB_CURRENT)) != 0)
			break;
		/* A record that cannot be read, or whose body cannot: the
		 * pass stops there, the pin as it was (a read may fail for
		 * a while, and the file may hold the body), and the next
		 * one tries again. */
		if (rec_hook_decode(T_HOOKS, kb, sizeof(kb), fv.data, fv.size,
		    0, &rec, st->err, sizeof(st->err)) == -1) {
			migrate_stuck(st, seq);
			goto stuck;
		}
		if ((uint64_t)rec.body_file + st->body.retain >= cur ||
		    moved >= max) {
			st->behind = moved >= max;
			pin = rec.body_file;
			found = 1;
			store_hook_rec_free(&rec);
			break;
		}
		if (bdb_body_fetch(st, seq, &rec) == -1) {
			store_hook_rec_free(&rec);
			migrate_stuck(st, seq);
			goto stuck;
		}
		val = rec_hook_encode(&rec.hook, rec.rows, rec.claim_ref, NULL,
		    NULL, &len);
		store_hook_rec_free(&rec);
		if (val == NULL) {
			store_seterr(st, 0, "store %s: hook seq %" PRIu64
			    ": cannot encode", st->dir, seq);
			goto done;
		}
		memset(&nv, 0, sizeof(nv));
		nv.data = val;
		nv.size = (uint32_t)len;
		ret = c->put(c, &k, &nv, DB_CURRENT);
		free(val);
		if (ret != 0) {
			store_seterr(st, ret, "store %s/hooks.db: rewrite seq %"
			    PRIu64, st->dir, seq);
			goto done;
		}
		moved++;
		st->inline_below = seq + 1;
	}
	if (ret != 0 && ret != DB_NOTFOUND) {
		store_seterr(st, ret, "store %s/hooks.db: read", st->dir);
		goto done;
	}
	if (ret == DB_NOTFOUND || found) {
		/* The pass saw every hook from inline_below on: pin is the
		 * oldest file holding a body, or when none does, the current
		 * one, where a body logged after this pass may be. */
		if (!found)
			pin = cur;
		pinned = 1;
	}
 stuck:
	rc = moved;
 done:
	free(fv.data);
	if ((ret = c->close(c)) != 0 && rc != -1) {
		store_seterr(st, ret, "store %s/hooks.db: cursor close",
		    st->dir);
		rc = -1;
	}
	/* What the pass found holds only once its moves are committed: an
	 * aborted one leaves those bodies in the log. */
	if (rc == -1) {
		store_batch_abort(b);
		st->inline_below = below0;
		return -1;
	}
	/* No sync of its own: the checkpoint before a file is removed
	 * flushes the log. */
	if (store_batch_commit_lazy(b) == -1) {
		st->inline_below = below0;
		return -1;
	}
	if (pinned) {
		st->pin = pin;
		st->pin_known = 1;
		st->stuck_seq = 0;
	}
	return rc;
}

/*
 * Keep the current log file zero-filled ahead of the log's end, so that a
 * commit's sync writes the commit's pages and nothing else.  BDB makes a log
 * file sparse at its full size, so a commit's pages land in a hole: its sync
 * must allocate their blocks and write the inode that maps them, on ext4
 * three I/Os a commit instead of two: the pages, the inode, the disk's cache
 * flush (ext4_write_inode was 14 % of the master's profile with paced hooks:
 * docs/DEPARTURES 20).  Zeros past the last record are the end of the log to
 * BDB, as in its own DB_LOG_ZERO files, whose whole 32 MiB it zeroes when it
 * creates one, in the committing thread.  Here the zeros reach
 * STORE_LOG_AHEAD past the end whenever less than STORE_LOG_REFILL are left,
 * and their write-back starts at once (the next commit's sync waits for it:
 * fdatasync waits on the whole file; 3 MiB chunks gave shorter syncs than
 * half-megabyte ones, whose blocks and inode are written eight times as
 * often).  Only past the log's end (after a flush everything before it is
 * written), in the one thread that writes the log.  A failure (the disk
 * full) ends it for that file.
 */
void
bdb_log_zero_ahead(struct store *st)
{
	static const unsigned char zeros[STORE_ZERO_BUF];
	uint64_t end, at, off;
	uint32_t file;
	ssize_t n;
	int rc;

	if (log_end(st, &file, &off) == -1)
		return;
	if (file != st->z.file) {
		if (st->z.fd != -1)
			close(st->z.fd);
		st->z.file = file;
		st->z.end = off;
		if ((st->z.fd = log_open(st, file, O_WRONLY, &rc)) == -1) {
			if (rc != 0)
				errno = rc;
			goto fail;
		}
	}
	if (st->z.end >= off + STORE_LOG_REFILL || st->z.end >= STORE_LOG_FILE)
		return;
	at = st->z.end > off ? st->z.end : off;
	end = off + STORE_LOG_AHEAD;
	if (end > STORE_LOG_FILE)
		end = STORE_LOG_FILE;
	while (at < end) {
		n = pwrite(st->z.fd, zeros, end - at < sizeof(zeros) ?
		    end - at : sizeof(zeros), (off_t)at);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		at += (uint64_t)n;
	}
	/* Not a sync: SYNC_FILE_RANGE_WRITE starts the write-back and
	 * neither waits nor collects its error, which stays for the next
	 * log flush's sync, BDB's (a failed write-back of zeros stops the
	 * daemon too, as it cannot be told from the log's).  A failure here
	 * is the zeros', which nothing reads: only the end of this file's
	 * zeroing. */
	(void)sync_file_range(st->z.fd, (off_t)st->z.end,
	    (off_t)(end - st->z.end), SYNC_FILE_RANGE_WRITE);
	st->z.end = end;
	return;
 fail:
	log_warnx("store %s: log file %" PRIu32 ": zeroing ahead of the "
	    "log's end: %s; its commits' syncs allocate their blocks",
	    st->dir, file, db_strerror(errno));
	if (st->z.fd != -1)
		close(st->z.fd);
	st->z.fd = -1;
	st->z.end = STORE_LOG_FILE;	/* nothing more for this file */
}
