/* SPDX-License-Identifier: ISC */
/*
 * jq_rate.c: what one jq filter evaluation costs an edge (workers/filter.c,
 * workers/jqeval.c): the round trip to the evaluator process and the
 * program.
 *
 *   jq_rate [count [program]]
 *
 * Loads a configuration of one source whose one sink filters with program
 * (default '.amount > 100'), evaluates it count times (default 100000) on
 * a Stripe-shaped body of about 100 bytes, and prints one line: the wall
 * time, the CPU time of this process (the edge's part) and the CPU time
 * of its evaluators (read from /proc before they exit) per evaluation, in
 * microseconds.  Exits 1 on any error, naming it.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "conf.h"
#include "filter.h"

static const char body[] = "{\"id\":\"evt_1\",\"type\":\"invoice.paid\","
    "\"amount\":500,\"data\":{\"object\":{\"id\":\"in_1\","
    "\"lines\":[1,2,3]}}}";

static double	cpu_self_us(void);
static double	cpu_children_us(pid_t);

static double
cpu_self_us(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) == -1) {
		perror("jq_rate: getrusage");
		exit(1);
	}
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	    ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

/* The user and system time of pid's children and theirs (the supervisor
 * and its evaluators), from /proc; those already gone are not counted. */
static double
cpu_children_us(pid_t pid)
{
	char path[64], list[1024], stat[1024], *p, *q;
	unsigned long ut, st;
	double us = 0;
	long kid;
	size_t n;
	FILE *f;
	int off;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
	    (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	n = fread(list, 1, sizeof(list) - 1, f);
	fclose(f);
	list[n] = '\0';
	for (p = list; sscanf(p, "%ld%n", &kid, &off) == 1; p += off) {
		us += cpu_children_us((pid_t)kid);
		snprintf(path, sizeof(path), "/proc/%ld/stat", kid);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		n = fread(stat, 1, sizeof(stat) - 1, f);
		fclose(f);
		stat[n] = '\0';
		/* utime and stime, fields 14 and 15: the 12th and 13th after
		 * the name's closing parenthesis. */
		if ((q = strrchr(stat, ')')) == NULL)
			continue;
		if (sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
		    "%*u %lu %lu", &ut, &st) == 2)
			us += (ut + st) * 1e6 / sysconf(_SC_CLK_TCK);
	}
	return us;
}

int
main(int argc, char *argv[])
{
	struct conf_errors errs = { NULL, 0 };
	struct filter_out fo;
	const struct source_conf *src;
	struct conf *cf;
	const char *prog = argc > 2 ? argv[2] : ".amount > 100";
	char yaml[1024];
	double self0, kids0, self1, kids1;
	uint64_t t0, t1;
	long count = argc > 1 ? atol(argv[1]) : 100000, i;
	int n;

	if (count <= 0 || strchr(prog, '\'') != NULL) {
		fprintf(stderr, "usage: jq_rate [count [program without ']]\n");
		return 1;
	}
	n = snprintf(yaml, sizeof(yaml), "node:\n  data_dir: /tmp/jq_rate\n"
	    "sources:\n  s:\n    verify: {type: none}\n    sinks:\n"
	    "      - {type: log, filter: {jq: '%s'}}\n", prog);
	if (n < 0 || n >= (int)sizeof(yaml) ||
	    (cf = conf_parse(yaml, (size_t)n, "jq_rate", &errs)) == NULL) {
		fprintf(stderr, "jq_rate: %s\n", errs.n > 0 ? errs.msgs[0] :
		    "the program is too long");
		return 1;
	}
	src = conf_source(cf, "s");
	if (filter_load(cf) == -1) {
		fprintf(stderr, "jq_rate: the filter cannot be loaded\n");
		return 1;
	}
	/* The first evaluation forks the evaluator. */
	filter_sinks(src, NULL, body, sizeof(body) - 1, &fo);
	self0 = cpu_self_us();
	kids0 = cpu_children_us(getpid());
	t0 = time_mono_ms();
	for (i = 0; i < count; i++)
		filter_sinks(src, NULL, body, sizeof(body) - 1, &fo);
	t1 = time_mono_ms();
	self1 = cpu_self_us();
	kids1 = cpu_children_us(getpid());
	printf("jq_rate %ld evaluations: %.1f us wall, %.1f us edge cpu, "
	    "%.1f us evaluator cpu each (result %d)\n", count,
	    (t1 - t0) * 1000.0 / count, (self1 - self0) / count,
	    (kids1 - kids0) / count, fo.result[0]);
	filter_unload();
	conf_free(cf);
	return 0;
}
