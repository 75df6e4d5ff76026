/* SPDX-License-Identifier: ISC */
/*
 * store_int.h: what the store's own files share (store.c, store_rec.c,
 * store_hooks.c, store_bodies.c, store_dedupe.c, store_rows.c,
 * store_lanes.c, store_maint.c, store_bdb.c, store_backup.c,
 * store_replay.c, store_dlq.c, store_trash.c, store_audit.c,
 * store_attempts.c, store_archive.c) and the tests
 * (tests/storeutil.c builds the verbs only they call on it): struct store,
 * the tables, the record helpers, the walks, and at its end the seams.  The
 * public verbs are in store.h, the keys and record codecs in store_rec.h;
 * the store's contracts in store.c's header comment, its layout in
 * store_rec.c's.  What one file shares with the others here takes that
 * file's prefix: store_ (store.c), rec_ (store_rec.c), hooks_, bodies_,
 * dedupe_, rows_, lane_ (store_lanes.c), bdb_ (store_bdb.c),
 * store_backup_, trash_, attempts_, replay_ (store_replay.c), archive_
 * (store_archive.c); store_dlq.c and store_audit.c share nothing (their
 * verbs are store.h's); the rest is static.
 */
#ifndef ANKUSA_STORE_INT_H
#define ANKUSA_STORE_INT_H

#include <sys/stat.h>

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "store_rec.h"

/* Berkeley DB's handles, opaque here (<db.h>'s DB_ENV, DB, DB_TXN and DBC
 * name these structs): only the files that call libdb include <db.h>
 * (store.c, store_backup.c, store_bdb.c, store_bodies.c, store_group.c,
 * store_lag.c, store_meta.c; nothing outside daemon/store/, which
 * tests/check_layout.sh checks); the others
 * reach the tables through store.c's wrappers (store_put, store_tget,
 * store_tget_head, store_tget_alloc, store_tdel, the walks, the cursor on
 * one record) and the environment through store_env_*. */
struct __db_env;
struct __db;
struct __db_txn;
struct __dbc;

enum store_table {
	T_META = 0,
	T_HOOKS,
	T_ROWS,
	T_DUE,
	T_LANES,
	T_MEMBERS,
	T_MARKS,
	T_DEAD,
	T_DEDUPE,
	T_DEDUPE_EXP,
	T_REPLAYS,
	T_QUARANTINE,
	T_BODIES,	/* a heap (DB_HEAP), not a B-tree */
	T_HOOKIDS,	/* hook id -> seq (store_hookids.c) */
	T_AUDIT,	/* the audit trail (store_audit.c) */
	T_ATTEMPTS,	/* the attempt log (store_attempts.c) */
	T_ATTEMPTS_END,	/* its hooks gone, by time */
	T_DELIVERED,	/* a row's delivery, kept (store_archive.c) */
	T_ARCHIVE,	/* kept hooks by time (store_archive.c) */
	T_COUNT
};

extern const char *const store_tables[T_COUNT];

/* The schema that moved the bodies out of the log (bodies_upgrade); the
 * next indexes hooks by id (hookids_upgrade); STORE_SCHEMA_VERSION, the
 * one after, lets a hook's id carry its seq instead (nothing to rewrite:
 * the open writes the number). */
#define STORE_SCHEMA_BODIES	2
#define STORE_SCHEMA_HOOKIDS	3

#define STORE_LOG_FILE		(32u * 1024 * 1024)
/* A hooks record's head, as store_rec.c lays it out: what the store's
 * files read or patch in place without decoding the record. */
#define HOOK_HEAD_FLAGS		5	/* its flags: after the version and
					 * the head length */
#define HOOK_ROWS_OFF		30	/* u32 live rows: after the flags, id
					 * and received_at */
#define HOOK_RID_LEN		6	/* a body's record id in bodies, at
					 * the record's end (HOOK_FLAG_HEAP) */
#define HOOK_FLAG_LOGGED	0x04	/* the body is a log record of an
					 * older build's: the record ends in
					 * its position (u32 file, u32
					 * offset) instead */
#define HOOK_FLAG_HEAP		0x08	/* the body is in bodies: the record
					 * ends in its DB_HEAP_RID (u32
					 * page, u16 index) instead */
#define HOOK_FLAG_LOST		0x10	/* with LOGGED: the open could not
					 * read that log record */
#define HOOK_FLAG_DELIVERED	0x20	/* a row of it has a record in
					 * delivered (store_archive.c) */
#define HOOK_FLAG_IDSEQ		0x80	/* its id carries the low bits of
					 * its seq (uuid_put_seq): no entry
					 * in hookids (schema 4) */
