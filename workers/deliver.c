/* SPDX-License-Identifier: ISC */
/*
 * deliver.c: ankusa-deliver, the process that runs delivery attempts.
 *
 * The master forks and execs a pool of these.  Each finds its channel to
 * the master on fd 3 and, if the master passed it, the config text on
 * fd 5 (read for log.level and the egress guard's policy only:
 * everything else an attempt needs travels in the job).  It has no
 * listener and never opens the store.
 *
 * One job at a time: MSG_DELIVER_JOB (common/job.h) is run synchronously
 * by its sink (workers/sink.h) and answered with MSG_DELIVER_OUTCOME under
 * the same id; likewise MSG_BATCH_JOB, several attempts of one batching
 * sink (sqs, google_pubsub, redis, nats, rabbitmq, kafka), answered with one
 * MSG_BATCH_OUTCOME that has a result per entry; likewise MSG_CLAIM_JOB,
 * bodies to check in as one claim pack (workers/claim_upload.c), answered
 * with MSG_CLAIM_OUTCOME.
 * A job, a batch or a check-in: one of them is in hand at most.
 * Blocking is fine: an attempt is bounded by the sink's timeout, and the
 * master SIGKILLs a process whose attempt outlives
 * dispatch.attempt_timeout_ms.  A job is not run inside the channel's
 * callback but from an event made active there, so a second job that was
 * already queued behind the first is seen while the first is in hand.
 *
 * On deck: beside the job in hand the master may send the next job of the
 * same sink key (MSG_DELIVER_NEXT).  When the attempt in hand ends, that
 * job is taken through the page on PROC_FD_DECK (common/deck.h) unless the
 * master took it back, and then the outcome goes: the master learns both
 * from the outcome and the word.  A taken-back job is dropped unsent.
 *
 * Fatal: a frame from the master that makes no sense (a job that does not
 * decode, a second job while one is in hand, a second job on deck while
 * one is still offered, a batch for a sink that does not batch, a job
 * after MSG_CHILD_RETIRE, an unknown type): it is our own protocol.
 * Lifecycle: exit at once when the master's channel closes, also in the
 * middle of an attempt (the http sink's transfer watch polls the channel,
 * about once a second when idle); on MSG_CHILD_RETIRE exit after the job
 * in hand, if any (and the job on deck, if it has started).
 *
 * A second job is caught when it reached us together with the first (in
 * one read); one that arrives while the attempt blocks is read after the
 * outcome went and looks like the next job.  Either way each job gets its
 * own outcome, in order: the master's own accounting is the guard.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "claim_upload.h"
#include "clock.h"
#include "conf.h"
#include "deck.h"
#include "egress.h"
#include "job.h"
#include "log.h"
#include "msg.h"
#include "proc.h"
#include "sandbox.h"
#include "sink.h"

/* A sink implementation by type. */
struct deliver_sink {
	enum sink_type	 type;
	int		(*run)(const struct job *, struct job_outcome *);
	int		(*batch)(const struct batch *, struct batch_outcome *);
					/* NULL: the sink does not batch */
};

static struct event_base	*base;
static struct chan		*master;
static struct event		*ev_run;	/* runs the job in hand */
static struct job		 job;		/* the job in hand */
static struct job		 next;		/* the job on deck */
static int			 has_next;
static struct deck		*dshm;		/* the on-deck page */
static struct batch		 batch;		/* or the batch in hand */
static int			 busy;		/* job or batch holds one */
static int			 in_batch;	/* it is the batch */
static struct claim_job		 claim;		/* or the check-in in hand */
static int			 in_claim;	/* it is the check-in */
static int			 retiring;
static uint32_t			 gen;
static char			*claims_root;	/* local claim store, or NULL */

static void	usage(void) __attribute__((noreturn));
static char	*deliver_config(int, int);
static void	deliver_msg(struct chan *, struct msg *, void *);
static void	deliver_err(struct chan *, int, void *);
static void	deliver_run_cb(evutil_socket_t, short, void *);
static void	deliver_next(void);
static int	deliver_watch(void);
static void	deliver_run_batch(void);
static void	deliver_checkin(struct batch *);
static int	deliver_needs_claim(const struct batch *,
		    const struct batch_entry *);
static void	deliver_run_claim(void);
static const struct deliver_sink *deliver_sink(enum sink_type);

