/* SPDX-License-Identifier: ISC */
/*
 * ankusactl.c: the operator's command-line client of the control socket.
 *
 *   ankusactl [-s socket] [-j] command [arguments]
 *   ankusactl -h | --help | -V | --version
 *
 * Sends one JSON request line (see daemon/admin/admin_control.h), prints the
 * answer: human-readable by default, the daemon's JSON objects with -j (one per
 * line for listings).  Exit: 0 success, 1 the daemon refused the command,
 * 2 usage, 3 the daemon cannot be reached.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ankusactl.h"

/* The default control socket: configure's, as ankusad's control.socket. */
#ifndef ANKUSA_CONTROLSOCKET
#error "ANKUSA_CONTROLSOCKET comes from the Makefile"
#endif

#define EXIT_REFUSED	1
#define EXIT_USAGE	2
#define EXIT_UNREACH	3
#define DRAIN_WAIT_S	120	/* drain without a timeout_s */

struct command {
	const char	*name;
	const char	*args;		/* for usage */
	json_t		*(*build)(int, char **);	/* NULL: usage error */
	void		(*print)(json_t *);		/* one answer object */
};

static int	 json_out;
int		 nprinted;
static json_t	*shown_attempts;	/* show ID's attempts, or NULL */

static void	 usage(FILE *, int) __attribute__((noreturn));
static json_t	*build_plain(int, char **);
static json_t	*build_queue(int, char **);
static json_t	*build_quarantine(int, char **);
static json_t	*with_timeout(json_t *, int, char **, int);
static json_t	*build_timeout(int, char **);
static json_t	*build_dls(int, char **);
static json_t	*build_dlq(int, char **);
static json_t	*build_backup(int, char **);
static json_t	*build_api(int, char **);
static json_t	*build_flush(int, char **);
static json_t	*build_pause(int, char **);
static json_t	*build_rate(int, char **);
static long long opt_count(const char *, const char *, long long);
static json_t	*build_replay(const char *, int, char **);
static json_t	*build_replays(int, char **);
static void	 print_backup(json_t *);
static void	 print_breakers(json_t *);
static void	 print_pen(json_t *);
static void	 print_stats(json_t *);
static void	 print_status(json_t *);
static void	 print_queue(json_t *);
static void	 print_result(json_t *);
static int	 drain_wait(FILE *, long long);
static json_t	*build_dlq_api(int, char **);
static json_t	*build_hook(int, char **);
static json_t	*show_attempts(const char *, const char *);
static json_t	*build_audit(int, char **);
static json_t	*build_sinks(int, char **);
static json_t	*build_hooks(int, char **);
static json_t	*build_replay_cmd(int, char **);

static const struct command commands[] = {
	{ "status", "", build_plain, print_status },
	{ "queue", "[-S source] [-n limit]", build_queue, print_queue },
	{ "reload", "", build_plain, print_result },
	{ "drain", "[timeout_s]", build_timeout, print_result },
	{ "stats", "", build_plain, print_stats },
	{ "tick", "[timeout_s]", build_timeout, print_result },
	{ "pressure", "", build_plain, print_status },
	{ "breakers", "", build_plain, print_breakers },
	{ "dlq", "list [-S source] [-n limit] | show [-S source] [--since T] "
	    "[--until T] [-n limit] [--cursor C] | purge [-S source] "
	    "[--since T] [--until T] [--id id] | purge --all | replay "
	    "[-S source] [--since T] [--until T] [--rate n] [--max-lag-ms n]",
	    build_dlq, print_replays },
	{ "replays", "list | show|pause|resume|cancel id", build_replays,
	    print_replays },
	{ "replay", "archive [-S source] [--since T] [--until T] [--sink n] "
	    "[--rate n] [--max-lag-ms n]", build_replay_cmd, print_replays },
	/* The search of hooks through the admin API (admin_api_hooks.c). */
	{ "hooks", "[-S source] [--tenant T] [--state S] [--event-type E] "
	    "[--since T] [--until T] [-n limit] [--cursor C]", build_hooks,
	    print_hooks },
	/* Dead letters and hooks through the admin API (admin_api_dlq.c). */
	{ "show", "id", build_hook, print_hook },
	{ "delete", "id", build_hook, print_hook },
	{ "dead-letter-source", "source [timeout_s]", build_dls,
	    print_result },
	{ "quarantine", "list|release|purge [-S source] [--id id] [-n limit]"
	    " | purge --all",
	    build_quarantine, print_pen },
	{ "backup", "dir", build_backup, print_backup },
	{ "api", "METHOD PATH [JSON-BODY]", build_api, print_api },
	/* The audit trail through the admin API (admin_api_audit.c). */
	{ "audit", "[--since T] [--until T] [--actor A] [--action A] "
	    "[--tenant T] [-n limit] [--cursor C]", build_audit, print_audit },
	/* Each sink key's health through the admin API
	 * (admin_api_sinks.c). */
	{ "sinks", "", build_sinks, print_sinks },
	/* manual operations (daemon/admin/admin_api_ops.c) */
	{ "flush", "[source[#sink]]", build_flush, print_api },
	{ "pause", "source[#sink]", build_pause, print_api },
	{ "resume", "source[#sink]", build_pause, print_api },
	{ "rate", "[-t tenant] source#sink [per_second [burst] | off]",
	    build_rate, print_api },
};

/* The usage and the commands: on standard output and exit 0 for -h, on
 * standard error and exit 2 (EXIT_USAGE) for a usage error. */
