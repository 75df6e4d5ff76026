/* SPDX-License-Identifier: ISC */
/*
 * fakestore.h: an in-memory store and deliver pool behind struct
 * dispatch_ops, for the scheduler's unit tests (check_dispatch.c,
 * check_dispatch_sinks.c).
 *
 * One instance per test process (the tests fork): the global fake.  Rows
 * carry what the real store keeps (tenant, source, sink index, module,
 * state, due, attempts, lane hash, body size); due keys are the rows in
 * state DUE, HEAD or PARKED.  Settles are recorded as the scheduler hands
 * them in and applied by fake_flush() the way the store's batch does:
 * delivered deletes the row, reschedule rewrites it, dead marks it dead,
 * and a head's terminal settle promotes the next member of its lane in the
 * same batch; then dispatch_settled() for each.  A batch may fail
 * (fail_flush: nothing is written), and a row may be an orphan (its hook
 * gone: a dead settle drops it, as the store does).
 */
#ifndef ANKUSA_FAKESTORE_H
#define ANKUSA_FAKESTORE_H

#include <stddef.h>
#include <stdint.h>

#include "dispatch.h"

/* The trace id byte the fake's start gives a row of seq (all 16 bytes). */
#define FAKE_TRACE(seq)	((unsigned char)(0x5a ^ (seq)))

struct frow {
	int			 live;		/* 0: delivered (deleted) */
	int			 dead;
	int			 marked;	/* member: its lane is marked */
	int			 orphan;	/* its hook is gone: a dead
						 * settle deletes it */
	uint64_t		 seq;
	unsigned char		 key[STORE_ROWKEY_LEN];
	struct store_row	 row;
	char			 reason[STORE_ERROR_MAX + 1];
	uint32_t		 dead_attempts;
	uint64_t		 dead_at;
};

struct fjob {
	uint64_t		 job;
	unsigned char		 key[STORE_ROWKEY_LEN];
	uint64_t		 seq;
	struct store_row	 row;		/* as handed to start */
	uint32_t		 bound;
	int			 probe;
	int			 running;
};

/* A row on deck behind a running job (ops.deck). */
enum fdeck_state {
	FDECK_OFFERED = 1,
	FDECK_STARTED,		/* its process took it */
	FDECK_CANCELLED,	/* taken back */
};

struct fdeck {
	uint64_t		 job;
	uint64_t		 ahead;		/* the job it waits behind */
	unsigned char		 key[STORE_ROWKEY_LEN];
	uint64_t		 seq;
	struct store_row	 row;
	uint32_t		 bound;
	enum fdeck_state	 state;
};

struct fsettle {
	enum settle_kind	 kind;
	unsigned char		 key[STORE_ROWKEY_LEN];
	uint64_t		 seq;
	struct store_row	 row;		/* RESCHEDULE */
	char			 reason[STORE_ERROR_MAX + 1];
	char			 last_error[STORE_ERROR_MAX + 1];
	uint32_t		 attempts;
	uint64_t		 dead_at;
	int			 retry;		/* RESCHEDULE after an attempt */
	int			 expired;	/* DEAD */
	uint64_t		 job;		/* its drow's job, 0 none */
	unsigned char		 trace_id[TRACE_ID_LEN];	/* the row's */
};

struct fcount {
	char			 tenant[STORE_NAME_MAX + 1];
	unsigned		 n;
};

struct fakestore {
	struct frow		**rows;
	size_t			 nrows;
	struct fjob		**jobs;		/* every start, in order */
	size_t			 njobs;
	struct fsettle		**settles;	/* every settle, in order */
	size_t			 nsettles;
	size_t			 flushed;	/* settles applied so far */
	uint64_t		 next_seq;
	int			 idle;		/* idle deliver processes */
	double			 rnd;		/* what random returns */
	unsigned		 nsweeps;	/* lane_sweep calls */
	unsigned		 nmarked;	/* marked_tenants calls */
	struct fcount		 scans[128];	/* due_scan calls per tenant */
	size_t			 nscans;
	struct fcount		 sweeps[128];	/* lane_sweep calls per tenant */
	size_t			 nsweepst;
	int			 decks_on;	/* ops.deck takes rows */
	int			 deck_take;	/* a process takes its deck when
						 * its job ends (else the
						 * master finds it unread) */
	struct fdeck		**decks;	/* every deck, in order */
	size_t			 ndecks;
	int			 fail_flush;	/* the next fake_flush writes
						 * nothing (the store refused
						 * the batch) */
};

extern struct fakestore fake;

void		 fake_init(void);
void		 fake_free(void);
void		 fake_ops(struct dispatch_ops *);
/* A row with a due key (state DUE). */
struct frow	*fake_add(const char *tenant, const char *source,
		    uint32_t sink, uint8_t module, uint64_t due,
		    uint64_t body_size);
/* A lane member (state MEMBER, no due key) and its lane's mark. */
struct frow	*fake_add_member(const char *tenant, const char *source,
		    uint32_t sink, uint8_t module, uint64_t lane_hash,
		    uint64_t due);
struct frow	*fake_find(const unsigned char *key);
/* Apply the recorded settles (none with fail_flush, which it clears),
 * then report each with dispatch_settled.  Returns how many. */
size_t		 fake_flush(struct dispatch *);
/* The running job of the i-th start still running (0-based), or NULL. */
struct fjob	*fake_running_job(size_t i);
/* Running jobs of tenant and source (NULL: any). */
size_t		 fake_running(const char *tenant, const char *source);
/* Live rows of tenant (NULL: any) that the dispatch has claimed. */
size_t		 fake_claimed(struct dispatch *, const char *tenant);
/* Decks offered and not yet taken back or started (tenant NULL: any). */
size_t		 fake_decked(const char *tenant);
/* The deck behind running job j, or NULL. */
struct fdeck	*fake_deck_of(const struct fjob *);
/* End a running job: dispatch_outcome, the deliver process idle again;
 * with a deck behind it, the glue's order: the process takes the deck
 * (if deck_take) before its outcome goes, the master takes it back if it
 * was not taken, and dispatch_deck_done; a started deck is a new running
 * job in the same process. */
void		 fake_finish(struct dispatch *, struct fjob *,
		    enum attempt_result, uint64_t retry_after_ms,
		    const char *detail, uint64_t now);
/* Finish every running job with res; returns how many. */
size_t		 fake_finish_all(struct dispatch *, enum attempt_result,
		    const char *detail, uint64_t now);
unsigned	 fake_count(const struct fcount *, size_t, const char *tenant);

#endif
