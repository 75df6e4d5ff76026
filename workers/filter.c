/* SPDX-License-Identifier: ISC */
/*
 * filter.c: the sinks' filters; see filter.h.
 *
 * The evaluator thread is made at the first jq evaluation, after the edge
 * entered its sandbox (so the thread has its seccomp filter too:
 * common/sandbox.c lets an edge make threads, never processes).  One job
 * at a time, handed over under ev_mu: the loop sets it and waits on
 * ev_done with a deadline; the thread runs it and signals.  The thread
 * owns the jq_state and the input while it runs, so a job abandoned at
 * its deadline is never touched by the loop again.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jq.h>

#include "conf.h"
#include "filter.h"
#include "log.h"

/* The compiled programs of the loaded configuration, by source index
 * and sink index; NULL where a sink has no jq filter. */
static const struct conf	 *fl_conf;
static jq_state			***fl_progs;

/* The evaluator thread and its one job. */
static pthread_t		 ev_thread;
static int			 ev_started;
static pthread_mutex_t		 ev_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t		 ev_go = PTHREAD_COND_INITIALIZER;
static pthread_cond_t		 ev_done;	/* on CLOCK_MONOTONIC */
static jq_state			*ev_jq;		/* the job's program */
static jv			 ev_input;	/* the job's input, owned */
static int			 ev_pending;	/* a job is set */
static int			 ev_finished;	/* its result is in */
static enum filter_result	 ev_result;
static int			 ev_stuck;	/* a job ran past its budget */

static void	 jq_quiet_cb(void *, jv);
static jq_state	*jq_make(const char *);
static jv	 jq_input(const void *, size_t);
static enum filter_result jq_run(jq_state *, jv);
static void	*ev_main(void *);
static enum filter_result jq_eval(jq_state *, jv, uint64_t);

int
filter_types_match(char *const *types, int ntypes, const char *evtype)
{
	size_t n;
	int i;

	if (evtype == NULL || evtype[0] == '\0')
		return 0;
	for (i = 0; i < ntypes; i++) {
		n = strlen(types[i]);
		if (n > 0 && types[i][n - 1] == '*') {
			if (strncmp(types[i], evtype, n - 1) == 0)
				return 1;
		} else if (strcmp(types[i], evtype) == 0)
			return 1;
	}
	return 0;
}

/* libjq prints its errors to stderr unless told otherwise: ours are
 * values (jq_next's invalid), counted by the caller. */
static void
jq_quiet_cb(void *arg, jv msg)
{
	jv_free(msg);
}

static jq_state *
jq_make(const char *prog)
{
	jq_state *jq;

	if ((jq = jq_init()) == NULL)
		fatalx("filter: jq_init");
	jq_set_error_cb(jq, jq_quiet_cb, NULL);
	if (!jq_compile(jq, prog)) {
		jq_teardown(&jq);
		return NULL;
	}
	return jq;
}

int
filter_load(const struct conf *cf)
{
	const struct source_conf *src;
	int i, k;

	fl_conf = cf;
	if ((fl_progs = calloc(cf->nsources + 1, sizeof(*fl_progs))) == NULL)
		fatal("filter_load");
	for (i = 0; i < cf->nsources; i++) {
		src = &cf->sources[i];
		if ((fl_progs[i] = calloc(src->nsinks + 1,
		    sizeof(**fl_progs))) == NULL)
			fatal("filter_load");
		for (k = 0; k < src->nsinks; k++) {
			if (src->sinks[k].filter_jq == NULL)
				continue;
			if ((fl_progs[i][k] = jq_make(
			    src->sinks[k].filter_jq)) == NULL) {
				log_warnx("sources.%s.sinks[%d].filter.jq: "
				    "does not compile", src->id, k);
				return -1;
			}
		}
	}
	return 0;
}

int
filter_needs_body(const struct source_conf *src)
{
	int k;

	for (k = 0; k < src->nsinks; k++)
		if (src->sinks[k].filter_jq != NULL)
			return 1;
	return 0;
}

/* A program's input: the body by jq's parser; null when it is empty or
 * not JSON. */
static jv
jq_input(const void *body, size_t len)
{
	jv in;

	if (len == 0 || len > INT_MAX)
		return jv_null();
	in = jv_parse_sized(body, (int)len);
	if (!jv_is_valid(in)) {
		jv_free(in);
		return jv_null();
	}
	return in;
}

/* One evaluation, on whichever thread calls it: the first output
 * decides (filter.h).  Consumes in. */