static const struct deliver_sink deliver_sinks[] = {
	{ SINK_HTTP, sink_http_run, NULL },
	{ SINK_SQS, sink_sqs_run, sink_sqs_batch },
	{ SINK_PUBSUB, sink_pubsub_run, sink_pubsub_batch },
	{ SINK_NATS, sink_nats_run, sink_nats_batch },
	{ SINK_RABBITMQ, sink_rabbitmq_run, sink_rabbitmq_batch },
	{ SINK_LOG, sink_log_run, NULL },
	{ SINK_REDIS, sink_redis_run, sink_redis_batch },
	{ SINK_KAFKA, sink_kafka_run, sink_kafka_batch },
};

static void
usage(void)
{
	fprintf(stderr, "usage: ankusa-deliver -g gen -i index [-djv]\n");
	exit(EX_USAGE);
}

int
main(int argc, char *argv[])
{
	uint32_t idx = 0, sandbox;
	int vflag;

	if (proc_child_start(argc, argv, "ankusa-deliver", "deliver", &gen, &idx,
	    &vflag) == -1)
		usage();
	claims_root = deliver_config(PROC_FD_CONF, vflag);
	/* Without it the master sends nothing on deck. */
	if ((dshm = deck_map(PROC_FD_DECK)) == NULL)
		log_warn("on-deck page on fd %d", PROC_FD_DECK);

	/* A sink gone mid-write is an error value, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		fatalx("curl_global_init failed");
	sink_http_set_abort(deliver_watch);
	sink_xfer_set_abort(deliver_watch);
	sink_redis_set_abort(deliver_watch);
	sink_rabbitmq_set_abort(deliver_watch);
	sink_kafka_set_abort(deliver_watch);
	claim_upload_set_abort(deliver_watch);

	if ((base = event_base_new()) == NULL)
		fatalx("event_base_new");
	if ((ev_run = event_new(base, -1, 0, deliver_run_cb, NULL)) == NULL)
		fatalx("event_new");
	/* Everything is loaded: from here on the sandbox's rules hold. */
	sandbox = sandbox_enter(SANDBOX_DELIVER, claims_root);
	master = chan_new(base, PROC_FD_CHAN, deliver_msg, deliver_err, NULL);
	proc_child_hello(master, "deliver", gen, sandbox);

	log_debug("started");
	event_base_dispatch(base);

	/* Only a retire ends the loop, with no job in hand. */
	chan_flush_blocking(master);
	chan_free(master);
	event_free(ev_run);
	event_base_free(base);
	sink_http_cleanup();
	sink_xfer_cleanup();
	sink_redis_cleanup();
	sink_pubsub_forget_token();
	sink_nats_cleanup();
	sink_rabbitmq_cleanup();
	sink_kafka_cleanup();
	curl_global_cleanup();
	if (has_next)
		job_free(&next);
	deck_unmap(dshm);
	free(claims_root);
	log_debug("retired");
	return 0;
}

/* log.level from the config the master passed, if it passed one (and -v
 * did not set the level), the egress guard's policy (egress.h), the key
 * that signs claim references, the answer's bytes an outcome carries
 * (attempts.capture_bytes), and the local claim store's root
 * (malloc'd, or NULL), which the sandbox lets this process write.  Any
 * trouble leaves the level as it is, the guard at its defaults, which
 * allow no denied address, and no key (a check-in then fails). */
static char *
deliver_config(int fd, int vflag)
{
	char *root = NULL;
	struct conf_errors errs = { NULL, 0 };
	struct conf *conf;
	struct stat st;
	enum log_level lvl;
	char *text;
	size_t len;

	if (fstat(fd, &st) == -1)
		return NULL;
	if ((text = proc_read_all(fd, &len)) == NULL) {
		log_warn("config: cannot read fd %d", fd);
		close(fd);
		return NULL;
	}
	close(fd);
	if ((conf = conf_parse_role(text, len, CONF_ROLE_DELIVER, &errs)) ==
	    NULL) {
		log_warnx("config: refused (%s), keeping the default log "
		    "level and egress guard", errs.n > 0 ? errs.msgs[0] :
		    "no reason");
		conf_errors_free(&errs);
		free(text);
		return NULL;
	}
	if (conf->claim_check.enabled && conf->claim_check.root != NULL &&
	    strcmp(conf->claim_check.store_type, "local") == 0 &&
	    (root = strdup(conf->claim_check.root)) == NULL)
		fatal("config");
	if (!vflag && conf->log_level != NULL &&
	    log_level_parse(conf->log_level, &lvl) == 0)
		log_setlevel(lvl);
	egress_configure(conf);
	sink_http_set_capture(conf->attempts.capture_bytes);
	if (conf->claim_check.enabled)
		claim_upload_set_key(conf->claim_check.signing_key,
		    conf->claim_check.ref_ttl_s);
	conf_free(conf);
	free(text);
	return root;
}

