/*
 * store_int.h: what the store's own files share (store.c, store_rec.c,
 * store_hooks.c, store_dedupe.c, store_rows.c, lanes.c, store_maint.c,
 * store_bdb.c, store_backup.c, trash.c) and nothing else includes: struct store, the tables,
 * the record helpers and the walks.  The public verbs are in store.h; the
 * store's contracts in store.c's header comment, its layout in
 * store_rec.c's.  What one file shares with the others here takes that
 * file's prefix: store_ (store.c), rec_ (store_rec.c), hooks_, dedupe_,
 * rows_, lane_ (lanes.c), bdb_ (store_bdb.c), store_backup_, trash_; the
 * rest is static.
 */
#ifndef ANKUSA_STORE_INT_H
#define ANKUSA_STORE_INT_H

#include <sys/stat.h>

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <db.h>

#include "store.h"

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
	T_COUNT
};

extern const char *const store_tables[T_COUNT];

#define STORE_LOG_FILE		(32u * 1024 * 1024)
#define HOOK_FLAG_LOGGED	0x04	/* the body is in the log: the record
					 * ends in its position (u32 file,
					 * u32 offset) instead */
#define STORE_LOGBODY_MIN	256		/* smaller bodies stay in the
						 * record: a position and
						 * a log record cost more */
#define STORE_LOGBODY_MAX	(1024u * 1024)	/* larger ones too: a log
						 * record must fit a file */
#define LANE_KEY_MAX		(2 * (STORE_NAME_MAX + 1) + 12)

struct store_batch {
	struct store		*st;
	DB_TXN			*txn;
	struct store_counts	 counts;	/* committed plus this batch */
	int			 failed;	/* a put failed: abort only */
};

/* Where the lane sweep of one tenant goes on (the last marks key it
 * visited); only while it stopped at max before the tenant's end. */
struct lane_resume {
	struct lane_resume	*next;
	size_t			 len;
	unsigned char		 key[LANE_KEY_MAX];
};

/* Body reads: the read-ahead over one log file. */
struct store_ra {
	int			 fd;		/* the log file numbered file,
						 * open, or -1 */
	uint32_t		 file;
	uint64_t		 start;		/* its offset of buf[0] */
	size_t			 len;		/* bytes in buf */
	unsigned char		*buf;		/* STORE_RA_SIZE */
};

/* The zero-fill ahead of the log's end. */
struct store_zero {
	int			 fd;		/* the log file numbered file,
						 * open to zero ahead, or -1 */
	uint32_t		 file;
	uint64_t		 end;		/* zeroed up to here (the file's
						 * end after a failure) */
};

/* The bodies in the log: their records, reads and retention. */
struct store_body {
	DB_LSN			 logged_end;	/* the end of the last body
						 * record logged */
	DB_LSN			 flushed_end;	/* and of the last one that a
						 * log flush wrote out */
	uint64_t		 reads;		/* bodies read from the log */
	uint64_t		 preads;	/* and the reads that took */
	unsigned char		*lbuf;		/* a body's log record */
	size_t			 lbufcap;
	uint32_t		 retain;	/* STORE_BODY_RETAIN_FILES */
};

/* Pruned log files to empty, shared with the trash thread. */
struct store_trash {
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;		/* the queue or stop changed;
						 * the thread and
						 * store_trash_wait wait on
						 * it: broadcast */
	pthread_t		 thread;
	int			 on;		/* started, not joined */
	int			 stop;
	uint32_t		*files;		/* [0]: in hand */
	size_t			 n, cap;
	uint64_t		 steps;		/* done, for the tests */
};

