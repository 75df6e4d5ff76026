/*
 * store.h: the Berkeley DB store, the only durable state of a node.
 *
 * Only the master opens it, and only through this interface: nothing else
 * sees a DB or DB_ENV.  One transactional environment in node.data_dir,
 * opened with DB_RECOVER at every start.  Tables (B-trees, keys big-endian
 * so they sort): meta, hooks, rows, due, lanes, members, marks, dead,
 * dedupe, dedupe_exp, replays, quarantine.  Every value starts with a format
 * version byte; a reader refuses a version it does not know, naming the
 * record.  On damage store_open refuses and says which file and what.
 *
 * Writes come in batches: store_batch_begin, puts, store_batch_commit, which
 * commits with DB_TXN_WRITE_NOSYNC and then flushes the log once for the
 * whole batch (group commit).  Only after store_batch_commit returns 0 is
 * anything in the batch durable.
 */
#ifndef ANKUSA_STORE_H
#define ANKUSA_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "ids.h"

#define STORE_SCHEMA_VERSION	1

/* Sink modules, as bound in a row (never renumber: stored). */
enum store_module {
	MODULE_HTTP = 1,
	MODULE_SQS = 2,
	MODULE_PUBSUB = 3,
	MODULE_LOG = 4,
};

struct store;
struct store_hook_rec;

struct store_header {
	const char	*name;
	const char	*value;
};

/* A hook as the writer hands it in. */
struct store_hook {
	uint64_t		 seq;		/* out: assigned by the store */
	unsigned char		 id[UUID_LEN];
	const char		*tenant;
	const char		*source;
	uint64_t		 received_at;	/* wall ms */
	const char		*method;
	const char		*path;
	const char		*content_type;	/* "" when none */
	const struct store_header *headers;	/* forwarded headers */
	int			 nheaders;
	const void		*body;
	size_t			 body_len;
	unsigned char		 sha256[32];
	const char		*dedupe_key;	/* NULL or "" when none */
	int			 flagged;
	uint64_t		 dedupe_expires;	/* wall ms; read only with
						 * a dedupe key and not
						 * flagged */
};

/* One delivery row to create with a hook. */
struct store_row_spec {
	uint32_t	sink_index;
	uint8_t		module;		/* enum store_module */
	int		ordered;	/* 1: write as a lane member, not due */
	uint64_t	lane_hash;	/* ordered: hash of the order key */
};

/* A hook as listed (no body). */
struct store_hook_info {
	uint64_t	seq;
	char		id[UUID_STRLEN + 1];
	char		tenant[65];
	char		source[65];
	uint64_t	received_at;
	uint64_t	size;
	uint32_t	rows;
	int		flagged;
};

struct store_counts {
	uint64_t	hooks;		/* stored hooks */
	uint64_t	rows;		/* live delivery rows (any state) */
	uint64_t	dead;		/* dead-lettered rows */
	uint64_t	qhooks;		/* hooks held in the quarantine pen */
	uint64_t	qbytes;		/* their body bytes */
};

/* A held hook as listed (no body). */
struct store_quarantine_info {
	uint64_t	seq;
	char		id[UUID_STRLEN + 1];
	char		tenant[65];
	char		source[65];
	uint64_t	received_at;
	uint64_t	size;		/* body bytes */
	char		reason[64];	/* the verification failure */
};

/* Open (creating if needed) the environment in dir, running recovery.
 * NULL on failure, with err naming the file and the problem. */
struct store	*store_open(const char *dir, char *err, size_t errlen);
/* Checkpoint and close. */
void		 store_close(struct store *);
int		 store_checkpoint(struct store *);

struct store_batch;
struct store_batch *store_batch_begin(struct store *);
/* Put a hook and its rows, and its dedupe entry (see Dedupe below);
 * assigns h->seq.  -1 on a store error (the batch must then be aborted). */
int		 store_batch_put_hook(struct store_batch *, struct store_hook *,
		    const struct store_row_spec *, int nrows);
/* Commit and flush: 0 only when durable; -1 after aborting. */
int		 store_batch_commit(struct store_batch *);
void		 store_batch_abort(struct store_batch *);

