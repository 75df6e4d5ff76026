/* SPDX-License-Identifier: ISC */
/*
 * dispatchutil.h: what the scheduler's unit tests (check_dispatch*.c)
 * share over fakestore.c: the dispatch under test and its config, a config
 * built from dispatch keys and sources, and the loop-turn helpers.
 */
#ifndef ANKUSA_DISPATCHUTIL_H
#define ANKUSA_DISPATCHUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "dispatch.h"

#define TIMEOUT	20
#define T0	1000000ULL	/* the fake clock's start, wall ms */
#define DAY	86400000ULL

#define RETRY		"  retry: {jitter: false, base_ms: 100}\n"
#define SC3		"  sink_concurrency: 3\n"
#define SRC \
	"sources:\n" \
	"  s: {sinks: [{type: log}]}\n" \
	"  s2: {sinks: [{type: log}]}\n"
#define HTTP		"{type: http, url: \"http://sink.test:9/h\"}"
#define LOG		"{type: log}"

#define ADD_LOOP(tc, fn, tab) \
	tcase_add_loop_test(tc, fn, 0, sizeof(tab) / sizeof(tab[0]))

struct conf;
struct fsettle;

extern struct dispatch	*d;
extern struct conf	*cf;

struct conf	*parse(const char *, const char *);
void		 mk(const char *, const char *);
void		 done(void);
void		 next_ok(uint64_t);
uint64_t	 turn(uint64_t);
const struct fsettle *last_settle(uint64_t);
size_t		 finish_key(const char *, const char *, size_t,
		    enum attempt_result, const char *, uint64_t);
/* Runs suite s forked, dispatch's log at warnings; the exit status. */
int		 dispatchutil_run(Suite *);

#endif /* ANKUSA_DISPATCHUTIL_H */