static void
usage(FILE *fp, int status)
{
	size_t i;

	fprintf(fp, "usage: ankusactl [-j] [-s socket] command [args]\n"
	    "       ankusactl -h | --help | -V | --version\n");
	if (status == 0)
		fprintf(fp, "\n"
		    "  -j             JSON answers, one object per line\n"
		    "  -s socket      the control socket (default: "
		    "ANKUSA_CONTROL_SOCKET,\n"
		    "                 else %s)\n"
		    "  -h, --help     print this help and exit\n"
		    "  -V, --version  print the version and exit\n"
		    "\n", ANKUSA_CONTROLSOCKET);
	fprintf(fp, "commands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(fp, "\t%s %s\n", commands[i].name, commands[i].args);
	exit(status);
}

/*
 * A request for the admin API's route of path (daemon/admin/admin_api.h),
 * carried by the control socket's "api" command; body is stolen (may be NULL).
 * The answer's "body" is the route's JSON answer.
 */
static json_t *
api_req(const char *method, const char *path, json_t *body)
{
	json_t *req = json_pack("{s:s, s:s, s:s}", "cmd", "api", "method",
	    method, "path", path);

	if (body != NULL)
		json_object_set_new(req, "body", body);
	return req;
}

/* api METHOD PATH [JSON-BODY] */
static json_t *
build_api(int argc, char **argv)
{
	json_error_t jerr;
	json_t *body = NULL;

	if (argc != 3 && argc != 4)
		return NULL;
	if (argc == 4 && (body = json_loads(argv[3], 0, &jerr)) == NULL) {
		fprintf(stderr, "ankusactl: api: the body is not JSON: %s\n",
		    jerr.text);
		exit(EXIT_USAGE);
	}
	return api_req(argv[1], argv[2], body);
}

/* An api answer's body, indented. */
void
print_api(json_t *ans)
{
	char *s = json_dumps(json_object_get(ans, "body"), JSON_INDENT(2) |
	    JSON_ENCODE_ANY);

	if (s != NULL)
		printf("%s\n", s);
	free(s);
}

static json_t *
build_plain(int argc, char **argv)
{
	if (argc != 1)
		return NULL;
	return json_pack("{s:s}", "cmd", argv[0]);
}

static json_t *
build_queue(int argc, char **argv)
{
	json_t *req = json_pack("{s:s}", "cmd", "queue");
	char *end;
	long long n;
	int ch;

	optind = 1;
	while ((ch = getopt(argc, argv, "S:n:")) != -1) {
		switch (ch) {
		case 'S':
			json_object_set_new(req, "source", json_string(optarg));
			break;
		case 'n':
			errno = 0;
			n = strtoll(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || end == optarg ||
			    n < 0) {
				fprintf(stderr, "ankusactl: -n must be a whole "
				    "number >= 0, got %s\n", optarg);
				exit(EXIT_USAGE);
			}
			json_object_set_new(req, "limit", json_integer(n));
			break;
		default:
			json_decref(req);
			return NULL;
		}
	}
	if (optind != argc) {
		json_decref(req);
		return NULL;
	}
	return req;
}

/* quarantine OP [-S source] [--id id] [-n limit] */
static json_t *
build_quarantine(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "id", required_argument, NULL, 'i' },
		{ "all", no_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	json_t *req;
	char *end;
	long long n;
	int ch;

	if (argc < 2 || (strcmp(argv[1], "list") != 0 &&
	    strcmp(argv[1], "release") != 0 && strcmp(argv[1], "purge") != 0))
		return NULL;
	req = json_pack("{s:s, s:s}", "cmd", "quarantine", "op", argv[1]);
	optind = 1;
	while ((ch = getopt_long(argc - 1, argv + 1, "S:n:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'S':
			json_object_set_new(req, "source", json_string(optarg));
			break;
		case 'i':
			json_object_set_new(req, "id", json_string(optarg));
			break;
		case 'a':
			if (strcmp(argv[1], "purge") != 0) {
				json_decref(req);
				return NULL;
			}
			json_object_set_new(req, "all", json_true());
			break;
		case 'n':
			errno = 0;
			n = strtoll(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || end == optarg ||
			    n < 0 || strcmp(argv[1], "list") != 0) {
				json_decref(req);
				return NULL;
			}
			json_object_set_new(req, "limit", json_integer(n));
			break;
		default:
			json_decref(req);
			return NULL;
		}
	}
	/* --all is the whole pen: with a filter it is a mistake. */
	if (optind != argc - 1 || (json_object_get(req, "all") != NULL &&
	    (json_object_get(req, "source") != NULL ||
	    json_object_get(req, "id") != NULL))) {
		json_decref(req);
		return NULL;
	}
	return req;
}

/* req with argv[at], the last argument, if given, as its timeout_s; NULL
 * (usage) when more are given or it is not a count of seconds. */
static json_t *
with_timeout(json_t *req, int argc, char **argv, int at)
{
	char *end;
	long long n;

	if (argc > at + 1) {
		json_decref(req);
		return NULL;
	}
	if (argc == at + 1) {
		errno = 0;
		n = strtoll(argv[at], &end, 10);
		if (errno != 0 || *end != '\0' || end == argv[at] || n < 0) {
			json_decref(req);
			return NULL;
		}
		json_object_set_new(req, "timeout_s", json_integer(n));
	}
	return req;
}

/* tick [timeout_s], drain [timeout_s] */
static json_t *
build_timeout(int argc, char **argv)
{
	return with_timeout(json_pack("{s:s}", "cmd", argv[0]), argc, argv,
	    1);
}

static json_t *
build_dls(int argc, char **argv)
{
	if (argc < 2)
		return NULL;
	return with_timeout(json_pack("{s:s, s:s}", "cmd",
	    "dead-letter-source", "source", argv[1]), argc, argv, 2);
}

/* dlq list [-S source] [-n limit]; show and purge: build_dlq_api */
static json_t *
build_dlq(int argc, char **argv)
{
	json_t *req;

	if (argc >= 2 && strcmp(argv[1], "replay") == 0)
		return build_replay("dlq", argc - 1, argv + 1);
	if (argc >= 2 && (strcmp(argv[1], "show") == 0 ||
	    strcmp(argv[1], "purge") == 0))
		return build_dlq_api(argc, argv);
	if (argc < 2 || strcmp(argv[1], "list") != 0)
		return NULL;
	if ((req = build_queue(argc - 1, argv + 1)) == NULL)
		return NULL;
	json_object_set_new(req, "cmd", json_string("dlq"));
	json_object_set_new(req, "op", json_string("list"));
	return req;
}

/* backup dir: the daemon's working directory is not ours, so a relative
 * dir is made absolute here. */
static json_t *
build_backup(int argc, char **argv)
{
	char cwd[PATH_MAX], *path;
	json_t *req;

	if (argc != 2 || argv[1][0] == '\0')
		return NULL;
	if (argv[1][0] == '/')
		return json_pack("{s:s, s:s}", "cmd", "backup", "dir", argv[1]);
	if (getcwd(cwd, sizeof(cwd)) == NULL) {
		fprintf(stderr, "ankusactl: backup: getcwd: %s\n",
		    strerror(errno));
		exit(EXIT_USAGE);
	}
	if (asprintf(&path, "%s/%s", cwd, argv[1]) == -1) {
		fprintf(stderr, "ankusactl: out of memory\n");
		exit(EXIT_UNREACH);
	}
	req = json_pack("{s:s, s:s}", "cmd", "backup", "dir", path);
	free(path);
	return req;
}

/* Bytes as MiB with one decimal, for people. */
static double
mib(json_t *o, const char *key)
{
	return (double)json_integer_value(json_object_get(o, key)) /
	    (1024.0 * 1024.0);
}

/* A progress line while the copy is made, then the result. */
static void
print_backup(json_t *o)
{
	const char *phase = json_string_value(json_object_get(o, "phase"));
	long long files = json_integer_value(json_object_get(o, "files"));

	if (json_object_get(o, "end") == NULL) {
		printf("%-8s %10.1f MiB copied, %lld file%s\n",
		    phase != NULL ? phase : "?", mib(o, "bytes"), files,
		    files == 1 ? "" : "s");
		fflush(stdout);
		return;
	}
	printf("backed up: %.1f MiB (%lld bytes) in %lld files\n",
	    mib(o, "bytes"),
	    (long long)json_integer_value(json_object_get(o, "bytes")), files);
}

void
print_dlq(json_t *o)
{
	char when[32];
	time_t t;
	struct tm tm;

	if (json_object_get(o, "status") != NULL) {
		print_dlq_api(o);
		return;
	}
	if (json_object_get(o, "end") != NULL) {
		printf("-- %lld dead letter%s\n",
		    (long long)json_integer_value(json_object_get(o, "count")),
		    json_integer_value(json_object_get(o, "count")) == 1 ?
		    "" : "s");
		return;
	}
	if (nprinted++ == 0)
		printf("%-36s %-12s %-16s %-4s %-8s %-20s %4s %s\n", "HOOK",
		    "TENANT", "SOURCE", "SINK", "MODULE", "DEAD (UTC)", "ATT",
		    "REASON");
	t = json_integer_value(json_object_get(o, "dead_at")) / 1000;
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%-36s %-12s %-16s %-4lld %-8s %-20s %4lld %s\n",
	    json_string_value(json_object_get(o, "hook_id")),
	    json_string_value(json_object_get(o, "tenant")),
	    json_string_value(json_object_get(o, "source")),
	    (long long)json_integer_value(json_object_get(o, "sink")),
	    json_string_value(json_object_get(o, "module")), when,
	    (long long)json_integer_value(json_object_get(o, "attempts")),
	    json_string_value(json_object_get(o, "reason")));
}

static void
print_breakers(json_t *o)
{
	if (json_object_get(o, "end") != NULL) {
		if (nprinted == 0)
			printf("no breaker is open or counting failures\n");
		return;
	}
	if (nprinted++ == 0)
		printf("%-16s %-16s %-4s %-8s %-10s %5s %5s %s\n", "TENANT",
		    "SOURCE", "SINK", "MODULE", "STATE", "FAILS", "OPENS",
		    "REOPEN IN");
	printf("%-16s %-16s %-4lld %-8s %-10s %5lld %5lld %.1fs\n",
	    json_string_value(json_object_get(o, "tenant")),
	    json_string_value(json_object_get(o, "source")),
	    (long long)json_integer_value(json_object_get(o, "sink")),
	    json_string_value(json_object_get(o, "module")),
	    json_string_value(json_object_get(o, "state")),
	    (long long)json_integer_value(json_object_get(o, "failures")),
	    (long long)json_integer_value(json_object_get(o, "opens")),
	    json_integer_value(json_object_get(o, "reopen_in_ms")) / 1000.0);
}

static void
print_pen(json_t *o)
{
	char when[32];
	time_t t;
	struct tm tm;

	if (json_object_get(o, "end") != NULL) {
		if (json_object_get(o, "released") != NULL)
			printf("released %lld, kept %lld, failed %lld\n",
			    (long long)json_integer_value(json_object_get(o,
			    "released")),
			    (long long)json_integer_value(json_object_get(o,
			    "kept")),
			    (long long)json_integer_value(json_object_get(o,
			    "failed")));
		else if (json_object_get(o, "purged") != NULL)
			printf("purged %lld\n", (long long)json_integer_value(
			    json_object_get(o, "purged")));
		else
			printf("-- %lld held\n", (long long)json_integer_value(
			    json_object_get(o, "count")));
		return;
	}
	if (nprinted++ == 0)
		printf("%-36s %-16s %-16s %-20s %9s %s\n", "ID", "TENANT",
		    "SOURCE", "RECEIVED (UTC)", "SIZE", "REASON");
	t = json_integer_value(json_object_get(o, "received_at")) / 1000;
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%-36s %-16s %-16s %-20s %9lld %s\n",
	    json_string_value(json_object_get(o, "id")),
	    json_string_value(json_object_get(o, "tenant")),
	    json_string_value(json_object_get(o, "source")), when,
	    (long long)json_integer_value(json_object_get(o, "size")),
	    json_string_value(json_object_get(o, "reason")));
}