/* Hooks in seq order after after_seq, optionally of one source, at most
 * limit (0: all); cb returning non-zero stops.  0 or -1 on a store error. */
int		 store_hooks_list(struct store *, const char *source,
		    uint64_t after_seq, uint64_t limit,
		    int (*cb)(const struct store_hook_info *, void *), void *);
int		 store_counts(struct store *, struct store_counts *);

/*
 * Dedupe.  store_batch_put_hook writes, for a hook with a non-empty
 * dedupe_key and flagged 0, the entry (tenant, source, key) -> (hook id,
 * dedupe_expires) and its expiry index entry, in the batch's transaction;
 * an older entry of the same key is overwritten (its index entry stays for
 * the sweep).  Flagged hooks and quarantined hooks write no entry.
 */

/* 1 with id_out set if (tenant, source, key) has an entry that expires
 * after now_ms, 0 if none or expired, -1 on a store error (a key too long
 * to store is one).  With a batch open it reads inside the batch, so it
 * sees the batch's own uncommitted entries. */
int		 store_dedupe_get(struct store *, const char *tenant,
		    const char *source, const char *key, uint64_t now_ms,
		    unsigned char id_out[UUID_LEN]);
/* Remove up to max expiry index entries with expiry <= now_ms, oldest
 * first, and with each the entry it names, but only if that entry still
 * has the same expiry (a key stored again since has a later one and
 * stays).  Walks the index from its start and stops at the first live
 * expiry: never a full scan.  Returns the index entries removed (0 with
 * max 0), or -1 on a store error (the batch must then be aborted). */
int		 store_batch_sweep_dedupe(struct store_batch *, uint64_t now_ms,
		    unsigned max);

/*
 * The quarantine pen (table quarantine, keyed by seq): hooks that failed
 * verification under on_verify_failure: quarantine, held with every
 * request header (for re-verification), the body and the failure reason.
 * The pen's hook and body byte counters live in meta ("qhooks", "qbytes"),
 * changed in the transaction that changes the pen.  Releasing a hook is
 * store_batch_put_hook (same id, a new seq) and store_batch_del_quarantine
 * in one batch.
 */

#define STORE_QREASON_MAX	63	/* a reason, bytes */

/* Hold h: assigns h->seq from the hooks' seq counter, stores every field
 * of h (headers: all of the request's; its dedupe key too, for the
 * release) and reason (NULL: "", longer than STORE_QREASON_MAX bytes: an
 * error), no rows, no dedupe entry.  -1 on a store error (the batch must
 * then be aborted). */
int		 store_batch_put_quarantine(struct store_batch *,
		    struct store_hook *, const char *reason);
/* 1 removed (counters adjusted), 0 no such seq, -1 on a store error (the
 * batch must then be aborted). */
int		 store_batch_del_quarantine(struct store_batch *, uint64_t seq);
/* As store_hooks_list, over the pen; reads no bodies. */
int		 store_quarantine_list(struct store *, const char *source,
		    uint64_t after_seq, uint64_t limit,
		    int (*cb)(const struct store_quarantine_info *, void *),
		    void *);
/* 1 found (out filled as by store_hook_get, out->reason set, reason
 * copied to reason unless NULL), 0 not found, -1 on a store error.  Note:
 * the opposite of store_hook_get's 0/1. */
int		 store_quarantine_get(struct store *, uint64_t seq,
		    struct store_hook_rec *out, char *reason, size_t reasonlen);
/* The pen's body bytes and hooks, from memory: as committed, plus the open
 * batch's puts and deletes while one is open (so a writer checking
 * quarantine.max_bytes before each put counts its own batch). */
int		 store_quarantine_usage(struct store *, uint64_t *bytes,
		    uint64_t *hooks);

/* The last error the store met, for logs. */
const char	*store_strerror(struct store *);

/*
 * Added with the store implementation: reading a hook back, the record
 * codecs of every table and a debugging count.  Keys and value layouts are
 * documented at the top of store.c.
 */