#define HOOK_FLAG_KEPT		0x40	/* every row delivered, the hook
					 * kept: live rows 0, an archive
					 * entry, counted in ahooks, not in
					 * hooks */
#define STORE_BODY_MIN		256		/* smaller bodies stay in the
						 * record: a second record
						 * costs more */
#define STORE_BODY_MAX		(1024u * 1024)	/* larger ones too, as when
						 * bodies went to the log */
#define LANE_KEY_MAX		(2 * (STORE_NAME_MAX + 1) + 12)

struct store_batch {
	struct store		*st;
	struct __db_txn		*txn;
	struct store_counts	 counts;	/* committed plus this batch */
	int			 failed;	/* a put failed: abort only */
};

/* An upgrade of the bodies out of the log, across the reopens of the
 * environment it may need (bodies_upgrade). */
struct bodies_upgrade {
	uint64_t		*bad;		/* hooks whose log record
						 * stopped the environment */
	size_t			 nbad;
	uint64_t		 moved, lost;	/* bodies so far */
	uint64_t		 txns;		/* transactions so far */
};

/* Where the lane sweep of one tenant goes on (the last marks key it
 * visited); only while it stopped at max before the tenant's end. */
struct lane_resume {
	struct lane_resume	*next;
	size_t			 len;
	unsigned char		 key[LANE_KEY_MAX];
};

/* The zero-fill ahead of the log's end. */
struct store_zero {
	int			 fd;		/* the log file numbered file,
						 * open to zero ahead, or -1 */
	uint32_t		 file;
	uint64_t		 end;		/* zeroed up to here (the file's
						 * end after a failure) */
};

/* store_maint's schedule (monotonic ms) and its checkpoint's steps. */
struct store_sched {
	uint64_t		 every;		/* between checkpoints */
	uint64_t		 ckpt_at;	/* the next one starts */
	uint64_t		 wb_at;		/* the next keep-clean tick */
	uint64_t		 step_at;	/* the next step of this one */
	int			 phase;		/* MAINT_IDLE, _CLEANING,
						 * _SETTLING */
	long			 steps, budget;
	uint64_t		 max_us, sum_us;	/* for the debug line */
};

/* Pruned log files to empty, shared with the trash thread. */
struct store_trash {
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;		/* the queue or stop changed;
						 * the thread and the
						 * tests (storeutil.c) wait
						 * on it: broadcast */
	pthread_t		 thread;
	int			 on;		/* started, not joined */
	int			 stop;
	uint32_t		*files;		/* [0]: in hand */
	size_t			 n, cap;
	uint64_t		 steps;		/* done, for the tests */
};

struct store_group;
struct store_repl;
struct keycounts;
struct store_lag;

struct store {
	struct __db_env		*env;
	struct __db		*db[T_COUNT];
	char			*dir;
	char			*home;		/* region files, if not dir */
	int			 home_fd;	/* its REGION_LOCK, held */
	uint64_t		 next_seq;	/* ahead of meta after aborts */
	uint64_t		 seq_saved;	/* next_seq as meta has it */
	struct store_counts	 counts;	/* as committed */
	struct keycounts	*kc;		/* rows by sink key
						 * (store_keycount.c) */
	unsigned char		 id[16];	/* meta store_id */
	struct store_batch	 batch;
	int			 batch_open;
	int			 lost;		/* a sync failed, or BDB
						 * panicked: restart */
	unsigned long		 sync_seen;	/* sync_failures at the open */
	char			 lost_why[512];	/* its error */
	int			 opening;	/* in store_open */
	int			 lastret;	/* store_seterr's Berkeley DB
						 * code */
	int			 lm_unsaved;	/* meta lane_members missing:
						 * write it next commit */
	struct lane_resume	*resume;	/* lane sweeps, per tenant */
	struct store_zero	 z;
	uint32_t		 commit_file;	/* the LSN of the last commit */
	uint32_t		 commit_off;	/* (file 0: none known), the
						 * end of store_log_flush */
	struct store_sched	 maint;		/* store_maint's schedule */
	unsigned char		*bbuf;		/* a bodies record being put */
	size_t			 bbufcap;
	uint32_t		 schema;	/* meta "schema" at the open */
	struct store_trash	 trash;
	struct store_backup	*backup;	/* the one backup, which holds
						 * the log files from removal
						 * (store_backup.c), or NULL */
	char			 err[1536];
	char			 dberr[512];	/* BDB's last own message */
	char			 sumby[224];	/* which log checksum, why */
	struct store_group	*group;		/* a site of it, or NULL */
	struct store_repl	*repl;		/* its state (store_group.c) */
	struct store_lag	*lag;		/* its lag (store_lag.c) */
	int			 client;	/* a client of the group: the
						 * tables are read only */
	int			 keep_delivered;	/* retention.delivered_s
						 * > 0: delivered hooks are
						 * kept (store_archive.c) */
};

