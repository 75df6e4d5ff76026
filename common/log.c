/*
 * log.c: stderr or syslog output with levels; see log.h.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int		 log_foreground = 1;
static enum log_level	 log_cur = LOG_LEVEL_INFO;
static char		 log_name[64] = "ankusa";
static char		 log_prefix[64];

static void	log_vemit(enum log_level, int, const char *, va_list);

void
log_init(const char *progname, int foreground)
{
	snprintf(log_name, sizeof(log_name), "%s", progname);
	log_foreground = foreground;
	if (!foreground)
		openlog(log_name, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_setlevel(enum log_level l)
{
	log_cur = l;
}

void
log_setprefix(const char *p)
{
	snprintf(log_prefix, sizeof(log_prefix), "%s", p ? p : "");
}

int
log_level_parse(const char *s, enum log_level *l)
{
	static const char *names[] = { "error", "warning", "info", "debug" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i]) == 0) {
			*l = (enum log_level)i;
			return 0;
		}
	if (strcmp(s, "warn") == 0) {
		*l = LOG_LEVEL_WARN;
		return 0;
	}
	return -1;
}

static void
log_vemit(enum log_level l, int with_errno, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char msg[2048];
	int saved = errno, n;

	if (l > log_cur)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		return;
	if (with_errno && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - n, ": %s", strerror(saved));
	if (log_foreground) {
		struct timespec ts;
		struct tm tm;
		char tb[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(tb, sizeof(tb), "%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ld %s[%d]: %s%s%s\n", tb,
		    ts.tv_nsec / 1000000, log_name, (int)getpid(), log_prefix,
		    log_prefix[0] ? ": " : "", msg);
	} else
		syslog(prio[l], "%s%s%s", log_prefix, log_prefix[0] ? ": " : "",
		    msg);
	errno = saved;
}

#define LOG_FN(name, level, e)				\
void							\
name(const char *fmt, ...)				\
{							\
	va_list ap;					\
	va_start(ap, fmt);				\
	log_vemit(level, e, fmt, ap);			\
	va_end(ap);					\
}

LOG_FN(log_warn, LOG_LEVEL_WARN, 1)
LOG_FN(log_warnx, LOG_LEVEL_WARN, 0)
LOG_FN(log_info, LOG_LEVEL_INFO, 0)
LOG_FN(log_debug, LOG_LEVEL_DEBUG, 0)

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LEVEL_ERROR, 1, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LEVEL_ERROR, 0, fmt, ap);
	va_end(ap);
	exit(1);
}