/* Only one batch may be open at a time (single-threaded master: a second
 * transaction on the same pages would wait on the first forever);
 * store_batch_begin returns NULL while one is open. */

#define STORE_NAME_MAX		64	/* tenant and source ids, bytes */
#define STORE_ERROR_MAX		1024	/* last error, dead reason, bytes */
#define STORE_REC_VERSION	1	/* record format this build writes */
#define STORE_REC_MAX		4096	/* any record but a hook fits */
#define STORE_KEY_MAX		1024	/* any key fits */
#define STORE_ROWKEY_LEN	12	/* seq u64 + sink index u32 */
#define STORE_DEADKEY_LEN	20	/* dead time u64 + row key */

/* A row's place in the pipeline (stored: never renumber). */
enum store_row_state {
	STORE_ROW_DUE = 1,	/* has a due key: may be claimed */
	STORE_ROW_MEMBER = 2,	/* waits behind its lane's head (members) */
	STORE_ROW_HEAD = 3,	/* its lane's head, has a due key */
	STORE_ROW_PARKED = 4,	/* parked by an open breaker, due at its end */
};

/* A delivery row (table rows). */
struct store_row {
	char		tenant[STORE_NAME_MAX + 1];
	char		source[STORE_NAME_MAX + 1];
	uint32_t	sink_index;
	uint8_t		module;		/* enum store_module */
	uint32_t	attempts;	/* attempts spent */
	uint64_t	first_attempt;	/* wall ms, 0 before the first */
	uint64_t	due;		/* wall ms */
	char		last_error[STORE_ERROR_MAX + 1];	/* "" if none */
	uint64_t	lane_hash;	/* ordered: hash of the order key */
	uint8_t		state;		/* enum store_row_state */
	unsigned char	replay_id[UUID_LEN];	/* all zero: not a replay */
	uint64_t	body_size;	/* its hook's body, for byte windows */
};

/* A dead letter (table dead); the row and its hook stay alive. */
struct store_dead {
	char		reason[STORE_ERROR_MAX + 1];	/* contracts' reasons */
	uint32_t	attempts;
	char		last_error[STORE_ERROR_MAX + 1];
};

/* A dedupe entry (table dedupe). */
struct store_dedupe {
	unsigned char	hook_id[UUID_LEN];	/* the original hook */
	uint64_t	expires;		/* wall ms */
};

enum store_replay_state {
	STORE_REPLAY_RUNNING = 1,
	STORE_REPLAY_PAUSED = 2,
	STORE_REPLAY_CANCELLED = 3,
	STORE_REPLAY_DONE = 4,
};

enum store_replay_kind {
	STORE_REPLAY_DLQ = 1,
};

/* A replay job (table replays, keyed by its 16-byte job id). */
struct store_replay {
	uint8_t		state;		/* enum store_replay_state */
	uint8_t		kind;		/* enum store_replay_kind */
	char		source[STORE_NAME_MAX + 1];	/* "": every source */
	uint64_t	since;		/* dead time window, wall ms; 0: open */
	uint64_t	until;
	uint32_t	rate;		/* rows per second */
	uint32_t	max_lag_ms;
	uint64_t	created_at;	/* wall ms */
	uint64_t	moved;		/* rows moved so far */
	unsigned char	cursor[STORE_DEADKEY_LEN];	/* last dead key moved,
							 * all zero: none yet */
};

/* A hook read back.  Strings and body point into the record, which lives
 * as long as the struct; dedupe_key is NULL when none. */
struct store_hook_rec {
	struct store_hook	 hook;
	uint32_t		 rows;		/* live row count */
	uint64_t		 body_size;	/* even when checked in */
	const char		*claim_ref;	/* "": the body is inline */
	struct store_header	*hdrs;		/* hook.headers, owned */
	void			*mem;		/* the record, owned, or NULL */
	const char		*reason;	/* quarantine: the failure;
						 * hooks: NULL */
};

/* 0 found, 1 no such hook, -1 on a store error (a damaged record too). */
int		 store_hook_get(struct store *, uint64_t seq,
		    struct store_hook_rec *);
void		 store_hook_rec_free(struct store_hook_rec *);