/* The series as /metrics names them, a histogram by its _count and _sum,
 * then the other counts (those not already printed as a gauge). */
static void
print_stats(json_t *o)
{
	json_t *gauges = json_object_get(o, "gauges"), *v;
	const char *k, *brace;

	json_object_foreach(json_object_get(o, "counters"), k, v)
		printf("%s %lld\n", k, (long long)json_integer_value(v));
	json_object_foreach(gauges, k, v)
		if (json_is_integer(v))
			printf("%s %lld\n", k,
			    (long long)json_integer_value(v));
		else
			printf("%s %.6f\n", k, json_number_value(v));
	json_object_foreach(json_object_get(o, "histograms"), k, v) {
		brace = strchr(k, '{');
		printf("%.*s_count%s %lld\n", (int)(brace != NULL ?
		    brace - k : (int)strlen(k)), k, brace != NULL ? brace : "",
		    (long long)json_integer_value(json_object_get(v,
		    "count")));
		printf("%.*s_sum%s %.6f\n", (int)(brace != NULL ?
		    brace - k : (int)strlen(k)), k, brace != NULL ? brace : "",
		    json_number_value(json_object_get(v, "sum")));
	}
	json_object_foreach(o, k, v) {
		if (!json_is_integer(v) || json_object_get(gauges, k) != NULL)
			continue;
		printf("%s %lld\n", k, (long long)json_integer_value(v));
	}
}