/* store_meta.c, for store.c. */
int	store_load_meta(struct store *, char *, size_t);
int	store_meta_u64(struct store *, const char *, uint64_t *, int, char *,
	    size_t);
int	store_meta_put_u64(struct store *, struct __db_txn *, const char *,
	    uint64_t);

/* store_group.c, for store.c. */
int	group_configure(struct store *);
int	group_set_timeouts(struct store *, const struct store_group *);
int	group_start(struct store *);
void	group_commit_begin(struct store *);
int	group_commit_acked(struct store *);
void	group_free(struct store *);
void	group_handles_dead(struct store *);
struct store_group *group_copy(const struct store_group *);

/* store_lag.c, for store_group.c and store.c. */
int	group_lag_configure(struct store *);
int	group_lag_start(struct store *);
void	group_lag_stop(struct store *);
void	group_lag_free(struct store *);
int64_t	group_lag_site(struct store *, const char *, int64_t *);
int64_t	group_lag_distance(uint32_t, uint32_t, uint32_t, uint32_t, uint32_t);


/* Encoder: a fixed buffer, or a growing one (hooks). */
struct enc {
	unsigned char	*buf;
	size_t		 len;
	size_t		 cap;
	int		 grow;
	int		 bad;		/* no room or no memory */
};

/* Decoder over one record. */
struct dec {
	const unsigned char	*p;
	size_t			 len;
	size_t			 off;
	int			 bad;	/* truncated or malformed */
};

/*
 * A walk over one table in key order that holds no cursor between steps
 * once paused: before every callback and write, so that a callback may do
 * anything (open a batch) and no read lock is left to block one.
 */
struct walk {
	struct store	*st;
	int		 t;
	struct __db_txn	*txn;		/* a batch's, or NULL: store_readtxn()
					 * at each (re)open */
	struct __dbc	*c;		/* NULL: paused, the next step seeks */
	int		 at;		/* next seek: 1 at key, 0 after it */
	unsigned char	 key[STORE_KEY_MAX + 1];
	size_t		 klen;
	unsigned char	 val[STORE_REC_MAX];
	size_t		 vlen;
};

/* A cursor held on one record (store_cur_get, store_cur_step). */
struct cur {
	struct store	*st;
	int		 t;
	struct __dbc	*c;		/* NULL: closed */
	const void	*key;		/* the caller's, while it is open */
	size_t		 klen;
};

/* Where store_cur_step moves the cursor. */
enum store_cur_how {
	STORE_CUR_RANGE,	/* to the first key >= the one given */
	STORE_CUR_NEXT,		/* to the next record */
	STORE_CUR_AGAIN		/* nowhere: the same record once more */
};

/* The callers of store_due_tenants and store_marked_tenants. */
struct tenants_ctx {
	struct store	*st;
	int		(*due_cb)(const char *, uint64_t, void *);
	int		(*cb)(const char *, void *);
	void		*arg;
};

/* store_keycount.c: a row of the open batch was added (dlive 1), moved
 * to the dead letters (-1, 1) or back (1, -1), or deleted (-1, 0 or 0,
 * -1 for a dead one); counted once the batch commits. */
void	 keycount_row(struct store_batch *, const unsigned char *,
		    const struct store_row *, int dlive, int ddead);
/* Whether a row in state counts as live (1: waiting to be delivered),
 * dead (0) or neither (-1: a state that is no delivery to make). */
int	 keycount_live(int);
void	 keycount_begin(struct store *);
void	 keycount_commit(struct store *);
void	 keycount_free(struct store *);