/* Number of records in a table by name ("hooks", "due", ...): a full
 * cursor walk, for tests and ankusactl debugging.  -1 on error. */
int64_t		 store_debug_count(struct store *, const char *table);

/* Keys.  The variable ones return their length, 0 if they do not fit. */
void		 store_key_hook(unsigned char out[8], uint64_t seq);
void		 store_key_row(unsigned char out[STORE_ROWKEY_LEN],
		    uint64_t seq, uint32_t sink_index);
void		 store_key_dead(unsigned char out[STORE_DEADKEY_LEN],
		    uint64_t dead_at,
		    const unsigned char rowkey[STORE_ROWKEY_LEN]);
size_t		 store_key_due(unsigned char *, size_t, const char *tenant,
		    uint64_t due, const unsigned char rowkey[STORE_ROWKEY_LEN]);
size_t		 store_key_lane(unsigned char *, size_t, const char *tenant,
		    const char *source, uint32_t sink_index,
		    uint64_t lane_hash);
size_t		 store_key_member(unsigned char *, size_t,
		    const unsigned char *lane, size_t lanelen, uint64_t seq);
size_t		 store_key_dedupe(unsigned char *, size_t, const char *tenant,
		    const char *source, const char *key);
size_t		 store_key_dedupe_exp(unsigned char *, size_t, uint64_t expires,
		    const unsigned char *dkey, size_t dkeylen);

/*
 * Record codecs.  Encoders return the record's length, 0 if it does not fit
 * (or a field is too long).  Decoders take the record's key only to name it
 * in err: "rows record seq 42 sink 0 has format version 7, this build
 * reads 1".  They return 0, or -1 with err set.
 */
void		*store_rec_hook_encode(const struct store_hook *, uint32_t rows,
		    const char *claim_ref, size_t *lenp);	/* malloc'd */
int		 store_rec_hook_decode(const char *table, const void *key,
		    size_t klen, const void *val, size_t vlen,
		    struct store_hook_rec *, char *err, size_t errlen);
/* A quarantine record (store_rec_hook_decode with "quarantine" reads it
 * back, reason in rec.reason).  NULL if it does not fit. */
void		*store_rec_quarantine_encode(const struct store_hook *,
		    const char *reason, size_t *lenp);	/* malloc'd */
size_t		 store_rec_row_encode(const struct store_row *,
		    unsigned char *, size_t);
int		 store_rec_row_decode(const void *key, size_t klen,
		    const void *val, size_t vlen, struct store_row *,
		    char *err, size_t errlen);
size_t		 store_rec_dead_encode(const struct store_dead *,
		    unsigned char *, size_t);
int		 store_rec_dead_decode(const void *key, size_t klen,
		    const void *val, size_t vlen, struct store_dead *,
		    char *err, size_t errlen);
size_t		 store_rec_dedupe_encode(const struct store_dedupe *,
		    unsigned char *, size_t);
int		 store_rec_dedupe_decode(const void *key, size_t klen,
		    const void *val, size_t vlen, struct store_dedupe *,
		    char *err, size_t errlen);
size_t		 store_rec_replay_encode(const struct store_replay *,
		    unsigned char *, size_t);
int		 store_rec_replay_decode(const void *key, size_t klen,
		    const void *val, size_t vlen, struct store_replay *,
		    char *err, size_t errlen);
/* lanes (head row key) and members (row key): table is "lanes" or
 * "members". */
size_t		 store_rec_rowkey_encode(const unsigned char
		    rowkey[STORE_ROWKEY_LEN], unsigned char *, size_t);
int		 store_rec_rowkey_decode(const char *table, const void *key,
		    size_t klen, const void *val, size_t vlen,
		    unsigned char rowkey[STORE_ROWKEY_LEN], char *err,
		    size_t errlen);
/* Tables whose value is only the version byte: due, marks, dedupe_exp. */
size_t		 store_rec_empty_encode(unsigned char *, size_t);
int		 store_rec_empty_decode(const char *table, const void *key,
		    size_t klen, const void *val, size_t vlen, char *err,
		    size_t errlen);

#endif
