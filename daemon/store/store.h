/* SPDX-License-Identifier: ISC */
/*
 * store.h: the Berkeley DB store, the only durable state of a node.
 *
 * Only the master opens it, and only through this interface: nothing else
 * sees a DB or DB_ENV.  One transactional environment in node.data_dir,
 * opened with DB_RECOVER at every start.  Tables (B-trees, keys big-endian
 * so they sort): meta, hooks, rows, due, lanes, members, marks, dead,
 * dedupe, dedupe_exp, replays, quarantine, hookids (id -> seq), audit,
 * attempts, attempts_end; and
 * bodies, a heap of the hooks' bodies of 256 bytes to 1 MiB, keyed by
 * record id.  Every value starts with a format version byte; a reader refuses a version it does not know, naming the
 * record.  On damage store_open refuses and says which file and what.
 *
 * Writes come in batches: store_batch_begin, puts, store_batch_commit, which
 * commits with DB_TXN_WRITE_NOSYNC and then flushes the log once for the
 * whole batch (group commit).  Only after store_batch_commit returns 0 is
 * anything in the batch durable.
 *
 * One return convention: a verb that looks a record up, or changes one
 * named by its key, answers 1 found (done), 0 not found (nothing to do),
 * -1 on a store error, which store_strerror then names; any other verb
 * answers 0 (or the count it says), or -1; a pointer is NULL on failure;
 * a "whether" 1 or 0.  The answers beyond these, store_batch_row_dead's 2
 * and store_batch_source_dead's 1, are stated where they are.
 */
#ifndef ANKUSA_STORE_H
#define ANKUSA_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "ids.h"
#include "trace.h"

/* The daemon's lock file, in the data directory beside the tables. */
#define STORE_LOCK_FILE		"ankusad.lock"
#define STORE_SCHEMA_VERSION	4	/* 2: no body in the log; 3: hookids;
					 * 4: ids that carry their seq
					 * (HOOK_FLAG_IDSEQ) */

/* Sink modules, as bound in a row (never renumber: stored). */
enum store_module {
	MODULE_HTTP = 1,
	MODULE_SQS = 2,
	MODULE_PUBSUB = 3,
	MODULE_LOG = 4,
	MODULE_RABBITMQ = 5,
	MODULE_NATS = 6,
	MODULE_REDIS = 7,
	MODULE_KAFKA = 8,
};
#define STORE_MODULES	9	/* one past the largest module */

struct store;
struct store_hook_rec;

struct store_header {
	const char	*name;
	const char	*value;
};

#define STORE_EVTYPE_MAX	200	/* an event type, bytes (the edge's
					 * SUBMIT_EVTYPE_MAX) */

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
	uint8_t			 verification;	/* enum hook_verification
						 * (common/msg.h): what its
						 * deliveries state */
	unsigned char		 trace[TRACE_CTX_LEN];	/* its trace context
						 * (common/trace.h), copied
						 * as the edge sent it */
	const char		*tracestate;	/* NULL or "": none */
	const char		*event_type;	/* NULL or "": none; as the
						 * edge read it (at most
						 * STORE_EVTYPE_MAX bytes) */
	int			 id_seq;	/* in: 1 to have the store
						 * write the low bits of
						 * seq into id
						 * (uuid_put_seq), where it
						 * finds the hook by its id
						 * with no hookids entry;
						 * only for a new id, never
						 * one already given out.
						 * Out of store_hook_get:
						 * whether the id carries
						 * its seq */
	unsigned char		 replay_id[UUID_LEN];	/* its rows': the
						 * replay job that released
						 * it from the pen; all zero:
						 * none (not stored with the
						 * hook) */
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
	char		trace_id[2 * TRACE_ID_LEN + 1];	/* its trace id, hex
						 * (the delivery log lines) */
	char		event_type[STORE_EVTYPE_MAX + 1];	/* "": none */
	int		kept;		/* delivered and kept (the archive) */
};

struct store_counts {
	uint64_t	hooks;		/* stored hooks */
	uint64_t	rows;		/* live delivery rows (any state) */
	uint64_t	dead;		/* dead-lettered rows */
	uint64_t	qhooks;		/* hooks held in the quarantine pen */
	uint64_t	qbytes;		/* their body bytes */
	uint64_t	lane_members;	/* rows waiting behind a lane head */
	uint64_t	ahooks;		/* delivered hooks kept (the archive),
					 * not counted in hooks */
	uint64_t	abytes;		/* their bytes (records and bodies) */
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
	char		event_type[STORE_EVTYPE_MAX + 1];	/* "": none */
};

/* Open (creating if needed) the environment in dir, running recovery.
 * NULL on failure, with err naming the file and the problem. */
struct store	*store_open(const char *dir, char *err, size_t errlen);
/* Before the open: the most hooks a batch holds (batcher.max_batch), which
 * sizes the lock table (8 locks a hook, at least 20,000). */
void		 store_set_batch(unsigned max_hooks);
/* Checkpoint and close: 0, or -1 when the checkpoint or a sync failed or
 * the store was lost (logged): not a clean stop, the next open's recovery
 * replays the log. */
int		 store_close(struct store *);
/* A checkpoint, then the log files that neither recovery nor a hook's
 * body needs are removed.  0, or -1 on a store error. */
int		 store_checkpoint(struct store *);
/*
 * The store's upkeep, in the master's loop between batches: keeping the
 * buffer pool clean and the tables' write-back every quarter second, and
 * the checkpoint every `every_ms` in steps (store_maint.c).  Call it first
 * with the interval (store_maint_start), then whenever the delay it
 * returned has passed: it does what is due at now_ms (monotonic) and
 * returns the ms until it wants to run again; *did gets
 * STORE_MAINT_CHECKPOINTED when a checkpoint ended (done or failed,
 * logged), after which the caller's own sweeps may follow.  Errors are
 * logged; the caller checks the store (store_lost) after each call.
 */
#define STORE_MAINT_CHECKPOINTED	0x01
void		 store_maint_start(struct store *, uint64_t every_ms,
		    uint64_t now_ms);