/* The master. */

static void
deliver_msg(struct chan *c, struct msg *m, void *arg)
{
	switch (m->type) {
	case MSG_DELIVER_JOB:
		if (busy)
			fatalx("job %" PRIu64 " from the master while job %"
			    PRIu64 " is in hand", m->id, job.id);
		if (retiring)
			fatalx("job %" PRIu64 " from the master after a retire",
			    m->id);
		if (job_decode(m, &job) == -1)
			fatalx("bad %s %" PRIu64 " from the master",
			    msg_type_name(m->type), m->id);
		busy = 1;
		event_active(ev_run, EV_TIMEOUT, 0);
		break;
	case MSG_DELIVER_NEXT:
		if (dshm == NULL || retiring)
			fatalx("job %" PRIu64 " on deck from the master %s",
			    m->id, dshm == NULL ? "without an on-deck page" :
			    "after a retire");
		if (has_next) {
			if (deck_offered(dshm, next.id))
				fatalx("job %" PRIu64 " on deck from the "
				    "master while job %" PRIu64 " is", m->id,
				    next.id);
			job_free(&next);	/* taken back */
			has_next = 0;
		}
		if (job_decode(m, &next) == -1)
			fatalx("bad %s %" PRIu64 " from the master",
			    msg_type_name(m->type), m->id);
		has_next = 1;
		if (!busy)
			deliver_next();
		break;
	case MSG_BATCH_JOB:
		if (busy)
			fatalx("batch %" PRIu64 " from the master while %s %"
			    PRIu64 " is in hand", m->id, in_batch ? "batch" :
			    "job", in_batch ? batch.id : job.id);
		if (retiring)
			fatalx("batch %" PRIu64 " from the master after a "
			    "retire", m->id);
		if (batch_decode(m, &batch) == -1)
			fatalx("bad %s %" PRIu64 " from the master",
			    msg_type_name(m->type), m->id);
		if (deliver_sink(batch.sink.type)->batch == NULL)
			fatalx("batch %" PRIu64 " for a %s sink, which does "
			    "not batch", batch.id,
			    conf_sink_type_name(batch.sink.type));
		busy = 1;
		in_batch = 1;
		event_active(ev_run, EV_TIMEOUT, 0);
		break;
	case MSG_CLAIM_JOB:
		if (busy)
			fatalx("claim job %" PRIu64 " from the master while "
			    "another is in hand", m->id);
		if (retiring)
			fatalx("claim job %" PRIu64 " from the master after a "
			    "retire", m->id);
		if (claim_job_decode(m, &claim) == -1)
			fatalx("bad %s %" PRIu64 " from the master",
			    msg_type_name(m->type), m->id);
		busy = 1;
		in_claim = 1;
		event_active(ev_run, EV_TIMEOUT, 0);
		break;
	case MSG_CHILD_RETIRE:
		if (msg_end(m) == -1)
			fatalx("bad %s from the master",
			    msg_type_name(m->type));
		retiring = 1;
		if (!busy)
			event_base_loopexit(base, NULL);
		break;
	default:
		fatalx("unexpected %s from the master",
		    msg_type_name(m->type));
	}
}

/* The master is gone: no outcome could be told.  Exit at once. */
static void
deliver_err(struct chan *c, int err, void *arg)
{
	proc_child_orphaned(err);
}

/* Called by the http sink during a transfer: exit if the master closed
 * the channel (a hang-up, or its end shut).  Frames that arrive meanwhile
 * stay in the socket for the loop. */
static int
deliver_watch(void)
{
	struct pollfd pfd;

	pfd.fd = chan_fd(master);
	pfd.events = POLLIN | POLLRDHUP;
	pfd.revents = 0;
	if (poll(&pfd, 1, 0) == 1 &&
	    (pfd.revents & (POLLHUP | POLLRDHUP | POLLERR))) {
		log_info("master closed the channel during %s %" PRIu64
		    ", exiting", in_batch ? "batch" : "job",
		    in_batch ? batch.id : job.id);
		exit(0);
	}
	return 0;
}

