/* SPDX-License-Identifier: ISC */
/*
 * log.c: stderr or syslog output with levels; see log.h.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int		 log_foreground = 1;
static int		 log_journal;	/* stderr is the journal's */
static enum log_level	 log_cur = LOG_LEVEL_INFO;
static char		 log_name[64] = "ankusa";
static char		 log_prefix[64];

static void	log_vemit(enum log_level, int, const char *, va_list);
static void	log_emit(enum log_level, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static int	log_is_journal(void);

static const char *const log_names[] = {
	"error", "warning", "info", "debug"
};
static const int log_prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

/* JOURNAL_STREAM is "device:inode" of the stream systemd connected to the
 * journal; stderr is it only if they match (a child's stderr may have been
 * redirected since). */
static int
log_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2 ||
	    fstat(STDERR_FILENO, &st) == -1)
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino;
}

void
log_init(const char *progname, int foreground)
{
	snprintf(log_name, sizeof(log_name), "%s", progname);
	log_foreground = foreground;
	log_journal = foreground && log_is_journal();
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
	size_t i;

	for (i = 0; i < sizeof(log_names) / sizeof(log_names[0]); i++)
		if (strcmp(s, log_names[i]) == 0) {
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

		char pri[8] = "";

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(tb, sizeof(tb), "%Y-%m-%dT%H:%M:%S", &tm);
		if (log_journal)
			snprintf(pri, sizeof(pri), "<%d>", log_prio[l]);
		fprintf(stderr, "%s%s.%03ldZ %s[%d]: %s: %s%s%s\n", pri, tb,
		    ts.tv_nsec / 1000000, log_name, (int)getpid(), log_names[l],
		    log_prefix, log_prefix[0] ? ": " : "", msg);
	} else
		syslog(log_prio[l], "%s%s%s", log_prefix,
		    log_prefix[0] ? ": " : "", msg);
	errno = saved;
}

char *
log_clean(char *dst, size_t dstsz, const char *src)
{
	size_t n = 0;
	unsigned char c;

	for (; *src != '\0'; src++) {
		c = (unsigned char)*src;
		if (c < 0x20 || c == 0x7f) {
			if (n + 4 >= dstsz)
				break;
			snprintf(dst + n, dstsz - n, "\\x%02x", c);
			n += 4;
		} else {
			if (n + 1 >= dstsz)
				break;
			dst[n++] = (char)c;
		}
	}
	dst[n] = '\0';
	return dst;
}

static void
log_emit(enum log_level l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(l, 0, fmt, ap);
	va_end(ap);
}

int
log_limit_take(struct log_limit *ll, enum log_level l)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return log_limit_at(ll, l, (uint64_t)ts.tv_sec);
}

int
log_limit_at(struct log_limit *ll, enum log_level l, uint64_t sec)
{
	if (l > log_cur)
		return 0;
	if (sec != ll->sec) {
		ll->sec = sec;
		ll->n = 0;
	}
	if (ll->n >= ll->per_sec) {
		ll->suppressed++;
		return 0;
	}
	ll->n++;
	if (ll->suppressed > 0) {
		log_emit(l, "%s: %" PRIu64 " more such lines suppressed (at "
		    "most %u a second)", ll->what, ll->suppressed, ll->per_sec);
		ll->suppressed = 0;
	}
	return 1;
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

LOG_FN(log_errorx, LOG_LEVEL_ERROR, 0)
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