uint64_t	 store_maint(struct store *, uint64_t now_ms, int *did);
/* Write `pages` or more (up to a per cent of the cache more) of the buffer
 * pool's dirty pages to their files (no sync), so that the checkpoint
 * after a few such steps, spread over the loop's turns, finds few left to
 * write while it holds the loop.  The dirty pages left, or -1 on a store
 * error. */
long		 store_clean_step(struct store *, int pages);
/* When less than low per cent of the buffer pool is clean, write dirty
 * pages until high per cent is (no sync).  The pages written (0 when
 * enough was clean), or -1 on a store error. */
int		 store_keep_clean(struct store *, int low, int high);

struct store_batch;
struct store_batch *store_batch_begin(struct store *);
/* Put a hook and its rows, and its dedupe entry (see Dedupe below);
 * assigns h->seq.  -1 on a store error (the batch must then be aborted). */
int		 store_batch_put_hook(struct store_batch *, struct store_hook *,
		    const struct store_row_spec *, int nrows);
/* Whether h (held in the pen when reason is not NULL) can be stored:
 * the checks of store_batch_put_hook and store_batch_put_quarantine that
 * depend on h alone (tenant and source lengths, the dedupe keys, the
 * reason's length).  0, or -1 with why.  The writer asks before a hook
 * joins a batch, so that one that cannot be stored fails alone. */
int		 store_hook_fits(const struct store_hook *, const char *reason,
		    char *why, size_t whylen);
/* Commit and flush: 0 only when durable; -1 after aborting. */
int		 store_batch_commit(struct store_batch *);
/* Commit without the flush (DB_TXN_WRITE_NOSYNC only): for settles and
 * sweeps, which a crash may lose (the row is tried again), or followed by
 * store_log_flush before anything is answered.  0, or -1 (aborted).  A
 * later store_batch_commit or store_log_flush flushes this one too. */
int		 store_batch_commit_lazy(struct store_batch *);
/* The flush alone: every batch committed so far becomes durable.  0, or -1
 * and the store is lost (store_lost) until a restart runs recovery.  A
 * store_batch_commit_lazy then store_log_flush is a store_batch_commit
 * with other work between the two. */
int		 store_log_flush(struct store *);
/* The seq the next hook put will get: rows of hooks put from now on have
 * this seq or a larger one. */
uint64_t	 store_next_seq(const struct store *);
/* A bound above every seq stored: store_next_seq, and on a client of a
 * replication group the master's as last applied (read from meta).  0, or
 * -1 on a store error. */
int		 store_seq_bound(struct store *, uint64_t *seq);
void		 store_batch_abort(struct store_batch *);

/* Hooks in seq order after after_seq, optionally of one source, at most
 * limit (0: all); cb returning non-zero stops.  0 or -1 on a store error. */
int		 store_hooks_list(struct store *, const char *source,
		    uint64_t after_seq, uint64_t limit,
		    int (*cb)(const struct store_hook_info *, void *), void *);
int		 store_counts(struct store *, struct store_counts *);
/* The rows of a sink key kept in memory (store_keycount.c), *live those
 * not dead: 1, 0 when the key has none, -1 when they are not kept (a
 * replication client, or before store_keycount_seed ended). */
int		 store_keycount(struct store *, const char *source,
		    uint32_t sink, uint8_t module, uint64_t *live,
		    uint64_t *dead);
/* One step of the walk that counts them after the open: up to max rows.
 * 1 the walk has ended (the counts are kept from then on), 0 more steps
 * to go, -1 on a store error (the next step goes on).  No batch may be
 * open. */
int		 store_keycount_seed(struct store *, unsigned max);

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
 * copied to reason unless NULL), 0 not found, -1 on a store error. */
int		 store_quarantine_get(struct store *, uint64_t seq,
		    struct store_hook_rec *out, char *reason, size_t reasonlen);
/* The pen's body bytes and hooks, from memory: as committed, plus the open
 * batch's puts and deletes while one is open (so a writer checking
 * quarantine.max_bytes before each put counts its own batch). */
int		 store_quarantine_usage(struct store *, uint64_t *bytes,
		    uint64_t *hooks);

/* A synced write of one meta record: 0 when the store takes a synced
 * write now, -1 (store_strerror says why) when it does not.  Opens and
 * commits a batch of its own (none may be open). */
int		 store_ready_probe(struct store *, uint64_t now_ms);
/* The now_ms of the last probe committed (on a replication group's
 * client: applied from the master), 0 if none; -1 on a store error. */
int		 store_probe_ms(struct store *, uint64_t *ms);
/* The seq of the stored hook whose id is id (the id index, table
 * hookids): 1 found, 0 none (never stored, delivered and not kept,
 * deleted; a hook in the quarantine pen is not indexed; a delivered hook
 * kept by the archive is), -1 on a store error.  Inside an open
 * batch it sees the batch's writes. */
int		 store_hook_seq(struct store *, const unsigned char id[UUID_LEN],
		    uint64_t *seq);

/* The last error the store met, for logs. */
const char	*store_strerror(struct store *);
/* Which function sums libdb's log records and pages, proved at the open
 * (daemon/store/store_logsum.h): "log checksums by logsum" or "log checksums by
 * libdb's own: <why>". */
const char	*store_checksums(const struct store *);
/* 1 once a sync of the log or of a table failed (a log flush, a
 * checkpoint, a close, any sync Berkeley DB makes) or BDB panicked: every
 * batch and checkpoint is refused from then on (what a later one wrote
 * could sit behind pages the kernel dropped), and only a restart, whose
 * recovery replays from the last good checkpoint, makes the store usable
 * again. */
int		 store_lost(struct store *);

/*
 * Rows and reading a hook back.  The keys, the record codecs and their
 * layout are store_rec.h's and store_rec.c's.
 */

/* Only one batch may be open at a time (single-threaded master: a second
 * transaction on the same pages would wait on the first forever);
 * store_batch_begin returns NULL while one is open. */

#define STORE_NAME_MAX		64	/* tenant and source ids, bytes */
#define STORE_ERROR_MAX		1024	/* last error, dead reason, bytes */
#define STORE_KEY_MAX		1024	/* any key fits */
#define STORE_ROWKEY_LEN	12	/* seq u64 + sink index u32 */
#define STORE_DEADKEY_LEN	20	/* dead time u64 + row key */
#define STORE_CTYPE_MAX		255	/* a content type as listed, bytes */