struct store {
	DB_ENV			*env;
	DB			*db[T_COUNT];
	char			*dir;
	char			*home;		/* region files, if not dir */
	int			 home_fd;	/* its REGION_LOCK, held */
	uint64_t		 next_seq;	/* ahead of meta after aborts */
	uint64_t		 seq_saved;	/* next_seq as meta has it */
	struct store_counts	 counts;	/* as committed */
	unsigned char		 id[16];	/* meta store_id */
	struct store_batch	 batch;
	int			 batch_open;
	int			 lost;		/* a sync failed, or BDB
						 * panicked: restart */
	unsigned long		 sync_seen;	/* sync_failures at the open */
	char			 lost_why[512];	/* its error */
	int			 opening;	/* in store_open */
	int			 lm_unsaved;	/* meta lane_members missing:
						 * write it next commit */
	struct lane_resume	*resume;	/* lane sweeps, per tenant */
	struct store_ra		 ra;
	struct store_zero	 z;
	struct store_body	 body;
	uint64_t		 inline_below;	/* every hook below this seq
						 * has its body in its record
						 * (or none) */
	uint32_t		 pin;		/* oldest log file with a live
						 * body, as the last migrate
						 * pass found (the then
						 * current one if none) */
	int			 pin_known;	/* a pass has found it */
	int			 behind;	/* the last pass stopped at its
						 * max or visit limit */
	uint64_t		 stuck_seq;	/* 1 + the hook a pass stopped
						 * at, unreadable; 0 none */
	struct store_trash	 trash;
	struct store_backup	*backup;	/* the one backup, which holds
						 * the log files from removal
						 * (store_backup.c), or NULL */
	char			 err[1536];
	char			 dberr[512];	/* BDB's last own message */
};

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
	DB_TXN		*txn;		/* a batch's, or NULL: store_readtxn()
					 * at each (re)open */
	DBC		*c;		/* NULL: paused, the next step seeks */
	int		 at;		/* next seek: 1 at key, 0 after it */
	unsigned char	 key[STORE_KEY_MAX + 1];
	size_t		 klen;
	unsigned char	 val[STORE_REC_MAX];
	size_t		 vlen;
};

/* The callers of store_due_tenants and store_marked_tenants. */
struct tenants_ctx {
	struct store	*st;
	int		(*due_cb)(const char *, uint64_t, void *);
	int		(*cb)(const char *, void *);
	void		*arg;
};

/* store.c */
void	 store_seterr(struct store *, int, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
int	 store_table_index(const char *);
int	 store_put(struct store *, DB_TXN *, int, const void *,
		    size_t, const void *, size_t, uint32_t);
DB_TXN	*store_readtxn(struct store *);
void	 store_walk_init(struct walk *, struct store *, DB_TXN *, int,
		    const void *, size_t);
int	 store_walk_next(struct walk *);
void	 store_walk_pause(struct walk *);
void	 store_walk_seek(struct walk *, const void *, size_t);
int	 store_walk_done(struct walk *, int);
int	 store_tget(struct store *, DB_TXN *, int, const void *, size_t,
		    void *, size_t, size_t *);
int	 store_tdel(struct store *, DB_TXN *, int, const void *, size_t);
int	 store_batch_ok(struct store_batch *);
void	 store_sync_check(struct store *, const char *);
void	 store_sync_aside(int);

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
		    const char *, const DB_LSN *, size_t *);
int	 rec_hook_decode(int, const void *, size_t, const void *, size_t,
		    int, struct store_hook_rec *, char *, size_t);

/* store_hooks.c */
int	 hooks_head_get(struct store *, DB_TXN *, int, uint64_t,
		    struct store_hook_rec *);

/* store_dedupe.c */
int	 dedupe_put(struct store *, DB_TXN *,
		    const struct store_hook *);

/* store_rows.c */
int	 rows_read(struct store *, DB_TXN *, const unsigned char *,
		    struct store_row *);
int	 rows_write(struct store *, DB_TXN *, const unsigned char *,
		    const struct store_row *);
int	 rows_pending(const struct store_row *);
int	 rows_due_put(struct store *, DB_TXN *, const char *, uint64_t,
		    const unsigned char *);
int	 rows_tenants(struct store *, int, int (*)(const char *,
		    const unsigned char *, size_t, void *), void *);

/* lanes.c */
int	 lane_is_head(struct store_batch *, const unsigned char *,
		    const struct store_row *);
int	 lane_leave(struct store_batch *, const unsigned char *,
		    const struct store_row *);
int	 lane_release(struct store_batch *, const unsigned char *,
		    const struct store_row *);

/* store_bdb.c */
int	 bdb_body_log(struct store *, const struct store_hook *, DB_LSN *);
void	 bdb_log_zero_ahead(struct store *);
int	 bdb_body_fetch(struct store *, uint64_t, struct store_hook_rec *);
void	 bdb_ra_close(struct store *);
int	 bdb_app_dispatch(DB_ENV *, DBT *, DB_LSN *, db_recops);
void	 bdb_dbt_user(DBT *, void *, size_t, int);
void	 bdb_region_remove(const char *, int);
char	*bdb_region_home(const struct stat *, int *);

/* store_backup.c */
int	 store_backup_pages_take(struct store *);
void	 store_backup_pages_give(struct store *);

/* trash.c */
void	 trash_path(const struct store *, uint32_t, char *, size_t);
void	*trash_main(void *);
void	 trash_clear(struct store *, int);

#endif /* ANKUSA_STORE_INT_H */