static void
print_status(json_t *o)
{
	const char *k;
	json_t *v;

	if (json_object_get(o, "end") != NULL && json_object_size(o) <= 2)
		return;
	json_object_foreach(o, k, v) {
		if (strcmp(k, "end") == 0 || strcmp(k, "ok") == 0)
			continue;
		if (json_is_string(v))
			printf("%-14s %s\n", k, json_string_value(v));
		else {
			char *s = json_dumps(v, JSON_ENCODE_ANY);

			printf("%-14s %s\n", k, s != NULL ? s : "?");
			free(s);
		}
	}
}

static void
print_queue(json_t *o)
{
	char when[32];
	time_t t;
	struct tm tm;

	if (json_object_get(o, "end") != NULL) {
		printf("-- %lld hook%s\n",
		    (long long)json_integer_value(json_object_get(o, "count")),
		    json_integer_value(json_object_get(o, "count")) == 1 ?
		    "" : "s");
		return;
	}
	if (nprinted++ == 0)
		printf("%-36s %-10s %-16s %-16s %-20s %9s %4s\n", "ID", "SEQ",
		    "TENANT", "SOURCE", "RECEIVED (UTC)", "SIZE", "ROWS");
	t = json_integer_value(json_object_get(o, "received_at")) / 1000;
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%-36s %-10lld %-16s %-16s %-20s %9lld %4lld%s\n",
	    json_string_value(json_object_get(o, "id")),
	    (long long)json_integer_value(json_object_get(o, "seq")),
	    json_string_value(json_object_get(o, "tenant")),
	    json_string_value(json_object_get(o, "source")), when,
	    (long long)json_integer_value(json_object_get(o, "size")),
	    (long long)json_integer_value(json_object_get(o, "rows")),
	    json_is_true(json_object_get(o, "flagged")) ? " flagged" : "");
}

static void
print_result(json_t *o)
{
	const char *r = json_string_value(json_object_get(o, "result"));
	json_t *n;

	if (r == NULL)
		return;
	/* "settled 12", "dead_lettered 3": the word, then the count. */
	if ((n = json_object_get(o, r)) != NULL && json_is_integer(n))
		printf("%s %lld\n", r, (long long)json_integer_value(n));
	else
		printf("%s\n", r);
}

/*
 * After the drain's answer the daemon holds the connection open until it
 * exits, when the kernel closes it: the end of the stream is the stop.
 * 0 once it came, EXIT_REFUSED if the daemon still runs after timeout_s.
 */