/* store.c */
void	 store_seterr(struct store *, int, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
int	 store_table_index(const char *);
int	 store_put(struct store *, struct __db_txn *, int, const void *,
		    size_t, const void *, size_t, int);
struct __db_txn *store_readtxn(struct store *);
void	 store_walk_init(struct walk *, struct store *, struct __db_txn *,
		    int, const void *, size_t);
int	 store_walk_next(struct walk *);
int	 store_walk_del(struct walk *);
void	 store_walk_pause(struct walk *);
void	 store_walk_seek(struct walk *, const void *, size_t);
int	 store_walk_done(struct walk *, int);
int	 store_tget(struct store *, struct __db_txn *, int, const void *,
		    size_t, void *, size_t, size_t *);
int	 store_tget_head(struct store *, struct __db_txn *, int,
		    const void *, size_t, void *, size_t, size_t *);
int	 store_tget_alloc(struct store *, struct __db_txn *, int,
		    const void *, size_t, void **, size_t *);
int	 store_tdel(struct store *, struct __db_txn *, int, const void *,
		    size_t);
void	 store_tmissing(struct store *, int, const char *, const void *,
		    size_t);
int	 store_cur_get(struct cur *, struct store *, struct __db_txn *, int,
		    const void *, size_t, void *, size_t, size_t *);
int	 store_cur_open(struct cur *, struct store *, struct __db_txn *, int);
int	 store_cur_step(struct cur *, int, void *, size_t, size_t *, void *,
		    size_t, size_t *);
int	 store_cur_del(struct cur *);
int	 store_cur_patch(struct cur *, size_t, const void *, size_t);
int	 store_cur_done(struct cur *, int);
int	 store_batch_ok(struct store_batch *);

/* store_rec.c */
void	 rec_put_u32(unsigned char *, uint32_t);
void	 rec_put_u64(unsigned char *, uint64_t);
uint32_t	 rec_get_u32(const unsigned char *);
uint64_t	 rec_get_u64(const unsigned char *);
void	 rec_key_describe(int, const void *, size_t, char *, size_t);
int	 rec_version(int, const void *, size_t, const void *, size_t,
		    char *, size_t);
int	 rec_malformed(int, const void *, size_t, const char *,
		    char *, size_t);
void	*rec_hook_encode(const struct store_hook *, uint32_t, const char *,
		    const char *, const struct store_body_at *, size_t *);
size_t	 rec_hook_body_off(const unsigned char *);
void	 rec_hook_rid_get(const unsigned char *, uint32_t *, uint16_t *);
int	 rec_hook_decode(int, const void *, size_t, const void *, size_t,
		    int, struct store_hook_rec *, char *, size_t);

/* store.c: the environment's calls store_maint.c makes, libdb's return
 * code (0 or an error for store_seterr) */
int	 store_env_checkpoint(struct store *);
int	 store_env_cache(struct store *, unsigned long *pages,
		    unsigned long *dirty);
int	 store_env_trickle(struct store *, int pct, int *wrote);
int	 store_env_log_archive(struct store *, char ***abs_paths);
/* A table's file descriptor (DB->fd): 0, or -1 when it is not open. */
int	 store_table_fd(struct store *, int table, int *fd);

/* store_sync.c: the hook (db_env_set_func_fsync), the failures it has
 * seen in the process, the first one's errno; the check that makes the
 * store lost after one; a thread whose syncs are not the store's. */
int	 store_sync(int);
unsigned long	 store_sync_count(void);
int	 store_sync_errno(void);
void	 store_sync_check(struct store *, const char *);
void	 store_set_lost(struct store *);	/* store.c */
void	 store_sync_aside(int);

/* store_hooks.c */
int	 hooks_head_get(struct store *, struct __db_txn *, int, uint64_t,
		    struct store_hook_rec *);

/* store_bodies.c */
int	 bodies_put(struct store_batch *, const struct store_hook *,
		    struct store_body_at *);
int	 bodies_get(struct store *, struct __db_txn *, uint64_t,
		    struct store_hook_rec *);
int	 bodies_unref(struct store_batch *, struct __dbc *, uint64_t,
		    const unsigned char *, size_t);
int	 bodies_upgrade(struct store *, struct bodies_upgrade *);

/* store_hookids.c: the id index's entry of a hook put or deleted, in the
 * batch (0, or -1 on a store error); the build of a store of schema 2's
 * index at the open. */
int	 hookids_put(struct store_batch *, const unsigned char[UUID_LEN],
		    uint64_t);
int	 hookids_del(struct store_batch *, const unsigned char[UUID_LEN],
		    uint64_t);
int	 hookids_upgrade(struct store *);
int	 hookids_schema_idseq(struct store *);

/* store_attempts.c: hook id went (its last row, or an operator's
 * delete): its attempts are kept retention.attempts_s from now.  0, or
 * -1 on a store error. */
int	 attempts_hook_gone(struct store_batch *,
		    const unsigned char[UUID_LEN]);

/* store_dedupe.c */
int	 dedupe_put(struct store *, struct __db_txn *,
		    const struct store_hook *);

/* store_rows.c */
int	 rows_read(struct store *, struct __db_txn *, const unsigned char *,
		    struct store_row *);
int	 rows_write(struct store *, struct __db_txn *, const unsigned char *,
		    const struct store_row *);
int	 rows_pending(const struct store_row *);
int	 rows_due_parse(const unsigned char *, size_t, size_t *, uint64_t *,
		    const unsigned char **);
int	 rows_due_put(struct store *, struct __db_txn *, const char *,
		    uint64_t, const unsigned char *);
int	 rows_tenants(struct store *, int, int (*)(const char *,
		    const unsigned char *, size_t, void *), void *);
/* Settling's parts: one live row of hook seq gone (its count drops, the
 * hook and its body go with its last row, or with ROWS_UNREF_KEEP it is
 * kept: 1 then, else 0); a pending row out of its due key or lane (1 when
 * it was its lane's head); the row deleted with its counts (unref: its
 * hook's too, 2 when its last row went with it), its lane released when
 * head.  See store_rows.c. */
#define ROWS_UNREF_KEEP	2	/* rows_gone's unref: a delivered row,
				 * its hook kept at its last */
int	 rows_hook_unref(struct store_batch *, uint64_t seq, int keep);
int	 rows_unindex(struct store_batch *, const unsigned char *,
		    const struct store_row *);
int	 rows_gone(struct store_batch *, const unsigned char *,
		    const struct store_row *, int head, int unref);

/* store_lanes.c */
int	 lane_is_head(struct store_batch *, const unsigned char *,
		    const struct store_row *);
int	 lane_leave(struct store_batch *, const unsigned char *,
		    const struct store_row *);
int	 lane_release(struct store_batch *, const unsigned char *,
		    const struct store_row *);
int	 lane_join(struct store_batch *, const unsigned char *,
		    const struct store_row *);

/* store_archive.c: a delivered row's record (the row as settled; none
 * for an orphan, whose hook is gone); with
 * its hook's last row, the hook kept (c on its record, head its first
 * bytes); a hook deleted that had delivered records, which go with it
 * (and its archive entry when kept).  0, or -1 on a store error. */
int	 archive_delivered(struct store_batch *, const unsigned char *,
		    const struct store_row *);
int	 archive_keep(struct store_batch *, struct cur *, uint64_t,
		    const unsigned char *);
int	 archive_forget(struct store_batch *, uint64_t, uint8_t flags);

/* store_replay.c: a replay step's start and end, for store_archive.c's
 * step too. */
uint64_t replay_step_start(struct store_batch *, const struct store_replay *,
		    int, size_t, struct walk *);
int	 replay_step_save(struct store_batch *, const unsigned char *,
		    struct store_replay *, const struct store_replay_step *,
		    int end);

/* store_bdb.c */
void	 bdb_log_zero_ahead(struct store *);
void	 bdb_region_remove(const char *, int);
char	*bdb_region_home(const struct stat *, int *);

/* store_backup.c */
int	 store_backup_pages_take(struct store *);
void	 store_backup_pages_give(struct store *);

/* store_trash.c */
void	 trash_path(const struct store *, uint32_t, char *, size_t);
void	*trash_main(void *);
void	 trash_clear(struct store *, int);

/*
 * For the tests: the store's seams, and what they read that the daemon
 * reads too (or cannot be had from outside store_bdb.c).  The verbs only
 * the tests call are tests/storeutil.c's, over what this header shares.
 */

/* Where the region files go: a directory per data directory under base
 * ("/dev/shm"), or with NULL the data directory itself. */
void		 store_set_region_base(const char *base);
/* The call store_sync makes for every sync Berkeley DB asks for (NULL:
 * fdatasync). */
void		 store_set_sync_func(int (*)(int));
/* The number of the log file the next record goes to.  For tests. */
uint32_t	 store_log_current(struct store *);

/* Number of records in a table by name ("hooks", "due", ...): a full
 * cursor walk, for tests and ankusactl debugging.  -1 on error. */
int64_t		 store_debug_count(struct store *, const char *table);

/* As store_dead_list, from dead time since_ms on. */
int		 store_dead_list_since(struct store *, const char *source,
		    uint64_t since_ms, uint64_t limit,
		    int (*cb)(const struct store_dead_info *, void *), void *);
/* The source's pending rows (DUE, HEAD, MEMBER, PARKED: not DEAD) in row
 * key order, of hooks with seq > after_seq: a walk of rows, for admin
 * operations (dead_letter_source).  At most limit rows (0: all), except
 * that a page never splits a hook: it ends after the last row of the hook
 * it reached the limit in (so at most limit + 63), and the next page is
 * after_seq = that hook's seq.  cb returning non-zero stops.  0 or -1. */
int		 store_pending_rows_of_source(struct store *,
		    const char *source, uint64_t after_seq, uint64_t limit,
		    int (*cb)(const unsigned char rowkey[STORE_ROWKEY_LEN],
		    const struct store_row *, void *), void *);


#endif /* ANKUSA_STORE_INT_H */