static const struct deliver_sink *
deliver_sink(enum sink_type type)
{
	size_t i;

	for (i = 0; i < sizeof(deliver_sinks) / sizeof(deliver_sinks[0]); i++)
		if (deliver_sinks[i].type == type)
			return &deliver_sinks[i];
	fatalx("deliver: sink type %d", (int)type);
}

static int
deliver_needs_claim(const struct batch *b, const struct batch_entry *e)
{
	return e->bodylen > b->sink.inline_max_bytes &&
	    (e->claim_ref == NULL || e->claim_ref[0] == '\0');
}

/*
 * The spec's claim check fallback: when a pack failed, the first attempt
 * checks the body in on its own, inside its deadline.  Entries above the
 * sink's inline_max_bytes with no claim reference are checked in here,
 * one pack per tenant; an entry whose check-in fails keeps no reference
 * and its queue sink answers it as a transient failure.
 */
static void
deliver_checkin(struct batch *b)
{
	struct claim_outcome co;
	struct claim_body *bodies;
	uint32_t *which, i, k, n;
	const char *tenant;
	char *tried;

	if (b->claim == NULL)
		return;
	if ((bodies = calloc(b->nentries, sizeof(*bodies))) == NULL ||
	    (which = calloc(b->nentries, sizeof(*which))) == NULL ||
	    (tried = calloc(b->nentries, 1)) == NULL)
		fatal("deliver_checkin");
	for (i = 0; i < b->nentries; i++) {
		if (tried[i] || !deliver_needs_claim(b, &b->entries[i]))
			continue;
		/* One pack for this entry's tenant and the others of it. */
		tenant = b->entries[i].tenant;
		for (n = 0, k = i; k < b->nentries; k++) {
			struct batch_entry *f = &b->entries[k];

			if (tried[k] || strcmp(f->tenant, tenant) != 0 ||
			    !deliver_needs_claim(b, f))
				continue;
			tried[k] = 1;
			bodies[n].data = f->body;
			bodies[n].len = f->bodylen;
			which[n++] = k;
		}
		memset(&co, 0, sizeof(co));
		claim_upload_checkin(b->claim, tenant, bodies, n,
		    b->sink.timeout_ms, &co);
		if (co.result == JOB_OK && co.nurns == n) {
			for (k = 0; k < n; k++) {
				struct batch_entry *f = &b->entries[which[k]];

				free(f->claim_ref);
				if ((f->claim_ref = strdup(co.urns[k])) == NULL)
					fatal("deliver_checkin");
			}
			log_info("batch %" PRIu64 ": %u bodies of %s checked in "
			    "by the attempt", b->id, n, tenant);
		} else
			log_warnx("batch %" PRIu64 ": check-in of %u bodies of "
			    "%s failed: %s", b->id, n, tenant, co.detail);
		claim_outcome_free(&co);
	}
	free(bodies);
	free(which);
	free(tried);
}

/* Run the batch in hand and answer: one result per entry. */
static void
deliver_run_batch(void)
{
	struct batch_outcome o;
	char shown[JOB_DETAIL_MAX];
	struct msg m;
	uint64_t start;
	uint32_t i, nok = 0;

	batch_outcome_init(&o, &batch);
	start = time_mono_ms();
	deliver_checkin(&batch);
	/* Each reference as this delivery carries it: expiring ref_ttl_s
	 * from now, signed with the key in force. */
	for (i = 0; i < batch.nentries; i++) {
		claim_upload_renew(&batch.entries[i].claim_ref);
		trace_span_new(batch.entries[i].span);
	}
	deliver_sink(batch.sink.type)->batch(&batch, &o);
	o.duration_ms = time_mono_ms() - start;
	for (i = 0; i < o.n; i++) {
		if (o.r[i].result == JOB_OK)
			nok++;
		log_debug("batch %" PRIu64 " entry %" PRIu64 " hook %s %s/%s "
		    "attempt %" PRIu32 ": %s %s", batch.id, o.r[i].id,
		    batch.entries[i].hook_id, batch.entries[i].tenant,
		    batch.entries[i].source, batch.entries[i].attempt,
		    job_result_name(o.r[i].result), job_detail_loggable(
		    o.r[i].detail, shown, sizeof(shown)));
	}
	log_debug("batch %" PRIu64 " (%s): %" PRIu32 " of %" PRIu32 " ok "
	    "(%" PRIu64 " ms)", batch.id, conf_sink_type_name(batch.sink.type),
	    nok, o.n, o.duration_ms);

	batch_outcome_encode(&m, batch.id, &o);
	if (chan_send(master, &m) == -1)
		log_warnx("batch %" PRIu64 ": outcome not sent", batch.id);
	msg_free(&m);
	batch_outcome_free(&o);
	batch_free(&batch);
	busy = 0;
	in_batch = 0;
	if (retiring)
		event_base_loopexit(base, NULL);
}