static int
drain_wait(FILE *fp, long long timeout_s)
{
	struct pollfd pfd;
	struct timespec t0, t;
	long long left_ms;
	char buf[256];
	int r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	pfd.fd = fileno(fp);
	pfd.events = POLLIN;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		left_ms = timeout_s * 1000 - ((t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left_ms <= 0) {
			fprintf(stderr, "ankusactl: drain: ankusad is still "
			    "running after %lld s\n", timeout_s);
			return EXIT_REFUSED;
		}
		r = poll(&pfd, 1, left_ms > 1000 ? 1000 : (int)left_ms);
		if (r == -1 && errno != EINTR) {
			fprintf(stderr, "ankusactl: drain: poll: %s\n",
			    strerror(errno));
			return EXIT_UNREACH;
		}
		/* Anything but the end of the stream is ignored. */
		if (r > 0 && read(pfd.fd, buf, sizeof(buf)) <= 0)
			break;
	}
	if (!json_out)
		printf("stopped\n");
	return 0;
}

static int
ctl_connect(const char *path)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "ankusactl: socket path too long: %s\n", path);
		exit(EXIT_USAGE);
	}
	memcpy(sun.sun_path, path, strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		fprintf(stderr, "ankusactl: cannot reach ankusad at %s: %s\n",
		    path, strerror(errno));
		exit(EXIT_UNREACH);
	}
	return fd;
}

int
main(int argc, char *argv[])
{
	const char *path = ANKUSA_CONTROLSOCKET;
	const struct command *cmd = NULL;
	json_t *req, *ans;
	json_error_t jerr;
	char *line = NULL, *s;
	size_t cap = 0, i;
	ssize_t n;
	FILE *fp;
	int ch, fd, rc = EXIT_UNREACH;
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};

	if ((s = getenv("ANKUSA_CONTROL_SOCKET")) != NULL && *s != '\0')
		path = s;
	while ((ch = getopt_long(argc, argv, "+hjs:V", longopts, NULL)) !=
	    -1) {
		switch (ch) {
		case 'h':
			usage(stdout, 0);
		case 'j':
			json_out = 1;
			break;
		case 's':
			path = optarg;
			break;
		case 'V':
			printf("ankusactl (%s) %s\n", PACKAGE_NAME,
			    PACKAGE_VERSION);
			return 0;
		default:
			usage(stderr, EXIT_USAGE);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(stderr, EXIT_USAGE);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[0], commands[i].name) == 0)
			cmd = &commands[i];
	if (cmd == NULL) {
		fprintf(stderr, "ankusactl: unknown command %s\n", argv[0]);
		usage(stderr, EXIT_USAGE);
	}
	if ((req = cmd->build(argc, argv)) == NULL)
		usage(stderr, EXIT_USAGE);
	/* show ID: the attempt log first, on a connection of its own; it
	 * outlives the hook. */
	if (strcmp(cmd->name, "show") == 0)
		shown_attempts = show_attempts(path, argv[1]);

	/* A daemon that refuses this user answers one line and closes,
	 * maybe before the request is written: the write's EPIPE must not
	 * kill ankusactl before it reads why. */
	signal(SIGPIPE, SIG_IGN);
	fd = ctl_connect(path);
	if ((s = json_dumps(req, JSON_COMPACT)) == NULL ||
	    (fp = fdopen(fd, "r+")) == NULL) {
		fprintf(stderr, "ankusactl: out of memory\n");
		return EXIT_UNREACH;
	}
	fprintf(fp, "%s\n", s);
	fflush(fp);
	clearerr(fp);
	free(s);
	json_decref(req);

	while ((n = getline(&line, &cap, fp)) > 0) {
		int end;

		if ((ans = json_loadb(line, n, 0, &jerr)) == NULL) {
			fprintf(stderr, "ankusactl: bad answer from ankusad: "
			    "%s\n", jerr.text);
			return EXIT_UNREACH;
		}
		end = json_is_true(json_object_get(ans, "end"));
		if (end && shown_attempts != NULL && json_integer_value(
		    json_object_get(ans, "status")) == 404) {
			/* A hook gone whose attempts are kept. */
			json_decref(ans);
			ans = json_pack("{s:b, s:b, s:i, s:{s:s}}", "end", 1,
			    "ok", 1, "status", 200, "body", "state", "gone");
		}
		if (end && shown_attempts != NULL)
			json_object_set(json_object_get(ans, "body"),
			    "attempts", shown_attempts);
		if (end && !json_is_true(json_object_get(ans, "ok"))) {
			fprintf(stderr, "ankusactl: %s: %s\n", cmd->name,
			    json_string_value(json_object_get(ans, "error")));
			json_decref(ans);
			rc = EXIT_REFUSED;
			break;
		}
		if (json_out && end && json_object_get(ans, "status") !=
		    NULL && json_object_get(ans, "body") != NULL) {
			/* An api answer: the route's own JSON. */
			s = json_dumps(json_object_get(ans, "body"),
			    JSON_COMPACT | JSON_ENCODE_ANY);
			printf("%s\n", s != NULL ? s : "null");
			free(s);
		} else if (json_out) {
			/* Listings: one object per item, the end line
			 * dropped; single answers: the object itself; a
			 * result after progress objects (backup): both. */
			if (!end || nprinted == 0 ||
			    json_object_get(ans, "result") != NULL) {
				json_object_del(ans, "end");
				if (end)
					json_object_del(ans, "ok");
				if (!(end && json_object_get(ans, "count") !=
				    NULL)) {
					s = json_dumps(ans, JSON_COMPACT);
					printf("%s\n", s);
					free(s);
				}
				if (!end) {
					nprinted++;
					fflush(stdout);	/* progress */
				}
			}
		} else
			cmd->print(ans);
		json_decref(ans);
		if (end) {
			rc = 0;
			break;
		}
	}
	if (rc == EXIT_UNREACH && n <= 0)
		fprintf(stderr, "ankusactl: ankusad closed the connection\n");
	if (rc == 0 && strcmp(cmd->name, "drain") == 0)
		rc = drain_wait(fp, argc == 2 ? atoll(argv[1]) : DRAIN_WAIT_S);
	free(line);
	fclose(fp);
	return rc;
}

