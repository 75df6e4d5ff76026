/* SPDX-License-Identifier: ISC */
/*
 * pipeline_int.h: what the dispatch glue's files share.  pipeline.c runs
 * the loop turn and answers control; pipeline_pool.c keeps the deliver
 * processes, their decks and deadlines; pipeline_store.c is the store adapter
 * (the dispatch_ops that read and write the store, the settles of a turn
 * and their delivery log lines);
 * pipeline_batch.c and pipeline_claim.c are the batching sinks' and the
 * claim check's glue.  Nothing else includes it.
 */
#ifndef ANKUSA_PIPELINE_INT_H
#define ANKUSA_PIPELINE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "dispatch/dispatch.h"
#include "job.h"
#include "store/store.h"

struct deck;
struct event;
struct msg;
struct batcher_req;

enum worker_state {
	WORKER_IDLE = 1,
	WORKER_BUSY,		/* a job runs */
	WORKER_RETIRING,	/* no new jobs; exits after the one in hand */
};

struct worker {
	uint32_t	 serial;
	enum worker_state state;
	int		 retiring;
	uint64_t	 job;		/* busy: its job */
	int		 reported;	/* busy: the outcome is in (timeout) */
	uint8_t		 module;	/* busy: its sink's module */
	uint64_t	 started_us;	/* busy: its attempt's start, mono */
	struct batcher_req *req;	/* busy with a batch: its request */
	int		 claim;		/* busy with a check-in job */
	uint64_t	 deck;		/* busy: the job on deck behind its
					 * job, or 0 */
	struct deck	*shm;		/* its on-deck page, or NULL */
	struct event	*ev_timeout;
};

/* pipeline.c: the loop turn. */
extern struct dispatch	*pipeline_disp;
extern struct health	*pipeline_hl;
/* Not 0: rows of this seq and up are committed, not yet synced, and no
 * scan claims them (pipeline_step). */
extern uint64_t		 pipeline_scan_below;
/* Run the turn once libevent has read everything readable. */
void	pipeline_arm(void);
/* An outcome the glue makes itself (timeouts, crashes, a hook gone),
 * given to the dispatch at the next turn. */
void	pipeline_later(uint64_t, enum attempt_result, const char *,
	    ...) __attribute__((format(printf, 3, 4)));
/* The same for an attempt that was made (a timeout, a crash), started at
 * started_us (mono): the master writes its record in the attempt log. */
void	pipeline_later_attempt(uint64_t, enum attempt_result,
	    uint64_t started_us, const char *, ...)
	    __attribute__((format(printf, 4, 5)));

/* pipeline_pool.c: the deliver processes, in
 * pool_workers[0..pool_nworkers) (which moves as it grows: hold no pointer
 * into it across a pipeline_worker_ready). */
extern struct worker	*pool_workers;
extern int		 pool_nworkers;
/* start, deck and deck_cancel of struct dispatch_ops. */
void	pool_ops(struct dispatch_ops *);
/* The first idle deliver process, or NULL. */
struct worker *pool_idle(void);
/* w's attempt deadline, ms from now. */
void	pool_timer(struct worker *, uint64_t);
/* A deliver process's result as the dispatch's, and its metric name. */
enum attempt_result pool_result(enum job_result, const char **);
/* An attempt of a sink of module ended with result (ok, error,
 * permanent, timeout; res its dispatch's) after us microseconds, detail
 * the sink's words: its module's counter and histogram and, with its row
 * r (NULL: settled meanwhile), its sink key's (the ring of pipeline_hl
 * and the ankusa_sink_* families). */
void	pool_attempt_ended(const struct drow *r, uint8_t module,
	    const char *result, enum attempt_result res, uint64_t us,
	    const char *detail);

/* pipeline_store.c: the store adapter. */
/* The due scans, lanes, settle and random of struct dispatch_ops. */
void	pipeline_store_ops(struct dispatch_ops *);
const struct sink_conf *pipeline_store_sink(struct drow *,
	    enum attempt_result *, char *, size_t);
int	pipeline_store_hook(struct drow *, struct store_hook_rec *,
	    enum attempt_result *, char *, size_t);
int	pipeline_store_job(struct drow *, struct msg *, enum attempt_result *,
	    char *, size_t);
/* An attempt's outcome as the glue hands it to the dispatch. */
struct poutcome {
	uint64_t		 job;
	enum attempt_result	 res;
	uint64_t		 retry_after_ms;
	const char		*detail;
	uint32_t		 code;		/* an HTTP status or the queue
						 * service's, 0 none */
	int			 attempt;	/* a sink was tried: recorded
						 * in the attempt log */
	uint64_t		 started_at;	/* wall ms */
	uint64_t		 duration_ms;
	const char		*response;	/* its cleaned excerpt, NULL
						 * none */
};

/* dispatch_outcome of an attempt's outcome.  The settle of its row, made
 * inside that call, carries the attempt's record into the turn's
 * transaction (an outcome that made no attempt, ATTEMPT_UNBOUND or
 * ATTEMPT_STORE, records none) and its code and detail for the delivery
 * log line. */
void	pipeline_store_outcome(const struct poutcome *);
/* pipeline_on_disable's fn, NULL none (pipeline.c keeps it). */
extern int	(*pipeline_disable_fn)(const char *, uint32_t, const char *);
/* The breaker of the attempt's key opened on its failure: the attempt's
 * outcome is parked. */
void	pipeline_store_attempt_opened(void);
/* Write the turn's settles in one transaction, then end their claims: 0,
 * or -1 when the store refused them. */
int	pipeline_store_flush(void);
/* Settles not yet written. */
size_t	pipeline_store_pending(void);
/* When the oldest of them came (monotonic us), 0 if none. */
uint64_t pipeline_store_since_us(void);

/* pipeline_batch.c: the batching sinks' glue. */
void	pipeline_batch_init(void);
/* batch_add and batch_cancel of struct dispatch_ops. */
void	pipeline_batch_ops(struct dispatch_ops *);
void	pipeline_batch_pump(void);
/* MSG_BATCH_OUTCOME from busy w; -1 if malformed. */
int	pipeline_batch_outcome(struct worker *, struct msg *);
/* w died during its request: every attempt of it failed. */
void	pipeline_batch_gone(struct worker *);

/* pipeline_claim.c: the claim check's glue. */
/* claim_gate of struct dispatch_ops. */
void	pipeline_claim_ops(struct dispatch_ops *);
void	pipeline_claim_pump(void);
/* MSG_CLAIM_OUTCOME from busy w; -1 if malformed. */
int	pipeline_claim_outcome(struct worker *, struct msg *);
/* claim_done's release callback. */
void	pipeline_claim_release(const unsigned char *, void *);

#endif