/* Run the job in hand and answer. */
static void
deliver_run_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct job_outcome o;
	char shown[JOB_DETAIL_MAX];
	struct msg m;
	uint64_t start;

	if (!busy)
		fatalx("deliver: run without a job");
	if (in_batch) {
		deliver_run_batch();
		return;
	}
	if (in_claim) {
		deliver_run_claim();
		return;
	}
	memset(&o, 0, sizeof(o));
	/* Each attempt is a span of its own in the hook's trace. */
	trace_span_new(job.span);
	start = time_mono_ms();
	deliver_sink(job.sink.type)->run(&job, &o);
	o.duration_ms = time_mono_ms() - start;

	log_debug("job %" PRIu64 " hook %s %s/%s sink #%" PRIu32
	    " attempt %" PRIu32 ": %s %s (%" PRIu64 " ms%s)", job.id,
	    job.hook_id, job.tenant, job.source, job.sink_index, job.attempt,
	    job_result_name(o.result), job_detail_loggable(o.detail, shown,
	    sizeof(shown)), o.duration_ms,
	    o.retry_after_ms > 0 ? ", retry-after" : "");

	job_outcome_encode(&m, job.id, &o);
	job_free(&job);
	busy = 0;
	/* The job on deck is taken before the outcome goes: the master
	 * reads the word when the outcome arrives. */
	if (has_next)
		deliver_next();
	if (chan_send(master, &m) == -1)
		log_warnx("job %" PRIu64 ": outcome not sent", m.id);
	msg_free(&m);
	/* Now: not after the next attempt, when one is on deck; and with
	 * none, not from the zero timer of the next loop pass, which cost an
	 * epoll_wait of its own before the outcome went. */
	chan_flush_now(master);
	if (!busy && retiring)
		event_base_loopexit(base, NULL);
}

/* Start the job on deck, unless the master has taken it back. */
static void
deliver_next(void)
{
	has_next = 0;
	if (!deck_take(dshm, next.id, time_mono_ms())) {
		log_debug("job %" PRIu64 " on deck: taken back by the master",
		    next.id);
		job_free(&next);
		return;
	}
	job = next;	/* the job in hand owns its bytes now */
	memset(&next, 0, sizeof(next));
	busy = 1;
	event_active(ev_run, EV_TIMEOUT, 0);
}

/* Check the bodies in hand in as one pack and answer with their URNs. */
static void
deliver_run_claim(void)
{
	struct claim_outcome o;
	struct msg m;
	uint64_t start;

	start = time_mono_ms();
	claim_upload_run(&claim, &o);
	o.duration_ms = time_mono_ms() - start;
	if (o.result == JOB_OK)
		log_debug("claim job %" PRIu64 " tenant %s: %s (%" PRIu64
		    " ms)", claim.id, claim.tenant, o.detail, o.duration_ms);
	else
		log_warnx("claim job %" PRIu64 " tenant %s, %" PRIu32
		    " bodies: %s %s (%" PRIu64 " ms)", claim.id, claim.tenant,
		    claim.nbodies, job_result_name(o.result), o.detail,
		    o.duration_ms);

	claim_outcome_encode(&m, claim.id, &o);
	if (chan_send(master, &m) == -1)
		log_warnx("claim job %" PRIu64 ": outcome not sent", claim.id);
	msg_free(&m);
	claim_outcome_free(&o);
	claim_job_free(&claim);
	busy = 0;
	in_claim = 0;
	if (retiring)
		event_base_loopexit(base, NULL);
}