/*
 * Dead letters and hooks through the admin API: dlq show, dlq purge, show
 * ID, delete ID.
 */

/* path, then "?" or "&", key, "=" and value percent-encoded. */
static void
query_add(char *path, size_t len, const char *key, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(path);
	const unsigned char *p;

	n += snprintf(path + n, n < len ? len - n : 0, "%c%s=",
	    strchr(path, '?') != NULL ? '&' : '?', key);
	for (p = (const unsigned char *)value; *p != '\0' && n + 4 < len;
	    p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || strchr("-_.~", *p) != NULL)
			path[n++] = *p;
		else {
			path[n++] = '%';
			path[n++] = hex[*p >> 4];
			path[n++] = hex[*p & 15];
		}
	}
	path[n < len ? n : len - 1] = '\0';
}

/* dlq show [-S source] [--since T] [--until T] [-n limit] [--cursor C];
 * dlq purge [-S source] [--since T] [--until T] [--id id] | --all */
static json_t *
build_dlq_api(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "id", required_argument, NULL, 'i' },
		{ "cursor", required_argument, NULL, 'c' },
		{ "all", no_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	char path[4096] = "/v1/dlq";
	int show = strcmp(argv[1], "show") == 0, ch, filters = 0, all = 0;

	optind = 1;
	while ((ch = getopt_long(argc - 1, argv + 1, "S:n:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'S':
			query_add(path, sizeof(path), "source_id", optarg);
			filters++;
			break;
		case 's':
			query_add(path, sizeof(path), "since", optarg);
			filters++;
			break;
		case 'u':
			query_add(path, sizeof(path), "until", optarg);
			filters++;
			break;
		case 'i':
			if (show)
				return NULL;
			query_add(path, sizeof(path), "id", optarg);
			filters++;
			break;
		case 'n':
		case 'c':
			if (!show)
				return NULL;
			query_add(path, sizeof(path), ch == 'n' ? "limit" :
			    "cursor", optarg);
			break;
		case 'a':
			if (show)
				return NULL;
			all = 1;
			break;
		default:
			return NULL;
		}
	}
	/* purge: a filter, or --all alone. */
	if (optind != argc - 1 || (!show && (filters > 0) == all))
		return NULL;
	if (all)
		query_add(path, sizeof(path), "all", "true");
	return api_req(show ? "GET" : "DELETE", path, NULL);
}

/* show ID, delete ID */
static json_t *
build_hook(int argc, char **argv)
{
	char path[256];

	if (argc != 2 || strlen(argv[1]) > 64)
		return NULL;
	snprintf(path, sizeof(path), "/v1/hooks/%s", argv[1]);
	return api_req(strcmp(argv[0], "show") == 0 ? "GET" : "DELETE", path,
	    NULL);
}

/* show ID's attempts: every page of GET /v1/hooks/ID/attempts as one
 * list, each on a connection of its own; NULL when the log has none (the
 * hook's answer then says why). */
static json_t *
show_attempts(const char *sock, const char *id)
{
	json_t *all, *req, *ans = NULL, *b;
	char path[512], *s, *line = NULL;
	const char *cur = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *fp;
	int pages;

	if ((all = json_array()) == NULL)
		return NULL;
	for (pages = 0; pages < 100; pages++) {
		snprintf(path, sizeof(path), "/v1/hooks/%s/attempts", id);
		query_add(path, sizeof(path), "limit", "1000");
		if (cur != NULL)
			query_add(path, sizeof(path), "cursor", cur);
		req = api_req("GET", path, NULL);
		s = json_dumps(req, JSON_COMPACT);
		json_decref(req);
		if (s == NULL || (fp = fdopen(ctl_connect(sock), "r+")) ==
		    NULL) {
			free(s);
			break;
		}
		fprintf(fp, "%s\n", s);
		fflush(fp);
		free(s);
		json_decref(ans);
		ans = NULL;
		while ((n = getline(&line, &cap, fp)) > 0) {
			json_decref(ans);
			if ((ans = json_loadb(line, n, 0, NULL)) == NULL ||
			    json_is_true(json_object_get(ans, "end")))
				break;
		}
		fclose(fp);
		b = json_object_get(ans, "body");
		if (!json_is_true(json_object_get(ans, "ok")) ||
		    !json_is_array(json_object_get(b, "attempts")))
			break;
		json_array_extend(all, json_object_get(b, "attempts"));
		if ((cur = json_string_value(json_object_get(b,
		    "next_cursor"))) == NULL)
			break;
	}
	free(line);
	json_decref(ans);
	if (json_array_size(all) == 0) {
		json_decref(all);
		return NULL;
	}
	return all;
}

/* SOURCE[#SINK]: the source (valid: the path needs no encoding) and the
 * sink index, or -1 when none is given. */
static void
source_sink(const char *cmd, const char *arg, char *src, size_t len,
    long *sink)
{
	const char *h = strchr(arg, '#');
	size_t n = h != NULL ? (size_t)(h - arg) : strlen(arg);
	char *end;
	size_t i;

	*sink = -1;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)arg[i]) && arg[i] != '_' &&
		    arg[i] != '-')
			break;
	if (n == 0 || n >= len || i < n) {
		fprintf(stderr, "ankusactl: %s: %s is not SOURCE[#SINK]\n",
		    cmd, arg);
		exit(EXIT_USAGE);
	}
	memcpy(src, arg, n);
	src[n] = '\0';
	if (h == NULL)
		return;
	errno = 0;
	*sink = strtol(h + 1, &end, 10);
	if (errno != 0 || end == h + 1 || *end != '\0' || *sink < 0) {
		fprintf(stderr, "ankusactl: %s: the sink of %s must be an "
		    "index from 0\n", cmd, arg);
		exit(EXIT_USAGE);
	}
}