static enum filter_result
jq_run(jq_state *jq, jv in)
{
	enum filter_result r;
	jv out;

	jq_start(jq, in, 0);
	out = jq_next(jq);
	switch (jv_get_kind(out)) {
	case JV_KIND_TRUE:
		r = FILTER_MATCH;
		break;
	case JV_KIND_FALSE:
	case JV_KIND_NULL:
		r = FILTER_NO;
		break;
	case JV_KIND_INVALID:
		/* No output at all, or an error (which has a message), or
		 * halt / halt_error: an error too. */
		r = jv_invalid_has_msg(jv_copy(out)) || jq_halted(jq) ?
		    FILTER_ERROR : FILTER_NO;
		break;
	default:
		r = FILTER_ERROR;
	}
	jv_free(out);
	return r;
}

static void *
ev_main(void *arg)
{
	enum filter_result r;
	jq_state *jq;
	jv in;

	for (;;) {
		pthread_mutex_lock(&ev_mu);
		while (!ev_pending)
			pthread_cond_wait(&ev_go, &ev_mu);
		jq = ev_jq;
		in = ev_input;
		pthread_mutex_unlock(&ev_mu);

		r = jq_run(jq, in);

		pthread_mutex_lock(&ev_mu);
		ev_pending = 0;
		ev_finished = 1;
		ev_result = r;
		pthread_cond_signal(&ev_done);
		pthread_mutex_unlock(&ev_mu);
	}
	return NULL;
}

/* Run the program on the evaluator thread and wait at most budget_ms;
 * consumes in. */
static enum filter_result
jq_eval(jq_state *jq, jv in, uint64_t budget_ms)
{
	pthread_condattr_t ca;
	struct timespec dl;
	enum filter_result r;
	int rc = 0;

	pthread_mutex_lock(&ev_mu);
	if (ev_stuck) {
		pthread_mutex_unlock(&ev_mu);
		jv_free(in);
		return FILTER_BUDGET;
	}
	if (!ev_started) {
		/* The deadline must not move with the wall clock. */
		if (pthread_condattr_init(&ca) != 0 ||
		    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
		    pthread_cond_init(&ev_done, &ca) != 0)
			fatalx("filter: the evaluator's condition");
		pthread_condattr_destroy(&ca);
		if ((rc = pthread_create(&ev_thread, NULL, ev_main,
		    NULL)) != 0) {
			errno = rc;
			fatal("filter: the evaluator thread");
		}
		ev_started = 1;
	}
	ev_jq = jq;
	ev_input = in;
	ev_finished = 0;
	ev_pending = 1;
	pthread_cond_signal(&ev_go);
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += budget_ms / 1000;
	dl.tv_nsec += (long)(budget_ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	while (!ev_finished && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&ev_done, &ev_mu, &dl);
	if (ev_finished)
		r = ev_result;
	else {
		ev_stuck = 1;
		r = FILTER_BUDGET;
	}
	pthread_mutex_unlock(&ev_mu);
	return r;
}

void
filter_sinks(const struct source_conf *src, const char *evtype,
    const void *body, size_t len, struct filter_out *out)
{
	const struct sink_conf *sk;
	enum filter_result r;
	jq_state **progs = NULL;
	int k;

	memset(out, 0, sizeof(*out));
	if (fl_conf != NULL && src >= fl_conf->sources &&
	    src < fl_conf->sources + fl_conf->nsources)
		progs = fl_progs[src - fl_conf->sources];
	for (k = 0; k < src->nsinks && k < 64; k++) {
		sk = &src->sinks[k];
		if (sk->filter_jq != NULL) {
			if (progs == NULL || progs[k] == NULL)
				fatalx("filter: sources.%s.sinks[%d]: not "
				    "loaded", src->id, k);
			/* A parse of its own for each evaluation: jv's
			 * reference counts are not atomic, and a thread
			 * left running past its budget keeps its input. */
			r = jq_eval(progs[k], jq_input(body, len),
			    fl_conf->http.jq_timeout_ms);
		} else if (sk->filter_types != NULL)
			r = filter_types_match(sk->filter_types,
			    sk->nfilter_types, evtype) ? FILTER_MATCH :
			    FILTER_NO;
		else
			r = FILTER_MATCH;
		if (r != FILTER_NO)
			out->match |= (uint64_t)1 << k;
		if (r == FILTER_ERROR)
			out->errors |= (uint64_t)1 << k;
		if (r == FILTER_BUDGET)
			out->budget |= (uint64_t)1 << k;
	}
}

int
filter_stuck(void)
{
	int s;

	pthread_mutex_lock(&ev_mu);
	s = ev_stuck;
	pthread_mutex_unlock(&ev_mu);
	return s;
}

enum filter_result
filter_jq_once(const char *prog, const void *body, size_t len,
    uint64_t budget_ms)
{
	jq_state *jq;

	if ((jq = jq_make(prog)) == NULL)
		return FILTER_ERROR;
	/* The program stays with a thread that may still run it. */
	return jq_eval(jq, jq_input(body, len), budget_ms);
}