/* A row's place in the pipeline (stored: never renumber). */
enum store_row_state {
	STORE_ROW_DUE = 1,	/* has a due key: may be claimed */
	STORE_ROW_MEMBER = 2,	/* waits behind its lane's head (members) */
	STORE_ROW_HEAD = 3,	/* its lane's head, has a due key */
	STORE_ROW_PARKED = 4,	/* parked by an open breaker, due at its end */
	STORE_ROW_DEAD = 5,	/* dead-lettered (table dead): no due key, no
				 * lane; counts as live for its hook */
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

/* Where a stored hook's body is. */
enum store_body_in {
	STORE_BODY_RECORD = 0,	/* in the hook's record, or none */
	STORE_BODY_HEAP,	/* in bodies, at page/indx (its DB_HEAP_RID) */
	STORE_BODY_LOG,		/* in a log record a build before 2026-12-02
				 * wrote, at file/off: store_open moves it
				 * into bodies */
	STORE_BODY_LOST		/* such a record store_open could not read */
};

struct store_body_at {
	int		in;		/* enum store_body_in */
	uint32_t	page;
	uint16_t	indx;
	uint32_t	file;
	uint32_t	off;
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
	void			*body_mem;	/* the bodies record the body
						 * is in, owned, or NULL */
	const char		*reason;	/* quarantine: the failure;
						 * hooks: NULL */
	struct store_body_at	 at;		/* where the body is */
	int			 kept;		/* delivered and kept (the
						 * archive): rows 0 */
	uint8_t			 aflags;	/* the archive's flags, as
						 * stored (kept with the
						 * record when rewritten) */
};

/* 1 found, 0 no such hook, -1 on a store error (a damaged record too). */
int		 store_hook_get(struct store *, uint64_t seq,
		    struct store_hook_rec *);
void		 store_hook_rec_free(struct store_hook_rec *);

/* Start the kernel's write-back of the tables' pages written out since
 * the last call (asynchronous: nothing waits for it). */
void		 store_writeback(struct store *);

/* The seq of a row key. */
uint64_t	 store_rowkey_seq(const unsigned char key[STORE_ROWKEY_LEN]);

/*
 * Dispatch: reading due rows, settling them, lanes, dead letters.
 *
 * A row is pending in states DUE, HEAD and PARKED (one due key each, at the
 * row's due time) and MEMBER (a members entry, no due key); DEAD rows stay
 * in rows with their hook (pending = rows - dead).  Every settle below runs
 * inside an open batch and keeps the counters (hooks, rows, dead,
 * lane_members) in the same transaction.  Settles return 1 done, 0 nothing
 * to do (no such row, or not in a state the call applies to; logged, the
 * batch stays good), -1 on a store error (the batch must then be aborted).
 *
 * Readers with a callback never hold a cursor while it runs: cb may do
 * anything, open a batch too.  Pointers handed to cb live until it returns.
 * Outside a batch they read what is committed; inside one, the batch's own
 * writes too.
 */

/* A dead letter as listed (no body). */
struct store_dead_info {
	unsigned char	rowkey[STORE_ROWKEY_LEN];
	uint64_t	seq;
	uint32_t	sink_index;
	char		hook_id[UUID_STRLEN + 1];	/* "": hook gone */
	char		tenant[STORE_NAME_MAX + 1];	/* "": row gone */
	char		source[STORE_NAME_MAX + 1];
	uint8_t		module;				/* 0: row gone */
	char		reason[STORE_ERROR_MAX + 1];
	uint32_t	attempts;
	uint64_t	dead_at;			/* wall ms */
	char		last_error[STORE_ERROR_MAX + 1];
	unsigned char	deadkey[STORE_DEADKEY_LEN];	/* its key */
	uint64_t	received_at;			/* 0: hook gone */
	uint64_t	size;				/* the body's bytes */
	char		content_type[STORE_CTYPE_MAX + 1];
};

/* Every tenant with at least one due key, in tenant (byte) order, with its
 * earliest due time (in the future too).  One seek per tenant, never a
 * walk of the rows: O(tenants).  cb returning non-zero stops.  0 or -1. */
int		 store_due_tenants(struct store *,
		    int (*cb)(const char *tenant, uint64_t earliest_due,
		    void *), void *);
/* The tenant's first due time after after_ms: 1 and *due, 0 none, -1 on a
 * store error.  One seek. */
int		 store_due_next(struct store *, const char *tenant,
		    uint64_t after_ms, uint64_t *due);
/* Every tenant with at least one marked lane, in tenant order: one seek per
 * tenant.  cb returning non-zero stops.  0 or -1. */
int		 store_marked_tenants(struct store *,
		    int (*cb)(const char *tenant, void *), void *);
/* The tenant's due keys with due <= now_ms in key order (due time, then
 * row key), each with its due time and row, starting just after the due
 * key (tenant, after_due, after_rk) when after_rk is not NULL; want, when
 * not NULL, is asked first with each row key and may pass over it (0)
 * without its row being read.  A due key that names no pending row (row
 * gone, damaged, DEAD or MEMBER, or due elsewhere) is handed over with row
 * NULL and logged: it never stalls the scan; drop it with
 * store_batch_due_drop.  cb returning non-zero stops.  0 or -1 on a store
 * error. */
int		 store_due_scan_from(struct store *, const char *tenant,
		    uint64_t now_ms, uint64_t after_due,
		    const unsigned char *after_rk,
		    int (*want)(const unsigned char *, void *),
		    int (*cb)(const unsigned char *duekey, size_t duekeylen,
		    uint64_t due, const unsigned char rowkey[STORE_ROWKEY_LEN],
		    const struct store_row *, void *), void *);
/* 1 with the smallest due time over every tenant (O(tenants)), 0 when
 * nothing is due, -1 on a store error. */
int		 store_oldest_due(struct store *, uint64_t *due);
/* Rows waiting behind lane heads, from memory (meta "lane_members"): as
 * committed, plus the open batch's changes while one is open. */
uint64_t	 store_lane_members(struct store *);

/* Delivered: the row and its due key go (a MEMBER leaves its lane), the
 * hook's live row count drops and the hook goes with its last row; a lane
 * head releases its lane (below).  A DEAD row is left alone (0).  known:
 * the row as it was read when claimed, which saves reading it again when
 * its due key is still there (else, or NULL, the row is read).  *last,
 * unless last is NULL: 1 when the row was its hook's last live row (every
 * sink of the hook is done, and the hook went with it), else 0. */
int		 store_batch_row_delivered(struct store_batch *,
		    const unsigned char rowkey[STORE_ROWKEY_LEN],
		    const struct store_row *known, int *last);
/* Retry or park: the row takes nr's due, attempts, first_attempt,
 * last_error and state (DUE, HEAD or PARKED; anything else fails the
 * batch), keeps its identity (tenant, source, sink, module, lane, replay
 * id, body size), and its due key moves from the old due time to nr->due.
 * A lane head stays its lane's head: DUE is written as HEAD for it, and a
 * PARKED head is still found by its lanes entry.  A MEMBER or DEAD row is
 * left alone (0). */
int		 store_batch_row_reschedule(struct store_batch *,
		    const unsigned char rowkey[STORE_ROWKEY_LEN],
		    const struct store_row *nr);
/* Dead-letter: the due key goes (a MEMBER leaves its lane instead), the
 * row is kept in state DEAD with attempts and last_error, a dead entry
 * (dead_at, rowkey) -> (reason, attempts, last_error) is written and the
 * dead counter goes up; a lane head releases its lane.  Strings longer
 * than STORE_ERROR_MAX are cut; NULL is "".  An already DEAD row: 0.
 * An orphan, a row whose hook is gone, is dropped instead (deleted with
 * its due key or members entry, its lane released the same): 2. */
int		 store_batch_row_dead(struct store_batch *,
		    const unsigned char rowkey[STORE_ROWKEY_LEN],
		    uint64_t dead_at, const char *reason,
		    const char *last_error, uint32_t attempts);
/* Remove a due key that names no pending row (healing, see
 * store_due_scan_from).  A key whose row is pending at that due time is kept
 * (0, logged), as is a key that is not there (0). */
int		 store_batch_due_drop(struct store_batch *,
		    const unsigned char *duekey, size_t len);

/*
 * Lanes (the spec's ordering lanes).  store_batch_put_hook writes an
 * ordered row as a MEMBER: a members entry (lane, seq) -> row key, the
 * lane's mark, lane_members + 1.  Releasing a lane (inside the settle that
 * ends its head: delivered or dead) deletes its lanes entry and promotes
 * its first member (lowest seq): the member entry goes (lane_members - 1),
 * the row becomes HEAD with a due key at its stored due (received_at), the
 * lanes entry names it, and the mark goes when no member is left.  A
 * member whose row is gone, damaged or not a MEMBER is dropped on the way,
 * never stalling the lane.
 *
 * The sweep visits the tenant's marked lanes, at most max of them (0: none)
 * per call, resuming after the last one visited by the previous call for
 * that tenant (in memory), so every marked lane is visited within a few
 * calls however many there are: a lane with no head gets its first member
 * promoted; a lane whose head row is gone, DEAD or damaged is released (the
 * same); a lane with no member left loses its mark.  now_ms is unused (a
 * promoted head is due at its received_at).  Returns the heads promoted,
 * or -1 on a store error (the batch must then be aborted).
 */
int		 store_batch_lane_sweep(struct store_batch *,
		    const char *tenant, uint64_t now_ms, unsigned max);

/* Dead letters oldest first (dead time, then row key), of one source
 * (NULL: all), at most limit (0: all); cb returning non-zero stops.  A
 * dead entry whose row is gone is listed with tenant, source "" and module
 * 0 (skipped when filtering by source).  0 or -1 on a store error. */
int		 store_dead_list(struct store *, const char *source,
		    uint64_t limit,
		    int (*cb)(const struct store_dead_info *, void *), void *);

/*
 * One step of the spec's dead_letter_source, in the open batch: the
 * source's pending rows (DUE, HEAD, MEMBER, PARKED) of hooks with seq >
 * after_seq in row key order, a page of limit rows that never splits a
 * hook (it ends after the last row of the hook it reached the limit in; the
 * rows of other sources it reads count against visits, so that a step
 * reads a bounded part of the table whatever it finds), each
 * dead-lettered at dead_at as reason, its attempts and last error kept, as
 * store_batch_row_dead does it: a row whose hook is gone is dropped, and
 * counted apart.  A row skip() names (claimed by a running attempt) is
 * left alone.
 */
struct store_dls {
	const char	*source;
	const char	*reason;
	uint64_t	 dead_at;
	uint64_t	 limit;		/* rows a step (0: all) */
	uint64_t	 visits;	/* rows read a step (0: no bound) */
	int		(*skip)(const unsigned char *, void *);	/* or NULL */
	void		*arg;
	uint64_t	 after_seq;	/* in: where the step starts; out: the
					 * next step's */
	uint64_t	 moved;		/* out: dead-lettered by the step */
	uint64_t	 moved_by[STORE_MODULES];	/* out: of them, by
					 * module (enum store_module) */
	uint64_t	 dropped;	/* out: dropped, their hook gone */
	int		 seen;		/* out: 1 once a row of the source was
					 * read, dead ones too */
};
/* 1 when rows may follow, 0 when the step reached the end of the table,
 * -1 on a store error (the batch must then be aborted). */
int		 store_batch_source_dead(struct store_batch *,
		    struct store_dls *);

/* A hook's claim reference (the claim check): 1 found, with it in ref
 * ("" when it has none; cut to reflen), 0 when the hook is gone, -1 on a
 * store error.  Reads the record's head only. */
int		 store_hook_claim(struct store *, uint64_t seq, char *ref,
		    size_t reflen);
/* Store the claim reference with the hook, which keeps its body: 1, 0 when
 * the hook is gone, -1 on a store error. */
int		 store_batch_hook_set_claim(struct store_batch *, uint64_t seq,
		    const char *ref);

/*
 * Replay jobs (store_replay.c): table replays, one record per job keyed by
 * its 16-byte id (a UUIDv7, so the table lists them in creation order),
 * and the step that moves a dlq job's dead rows back to due.  A step runs
 * in the open batch and writes the job's record (its cursor, its counts,
 * DONE at its end) in the same transaction as the rows it moves, so that
 * after a crash the job and its rows agree: no row is moved twice by the
 * cursor, none is skipped.
 */
enum store_replay_state {
	STORE_REPLAY_RUNNING = 1,
	STORE_REPLAY_PAUSED = 2,
	STORE_REPLAY_CANCELLED = 3,
	STORE_REPLAY_DONE = 4,
};

enum store_replay_kind {
	STORE_REPLAY_DLQ = 1,		/* dead rows back to due */
	STORE_REPLAY_QUARANTINE = 2,	/* the pen re-verified */
	STORE_REPLAY_ARCHIVE = 3,	/* kept delivered hooks sent again */
};

#define STORE_REPLAY_REASON_MAX	127	/* bytes */

/* A replay job (table replays). */
struct store_replay {
	uint8_t		state;		/* enum store_replay_state */
	uint8_t		kind;		/* enum store_replay_kind */
	char		source[STORE_NAME_MAX + 1];	/* "": every source */
	uint64_t	since;		/* dlq: dead time, quarantine: receive
					 * time, wall ms; 0: open */
	uint64_t	until;		/* the same, inclusive; 0: open */
	uint32_t	rate;		/* rows (held hooks) per second */
	uint32_t	max_lag_ms;
	uint64_t	created_at;	/* wall ms; a dlq job moves only rows
					 * dead at or before it */
	uint64_t	moved;		/* rows moved (hooks released) */
	uint64_t	dropped;	/* dlq: dead entries dropped, their row
					 * or hook gone; quarantine: held
					 * hooks that failed again */
	uint64_t	seq_below;	/* quarantine: pen seqs below this
					 * only (the next seq at creation) */
	unsigned char	cursor[STORE_DEADKEY_LEN];	/* dlq: the last dead
					 * key passed; quarantine: the last pen
					 * seq passed in its first 8 bytes; all
					 * zero: none yet */
	char		reason[STORE_REPLAY_REASON_MAX + 1];	/* why it
					 * paused itself, "" when it did not */
	char		event_type[STORE_EVTYPE_MAX + 1];	/* quarantine:
					 * held hooks of this event type only;
					 * "": any */
	uint32_t	sink;		/* archive: the sink index + 1 to
					 * send to, 0: every sink */
};

/* One step of a dlq job: in, its bounds; out, what it did. */
struct store_replay_step {
	uint64_t	now;		/* wall ms: the due time of moved rows */
	uint64_t	limit;		/* rows moved at most (>= 1) */
	uint64_t	visits;		/* dead entries read at most (>= 1) */
	uint64_t	moved;		/* out */
	uint64_t	dropped;	/* out */
};

/* Write job id's record.  0, or -1 on a store error (the batch must then
 * be aborted). */
int		 store_batch_replay_put(struct store_batch *,
		    const unsigned char id[UUID_LEN], const struct store_replay *);
/* 1 deleted, 0 no such job, -1 on a store error. */
int		 store_batch_replay_del(struct store_batch *,
		    const unsigned char id[UUID_LEN]);
/* 1 found, 0 no such job, -1 on a store error (a damaged record too). */
int		 store_replay_get(struct store *, const unsigned char id[UUID_LEN],
		    struct store_replay *);
/* Every job in id (creation) order; a damaged record is logged and
 * passed over.  cb returning non-zero stops.  0 or -1. */
int		 store_replay_list(struct store *,
		    int (*cb)(const unsigned char *id, const struct store_replay *,
		    void *), void *);
/*
 * One step of dlq job id (rp, as stored; updated and written back): the
 * dead entries after rp->cursor (from rp->since at first) with a dead
 * time up to rp->until and rp->created_at, in key order (dead time, then
 * row key), at most s->visits read and s->limit rows moved.  A row of the
 * job's source (any, with source "") goes back to due: state DUE due at
 * s->now (an ordered row rejoins its lane as a MEMBER, due at s->now when
 * promoted), attempts and first attempt 0, its last error kept, its
 * replay id the job's; its dead entry goes and the dead counter drops
 * (lane_members grows for a member).  A dead entry whose row is gone,
 * damaged or not DEAD, or whose hook is gone (the row is deleted then), is
 * dropped and counted apart.  Rows of other sources are passed over.
 * 1 when entries may follow, 0 when the job reached its end (rp->state is
 * then DONE), -1 on a store error (the batch must then be aborted).
 */
int		 store_batch_replay_step(struct store_batch *,
		    const unsigned char id[UUID_LEN], struct store_replay *rp,
		    struct store_replay_step *s);

/*
 * The operator's dead letters and hooks (store_dlq.c): walking the dead
 * table by dead time, one hook's rows, deleting a hook or a dead letter
 * with what it holds.  A DEAD row's due is its dead time (rows
 * dead-lettered by builds before 2026-12-02 kept the due they had), so its
 * dead entry is (row due, row key), found by one lookup.  A dead entry
 * that names no DEAD row at its time (its row gone, or an older build's
 * row) is an orphan: listed with tenant and source "", removed by
 * store_batch_dead_del, and counted in "dead" until then; deleting a hook
 * whose dead row's entry is not where its due says leaves such an orphan.
 */

/* What store_dead_walk reads besides each dead entry. */
#define STORE_DEAD_READ_ROW	0x01	/* tenant, source, module */
#define STORE_DEAD_READ_HOOK	0x02	/* hook id, received_at, size, type */

/* A walk of the dead table within a time range, in bounded calls. */
struct store_dead_walk {
	const char	*source;	/* NULL: every source (else reads the
					 * row) */
	uint64_t	 since_ms;	/* dead at or after */
	uint64_t	 until_ms;	/* dead at or before; UINT64_MAX: open */
	uint64_t	 visits;	/* dead entries read a call; 0: no
					 * bound */
	int		 reads;		/* STORE_DEAD_READ_* */
	unsigned char	 at[STORE_DEADKEY_LEN];	/* in/out: the last key
						 * read, when have_at */
	int		 have_at;	/* 0: start at since_ms */
	int		 end;		/* out: the range or the table ended */
};
/* The dead letters of w's range and source in key order (dead time, then
 * row key) after w->at (or from since_ms), at most w->visits read, each
 * that matches handed to cb (a field not read is zero or ""); w->at
 * follows the keys read, so the next call goes on after it.  cb returning
 * non-zero stops after its entry.  0, or -1 on a store error. */
int		 store_dead_walk(struct store *, struct store_dead_walk *,
		    int (*cb)(const struct store_dead_info *, void *), void *);
/* Delete the dead entry at key with its row when that is DEAD at that
 * time (an orphan entry goes alone), and the row's hook with its last
 * row, its body with it: then *bytes grows by the body's size.  "dead"
 * drops by one.  1 deleted, 0 no such entry, -1 on a store error (the
 * batch must then be aborted). */
int		 store_batch_dead_del(struct store_batch *,
		    const unsigned char key[STORE_DEADKEY_LEN], uint64_t *bytes);
/* The rows of hook seq in sink order, each with its dead letter when it
 * is DEAD (NULL when its entry is not found at the row's due: an older
 * build's); cb returning non-zero stops.  0, or -1 on a store error. */
int		 store_hook_rows(struct store *, uint64_t seq,
		    int (*cb)(const unsigned char rowkey[STORE_ROWKEY_LEN],
		    const struct store_row *, const struct store_dead_info *,
		    void *), void *);
/* A hook's head, without its body, from the hooks table or (pen 1) the
 * quarantine pen: 1 found (out as store_hook_get fills it, but for the
 * body; store_hook_rec_free), 0 not found, -1 on a store error. */
int		 store_hook_head(struct store *, uint64_t seq, int pen,
		    struct store_hook_rec *);
/* Delete hook seq with every row of it, whatever its state: due keys,
 * lane membership (a lane head releases its lane, as delivery does),
 * dead entries, the counters, its body; its dedupe entry stays.  Unless
 * claimed(rowkey, arg) names one of its rows: then 2 and nothing changes.
 * *bytes: its body's size.  1 deleted, 0 no such hook, -1 on a store
 * error (the batch must then be aborted). */
int		 store_batch_hook_del(struct store_batch *, uint64_t seq,
		    int (*claimed)(const unsigned char *, void *), void *arg,
		    uint64_t *bytes);
/* As store_batch_hook_del, but a row claimed(rowkey, arg) names stays, an
 * orphan: its attempt's settle finds no hook (a dead settle drops it, a
 * delivered one deletes it and keeps nothing), so nothing of the hook is
 * delivered after its attempt.  1 deleted, 0 no such hook, -1. */
int		 store_batch_hook_erase(struct store_batch *, uint64_t seq,
		    int (*claimed)(const unsigned char *, void *), void *arg,
		    uint64_t *bytes);

/* A step of a tenant's erase over its dedupe entries (in, the range; in
 * and out, where the next step goes on). */
struct store_dedupe_erase {
	const char	*tenant;
	uint64_t	 since, until;	/* the hooks' receive time, wall ms */
	uint64_t	 visits;	/* entries read a step */
	unsigned char	 at[STORE_KEY_MAX];	/* the last key read */
	size_t		 at_len;	/* 0: from the tenant's first */
	int		 end;		/* out: the tenant's entries ended */
	uint64_t	 deleted;	/* out: added to */
};
/* Delete the tenant's entries of hooks received in the range (the time
 * in their hook id).  0, or -1 on a store error (the batch must then be
 * aborted). */
int		 store_batch_dedupe_erase(struct store_batch *,
		    struct store_dedupe_erase *);

/*
 * The archive (store_archive.c): delivered hooks kept while
 * retention.delivered_s is set.  A kept hook has no live row, is counted in
 * ahooks and abytes (not in hooks), keeps its body and its id's index
 * entry, and is never dispatched: only an archive replay gives it rows
 * again.  Each delivered row leaves a record of its delivery (module,
 * time, replay id) in delivered, which goes with its hook.
 */
struct store_delivered {
	uint32_t	sink;
	uint8_t		module;		/* enum store_module */
	uint64_t	delivered_at;	/* wall ms */
	unsigned char	replay_id[UUID_LEN];	/* all zero: not a replay */
};
/* From now on, delivered settles keep their hooks (on) or delete them
 * with their last row (off, the default).  Kept hooks stay either way
 * until pruned. */
void		 store_archive_keep(struct store *, int on);
/* The oldest kept hook's time: 1 and *at, 0 when none is kept, -1 on a
 * store error.  One seek. */
int		 store_archive_oldest(struct store *, uint64_t *at);
/* The delivered records of hook seq in sink order; cb returning non-zero
 * stops.  0, or -1 on a store error. */
int		 store_hook_delivered(struct store *, uint64_t seq,
		    int (*cb)(const struct store_delivered *, void *), void *);
/* Delete up to max kept hooks, oldest kept first, while the oldest was
 * kept before before_ms or the archive holds more than max_bytes bytes (0:
 * no cap), each with its body, records and index entries; *freed grows by
 * their bytes.  A seek and a walk from the start of the index, never a
 * full scan.  The hooks deleted (max: more may follow), or -1 on a store
 * error (the batch must then be aborted). */
int		 store_batch_archive_prune(struct store_batch *,
		    uint64_t before_ms, uint64_t max_bytes, unsigned max,
		    uint64_t *freed);
/* One step of archive job id (rp, as stored; written back), as
 * store_batch_replay_step is of a dlq job, over the archive by kept time:
 * s->moved counts the hooks given rows again, s->dropped entries whose
 * hook was gone.  1 when entries may follow, 0 at the job's end, -1 on a
 * store error (the batch must then be aborted). */
int		 store_batch_archive_replay_step(struct store_batch *,
		    const unsigned char id[UUID_LEN], struct store_replay *rp,
		    struct store_replay_step *s);

/*
 * Online backup (store_backup.c): a copy of the store, taken while it runs,
 * that a plain store_open of a copy of its directory recovers, holding
 * every hook committed before the backup began.  Berkeley DB's hot backup
 * (DB_ENV->backup through a handle of its own on the running environment,
 * then catastrophic recovery of the copy), with log removal held while a
 * backup exists.  The directory holds STORE_BACKUP_MARKER from its first
 * write until everything in it is synced; store_open refuses a directory
 * that holds it.
 */
#define STORE_BACKUP_MARKER	"ankusa-backup-incomplete"

struct store_backup;

enum store_backup_phase {
	STORE_BACKUP_START = 0,
	STORE_BACKUP_TABLES,		/* copying the tables */
	STORE_BACKUP_LOGS,		/* copying the log files */
	STORE_BACKUP_RECOVERY,		/* recovering the copy */
	STORE_BACKUP_SYNC,		/* syncing it */
	STORE_BACKUP_DONE,		/* complete, or failed */
};

struct store_backup_progress {
	enum store_backup_phase	 phase;
	uint64_t		 bytes;		/* copied so far; at the end,
						 * the copy's size */
	uint64_t		 files;		/* files copied */
};

/* In the store's thread: a backup of st into dir (an absolute path that
 * must not exist or be an empty directory: store_backup_run checks it),
 * holding the removal of log files until store_backup_free.  notify(arg)
 * is called from the run's thread at each step of progress and at its
 * end (it may be NULL).  NULL with err filled while another backup of st
 * exists, or when dir is not absolute.  Every backup is freed before
 * store_close. */
struct store_backup *store_backup_new(struct store *, const char *dir,
		    void (*notify)(void *), void *arg, char *err,
		    size_t errlen);
/* The copy, in any one thread: 0 when it is complete, -1 when it failed
 * or was cancelled (store_backup_error says why), having removed what it
 * wrote.  Makes no call on the store's handles, so the store's thread
 * carries on while it runs. */
int		 store_backup_run(struct store_backup *);
/* Before the run: a pause of ms after each write of the copy (tests: a
 * backup that lasts). */
void		 store_backup_set_pace(struct store_backup *, unsigned ms);
/* From any thread: the run stops at its next write, and fails. */
void		 store_backup_cancel(struct store_backup *);
/* From any thread: where the run is. */
void		 store_backup_progress(struct store_backup *,
		    struct store_backup_progress *);
const char	*store_backup_error(struct store_backup *);
const char	*store_backup_dir(const struct store_backup *);
/* In the store's thread, once the run has returned (or was never
 * started): log removal goes on. */
void		 store_backup_free(struct store_backup *);

/*
 * Manual operations (store_settings.c).
 *
 * Settings: small records the operator sets at runtime and the store
 * keeps across restarts (paused sink keys, rate-limit overrides), meta
 * records "set:<name>", each a version byte and the caller's bytes.
 */
#define STORE_SETTING_NAME_MAX	160
#define STORE_SETTING_VAL_MAX	64
/* Write (or overwrite) setting name.  0, or -1 on a store error (the
 * batch must then be aborted). */
int		 store_batch_setting_put(struct store_batch *,
		    const char *name, const void *val, size_t len);
/* 1 removed, 0 there was none, -1 on a store error. */
int		 store_batch_setting_del(struct store_batch *,
		    const char *name);
/* The settings whose name starts with prefix, in name order; cb returning
 * non-zero stops.  0 or -1 on a store error. */
int		 store_settings_list(struct store *, const char *prefix,
		    int (*cb)(const char *name, const void *val, size_t len,
		    void *), void *);

/*
 * The due time of a paused key's rows: dispatch sets them aside there
 * (state PARKED, a head stays HEAD, attempts unchanged) when it claims
 * them, so that no due scan reads them again until the resume brings them
 * back; never a backoff's time (2^64 - 2 ms).
 */
#define STORE_DUE_PAUSED	(UINT64_MAX - 1)

/*
 * One step of a move of pending rows to due at once (retry now, a
 * resume): the due keys of tenant (NULL: every tenant) with a due time in
 * [from, to], in key order from after the cursor at, whose row is of
 * source (NULL: any), of sink unless any_sink, of hook seq unless 0, and
 * not PARKED if keep_parked, and that skip() (claimed rows) does not name:
 * each rescheduled to due (a PARKED row becomes DUE, a head stays HEAD),
 * attempts unchanged.  At most visits keys read (0: no bound) and limit
 * rows moved (0: no bound) a step.  A row moved goes before the cursor,
 * so no step moves it twice.
 */
struct store_due_move {
	const char	*tenant;
	const char	*source;
	uint32_t	 sink;
	int		 any_sink;
	uint64_t	 seq;
	uint64_t	 from, to;
	int		 keep_parked;
	uint64_t	 due;
	uint64_t	 visits, limit;
	int		(*skip)(const unsigned char *, void *);	/* or NULL */
	void		*arg;
	unsigned char	 at[STORE_NAME_MAX + 1 + 8 + STORE_ROWKEY_LEN];
	size_t		 at_len;	/* 0: from the start */
	uint64_t	 moved;		/* out: added to by each step */
};
/* 1 when keys may follow, 0 at the end of the range, -1 on a store error
 * (the batch must then be aborted). */
int		 store_batch_due_move(struct store_batch *,
		    struct store_due_move *);
/* As store_batch_due_move for the rows of one hook, m->seq (never 0),
 * read by their row keys instead of the due table: all in one step.  0,
 * or -1 on a store error. */
int		 store_batch_hook_move(struct store_batch *,
		    struct store_due_move *);

/*
 * The audit trail (store_audit.c): table audit, one record per change an
 * operator asked for through the admin API or the control socket, keyed
 * so that a walk in key order reads the newest first (the time and a
 * number within its ms, both stored inverted).  Written by the master in
 * a batch of its own or the change's; replicated like every table, so a
 * client of a group lists it.  Strings longer than their bound are cut,
 * between UTF-8 characters.
 */
#define STORE_AUDIT_ACTOR_MAX	64
#define STORE_AUDIT_ACTION_MAX	32
#define STORE_AUDIT_TARGET_MAX	255
#define STORE_AUDIT_OUTCOME_MAX	255
#define STORE_AUDIT_KEY_LEN	12	/* ~at u64, ~n u32 */

struct store_audit {
	uint64_t	at;		/* wall ms */
	char		actor[STORE_AUDIT_ACTOR_MAX + 1];	/* a token's
					 * name, "uid:N", "admin" */
	char		action[STORE_AUDIT_ACTION_MAX + 1];
	char		target[STORE_AUDIT_TARGET_MAX + 1];	/* "" none */
	char		tenant[STORE_NAME_MAX + 1];	/* "" none or many */
	char		outcome[STORE_AUDIT_OUTCOME_MAX + 1];	/* "ok" or the
					 * error */
};

/* Put e, numbered after the entries of its ms already stored (the batch's
 * own too).  0, or -1 on a store error (the batch must then be
 * aborted). */
int		 store_batch_audit_put(struct store_batch *,
		    const struct store_audit *);

/* A walk of the trail, newest first, in bounded calls. */
struct store_audit_walk {
	const char	*actor;		/* NULL: any; else exactly */
	const char	*action;
	const char	*tenant;
	uint64_t	 since;		/* at or after (wall ms) */
	uint64_t	 until;		/* at or before; UINT64_MAX: open */
	uint64_t	 limit;		/* entries handed at most a call */
	uint64_t	 visits;	/* entries read at most a call (>=
					 * limit; 0: no bound) */
	unsigned char	 at[STORE_AUDIT_KEY_LEN];	/* in/out: the last
					 * key read, when have_at */
	int		 have_at;	/* 0: start at until */
	int		 end;		/* out: the range or the trail ended */
};
/* The entries of w's range that match its filters, newest first, after
 * w->at (or from w->until), each handed to cb, at most w->limit of them
 * and w->visits read; w->at follows the keys read, so the next call goes
 * on after the last one.  cb returning non-zero stops after its entry.
 * A damaged record is logged and passed over.  0, or -1 on a store
 * error. */
int		 store_audit_walk(struct store *, struct store_audit_walk *,
		    int (*cb)(const struct store_audit *, void *), void *);
/* Delete up to max entries older than before_ms, oldest last: a seek and
 * a walk from there, never a full scan.  The entries deleted (max means
 * more may remain), or -1 on a store error (the batch must then be
 * aborted). */
int		 store_batch_audit_prune(struct store_batch *,
		    uint64_t before_ms, unsigned max);

/*
 * The attempt log (store_attempts.c): table attempts, one record per
 * attempt of a row, keyed by its hook's id, sink index, round and number,
 * so that a hook's attempts are one range read and outlive its hooks
 * record; table attempts_end, one entry per hook gone (its time and id),
 * which the prune walks from its oldest.  Written in the settle's
 * transaction; replicated and backed up like every table.
 */
#define STORE_ATTEMPT_KEY_LEN	32	/* id[16], sink u32, round u64, n
					 * u32 */
#define STORE_ATTEMPT_RESPONSE_MAX	65536	/* capture_bytes' top */

/* What became of an attempt (never renumber: stored). */
enum store_attempt_outcome {
	STORE_ATTEMPT_OK = 0,
	STORE_ATTEMPT_ERROR,		/* transient: retried or dead */
	STORE_ATTEMPT_PERMANENT,	/* dead-lettered at once */
	STORE_ATTEMPT_TIMEOUT,		/* dispatch.attempt_timeout_ms */
	STORE_ATTEMPT_EGRESS_DENIED,	/* the egress guard refused it */
	STORE_ATTEMPT_PARKED,		/* failed and opened the breaker */
	STORE_ATTEMPT_OUTCOMES
};

struct store_attempt {
	unsigned char	 id[UUID_LEN];	/* its hook's */
	uint32_t	 sink_index;
	/* The row's first attempt of this round (wall ms): a replay
	 * starts another, numbered from 1 again. */
	uint64_t	 round;
	uint32_t	 n;		/* 1-based within the round */
	uint8_t		 module;	/* enum store_module */
	uint8_t		 outcome;	/* enum store_attempt_outcome */
	uint32_t	 status;	/* the answer's HTTP status, 0 none */
	uint64_t	 started_at;	/* wall ms */
	uint64_t	 duration_ms;
	const char	*error;		/* "" none; UTF-8, at most
					 * STORE_ERROR_MAX bytes */
	const char	*response;	/* "" none; UTF-8, at most
					 * STORE_ATTEMPT_RESPONSE_MAX */
};

/* The outcome's name ("ok", "error", ...), "?" for none known. */
const char	*store_attempt_outcome_name(unsigned);
/* Put a: one put, and with max_per_row not 0 and a->n above it the
 * blind delete of the attempt max_per_row before it in its round, so
 * that a round keeps its newest max_per_row at a cost that does not
 * grow.  max_per_row 0 puts nothing (the log is off).  Strings are cut
 * to their bounds, between UTF-8 characters.  0, or -1 on a store error
 * (the batch must then be aborted). */
int		 store_batch_attempt_put(struct store_batch *,
		    const struct store_attempt *, uint32_t max_per_row);
/* The attempts of hook id in key order (sink, round, n), after the key
 * after (NULL: from the first), at most limit (0: all) handed to cb with
 * their keys; *more (if not NULL) says whether another follows.  A
 * damaged record is logged and passed over.  0, or -1 on a store
 * error. */
int		 store_attempts_list(struct store *,
		    const unsigned char id[UUID_LEN],
		    const unsigned char *after, uint64_t limit,
		    int (*cb)(const unsigned char *key,
		    const struct store_attempt *, void *), void *, int *more);
/* Delete every attempt of hook id now (a hook deleted or erased by an
 * operator takes its attempts with it).  The number deleted, or -1 (the
 * batch must then be aborted). */
int		 store_batch_attempts_drop(struct store_batch *,
		    const unsigned char id[UUID_LEN]);
/* Delete the attempts of hooks gone before before_ms, and their entries
 * in attempts_end, oldest first, at most max records: a seek and a walk,
 * never a full scan; a hook cut short keeps its entry for the next call.
 * The records deleted (max: more may remain), or -1 (the batch must then
 * be aborted). */
int		 store_batch_attempts_prune(struct store_batch *,
		    uint64_t before_ms, unsigned max);

#endif