/* flush [SOURCE[#SINK]]: retry now, every tenant. */
static json_t *
build_flush(int argc, char **argv)
{
	json_t *body = json_object();
	char src[65];
	long sink;

	if (argc > 2) {
		json_decref(body);
		return NULL;
	}
	if (argc == 2) {
		source_sink(argv[0], argv[1], src, sizeof(src), &sink);
		json_object_set_new(body, "source", json_string(src));
		if (sink >= 0)
			json_object_set_new(body, "sink", json_integer(sink));
	}
	return api_req("POST", "/v1/retry-now", body);
}

/* pause|resume SOURCE[#SINK]: a pause is per source and sink, whatever
 * the tenant the path names. */
static json_t *
build_pause(int argc, char **argv)
{
	char src[65], path[160];
	long sink;

	if (argc != 2)
		return NULL;
	source_sink(argv[0], argv[1], src, sizeof(src), &sink);
	if (sink >= 0)
		snprintf(path, sizeof(path), "/v1/tenants/default/sources/%s/"
		    "sinks/%ld/%s", src, sink, argv[0]);
	else
		snprintf(path, sizeof(path), "/v1/tenants/default/sources/%s/"
		    "%s", src, argv[0]);
	return api_req("POST", path, NULL);
}

/* rate [-t TENANT] SOURCE#SINK [PER_SECOND [BURST] | off]: a sink key's
 * rate (GET), an operator's rate for it (PUT) or its removal (DELETE);
 * the tenant is default unless named. */
static json_t *
build_rate(int argc, char **argv)
{
	const char *tenant = "default", *method = "GET";
	json_t *body = NULL;
	char src[65], path[256], *end;
	double ps;
	long sink;
	int ch;

	optind = 1;
	while ((ch = getopt(argc, argv, "t:")) != -1) {
		if (ch != 't')
			return NULL;
		tenant = optarg;
	}
	argc -= optind;
	argv += optind;
	if (argc < 1 || argc > 3)
		return NULL;
	source_sink("rate", argv[0], src, sizeof(src), &sink);
	if (sink < 0) {
		fprintf(stderr, "ankusactl: rate: %s names no sink "
		    "(SOURCE#SINK)\n", argv[0]);
		exit(EXIT_USAGE);
	}
	if (argc == 2 && strcmp(argv[1], "off") == 0)
		method = "DELETE";
	else if (argc >= 2) {
		/* The daemon checks the bounds; here only the form. */
		ps = strtod(argv[1], &end);
		if (end == argv[1] || *end != '\0') {
			fprintf(stderr, "ankusactl: rate: %s is not a number "
			    "of attempts a second\n", argv[1]);
			exit(EXIT_USAGE);
		}
		method = "PUT";
		body = json_pack("{s:f}", "per_second", ps);
		if (argc == 3)
			json_object_set_new(body, "burst", json_integer(
			    opt_count("burst", argv[2], 1)));
	}
	snprintf(path, sizeof(path), "/v1/tenants/%s/sources/%s/sinks/%ld/"
	    "rate", tenant, src, sink);
	return api_req(method, path, body);
}

/*
 * Replay jobs (the admin API's /v1/replays routes,
 * daemon/admin/admin_api_replay.c).
 */

/* A whole number option's value, or a usage error naming it. */
static long long
opt_count(const char *name, const char *v, long long min)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno != 0 || *end != '\0' || end == v || n < min) {
		fprintf(stderr, "ankusactl: %s must be a whole number >= %lld, "
		    "got %s\n", name, min, v);
		exit(EXIT_USAGE);
	}
	return n;
}

/* A time option: ms since the epoch as a number, anything else as the
 * string the daemon reads (RFC 3339) or refuses, naming the field. */
static json_t *
opt_time(const char *v)
{
	size_t i;

	for (i = 0; v[i] >= '0' && v[i] <= '9'; i++)
		;
	if (i > 0 && v[i] == '\0' && i < 19)
		return json_integer(strtoll(v, NULL, 10));
	return json_string(v);
}

/* A replay job of kind: [-S source] [--since T] [--until T] [--rate n]
 * [--max-lag-ms n], and for kind archive [--sink n] */
static json_t *
build_replay(const char *kind, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "rate", required_argument, NULL, 'r' },
		{ "max-lag-ms", required_argument, NULL, 'l' },
		{ "sink", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	json_t *body = json_pack("{s:s}", "kind", kind);
	int ch;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "S:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'S':
			json_object_set_new(body, "source_id",
			    json_string(optarg));
			break;
		case 's':
			json_object_set_new(body, "since", opt_time(optarg));
			break;
		case 'u':
			json_object_set_new(body, "until", opt_time(optarg));
			break;
		case 'r':
			json_object_set_new(body, "rate", json_integer(
			    opt_count("--rate", optarg, 1)));
			break;
		case 'l':
			json_object_set_new(body, "max_lag_ms", json_integer(
			    opt_count("--max-lag-ms", optarg, 0)));
			break;
		case 'k':
			/* The archive's deliveries are by sink. */
			if (strcmp(kind, "archive") != 0) {
				json_decref(body);
				return NULL;
			}
			json_object_set_new(body, "sink", json_integer(
			    opt_count("--sink", optarg, 0)));
			break;
		default:
			json_decref(body);
			return NULL;
		}
	}
	if (optind != argc) {
		json_decref(body);
		return NULL;
	}
	return api_req("POST", "/v1/replays", body);
}

/* replays list | show|pause|resume|cancel ID */
static json_t *
build_replays(int argc, char **argv)
{
	static const struct {
		const char	*op;
		const char	*state;		/* NULL: a GET */
	} ops[] = {
		{ "show", NULL },
		{ "pause", "paused" },
		{ "resume", "running" },
		{ "cancel", "cancelled" },
	};
	const char *p;
	char path[128];
	size_t i;

	if (argc == 2 && strcmp(argv[1], "list") == 0)
		return api_req("GET", "/v1/replays", NULL);
	if (argc != 3)
		return NULL;
	/* A job id is a UUID: nothing in it needs encoding, and nothing
	 * else may go into the path. */
	for (p = argv[2]; *p != '\0'; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
		    (*p >= 'A' && *p <= 'F') || *p == '-'))
			break;
	if (*p != '\0' || p - argv[2] != 36) {
		fprintf(stderr, "ankusactl: replays: %s is not a job id\n",
		    argv[2]);
		exit(EXIT_USAGE);
	}
	snprintf(path, sizeof(path), "/v1/replays/%s", argv[2]);
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (strcmp(argv[1], ops[i].op) != 0)
			continue;
		if (ops[i].state == NULL)
			return api_req("GET", path, NULL);
		return api_req("PATCH", path, json_pack("{s:s}", "state",
		    ops[i].state));
	}
	return NULL;
}

/* A query option of a listing: its option's character, the key it sets. */
struct query_key {
	int		 ch;
	const char	*key;
};

/* GET base with the query the options set (build_audit, build_hooks). */
static json_t *
build_query(const char *base, const char *shortopts,
    const struct option *longopts, const struct query_key *keys,
    size_t nkeys, int argc, char **argv)
{
	char path[4096];
	size_t i;
	int ch;

	snprintf(path, sizeof(path), "%s", base);
	optind = 1;
	while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) !=
	    -1) {
		for (i = 0; i < nkeys; i++)
			if (keys[i].ch == ch)
				break;
		if (i == nkeys)
			return NULL;
		query_add(path, sizeof(path), keys[i].key, optarg);
	}
	if (optind != argc)
		return NULL;
	return api_req("GET", path, NULL);
}

/* audit [--since T] [--until T] [--actor A] [--action A] [--tenant T]
 * [-n limit] [--cursor C]: GET /v1/audit, newest first. */
static json_t *
build_audit(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "actor", required_argument, NULL, 'a' },
		{ "action", required_argument, NULL, 'A' },
		{ "tenant", required_argument, NULL, 't' },
		{ "cursor", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct query_key keys[] = {
		{ 's', "since" }, { 'u', "until" }, { 'a', "actor" },
		{ 'A', "action" }, { 't', "tenant" }, { 'c', "cursor" },
		{ 'n', "limit" },
	};

	return build_query("/v1/audit", "n:", longopts, keys,
	    sizeof(keys) / sizeof(keys[0]), argc, argv);
}

/*
 * Each sink key's health: sinks.
 */

static json_t *
build_sinks(int argc, char **argv)
{
	if (argc != 1)
		return NULL;
	return api_req("GET", "/v1/sinks", NULL);
}

/* replay archive [options]: a replay job of kind archive (build_replay's
 * options). */
static json_t *
build_replay_cmd(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "archive") != 0)
		return NULL;
	return build_replay("archive", argc - 1, argv + 1);
}

/* hooks [-S source] [--tenant T] [--state S] [--event-type E] [--since T]
 * [--until T] [-n limit] [--cursor C]: GET /v1/hooks, newest first. */
static json_t *
build_hooks(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "tenant", required_argument, NULL, 't' },
		{ "state", required_argument, NULL, 'x' },
		{ "event-type", required_argument, NULL, 'e' },
		{ "cursor", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct query_key keys[] = {
		{ 's', "since" }, { 'u', "until" }, { 't', "tenant_id" },
		{ 'x', "state" }, { 'e', "event_type" }, { 'c', "cursor" },
		{ 'n', "limit" }, { 'S', "source_id" },
	};

	return build_query("/v1/hooks", "n:S:", longopts, keys,
	    sizeof(keys) / sizeof(keys[0]), argc, argv);
}

