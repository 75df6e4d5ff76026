/* SPDX-License-Identifier: ISC */
/*
 * log.c: stderr or syslog output with levels, as text or JSON; see log.h.
 *
 * A line is built whole in a buffer on the stack and written with one
 * call (threads of the master log too: no static buffer), so that lines
 * of several processes sharing one stderr never interleave.
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
#include "utf8.h"

/* A line, its header and its text escaped: msg may grow six times when
 * escaped; what does not fit is cut between characters. */
#define LOG_LINE_MAX	8192

static int		 log_foreground = 1;
static int		 log_journal;	/* stderr is the journal's */
static enum log_level	 log_cur = LOG_LEVEL_INFO;
static char		 log_name[64] = "ankusa";
static char		 log_prefix[64];
static int		 log_jsonfmt;	/* LOG_FORMAT_JSON */
static __thread int	 log_held;	/* log_hold */
static __thread size_t	 log_hlen;
static __thread char	 log_hbuf[LOG_HOLD_MAX];

static void	log_vemit(enum log_level, int, const char *, va_list);
static void	log_write(enum log_level, const char *, const char *);
static void	log_out(enum log_level, const char *, size_t);
static void	log_drain(void);
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
log_setformat(enum log_format f)
{
	log_jsonfmt = f == LOG_FORMAT_JSON;
}

int
log_format_parse(const char *s, enum log_format *f)
{
	if (strcmp(s, "text") == 0)
		*f = LOG_FORMAT_TEXT;
	else if (strcmp(s, "json") == 0)
		*f = LOG_FORMAT_JSON;
	else
		return -1;
	return 0;
}

int
log_json(void)
{
	return log_jsonfmt;
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
	char msg[2048], esc[LOG_LINE_MAX / 2], body[LOG_LINE_MAX / 2 + 16];
	int saved = errno, n;
	size_t k;

	if (l > log_cur)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		return;
	if (with_errno && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - n, ": %s", strerror(saved));
	if (!log_jsonfmt) {
		log_write(l, NULL, msg);
		errno = saved;
		return;
	}
	k = 0;
	if (log_prefix[0] != '\0') {
		k = log_json_str(esc, sizeof(esc), log_prefix,
		    strlen(log_prefix));
		k += log_json_str(esc + k, sizeof(esc) - k, ": ", 2);
	}
	log_json_str(esc + k, sizeof(esc) - k, msg, strlen(msg));
	snprintf(body, sizeof(body), "\"msg\":\"%s\"", esc);
	log_write(l, body, NULL);
	errno = saved;
}

void
log_fields(enum log_level l, const char *body)
{
	int saved = errno;

	if (l > log_cur)
		return;
	if (log_jsonfmt)
		log_write(l, body, NULL);
	else
		log_write(l, NULL, body);
	errno = saved;
}

/*
 * One line at level l: in json the members (time, level, process, pid,
 * then members), else the text msg after the header and the prefix.  One
 * write to stderr, or one syslog call.
 */
static void
log_write(enum log_level l, const char *members, const char *msg)
{
	char line[LOG_LINE_MAX], tb[32], pri[8] = "", pname[sizeof(log_name) *
	    6];
	struct timespec ts;
	struct tm tm;
	int n;

	if (log_journal)
		snprintf(pri, sizeof(pri), "<%d>", log_prio[l]);
	if (log_foreground || members != NULL) {
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(tb, sizeof(tb), "%Y-%m-%dT%H:%M:%S", &tm);
	}
	if (members != NULL) {
		log_json_str(pname, sizeof(pname), log_name, strlen(log_name));
		n = snprintf(line, sizeof(line), "%s{\"time\":\"%s.%03ldZ\","
		    "\"level\":\"%s\",\"process\":\"%s\",\"pid\":%d,%s}",
		    log_foreground ? pri : "", tb, ts.tv_nsec / 1000000,
		    log_names[l], pname, (int)getpid(), members);
		if (n < 0)
			return;
		if ((size_t)n >= sizeof(line)) {
			/* members were cut to fit: no valid object; say so
			 * in one that is. */
			n = snprintf(line, sizeof(line), "%s{\"time\":\"%s."
			    "%03ldZ\",\"level\":\"%s\",\"process\":\"%s\","
			    "\"pid\":%d,\"msg\":\"(a line of %d bytes cut)\"}",
			    log_foreground ? pri : "", tb, ts.tv_nsec / 1000000,
			    log_names[l], pname, (int)getpid(), n);
		}
		if (!log_foreground) {
			syslog(log_prio[l], "%s", line);
			return;
		}
	} else if (log_foreground)
		n = snprintf(line, sizeof(line), "%s%s.%03ldZ %s[%d]: %s: "
		    "%s%s%s", pri, tb, ts.tv_nsec / 1000000, log_name,
		    (int)getpid(), log_names[l], log_prefix,
		    log_prefix[0] ? ": " : "", msg);
	else {
		syslog(log_prio[l], "%s%s%s", log_prefix,
		    log_prefix[0] ? ": " : "", msg);
		return;
	}
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	line[n++] = '\n';
	log_out(l, line, (size_t)n);
}

/* A whole line to stderr, or into the held lines (log_hold). */
static void
log_out(enum log_level l, const char *line, size_t n)
{
	if (log_held && l != LOG_LEVEL_ERROR) {
		if (log_hlen + n > sizeof(log_hbuf))
			log_drain();
		if (n <= sizeof(log_hbuf)) {
			memcpy(log_hbuf + log_hlen, line, n);
			log_hlen += n;
			return;
		}
	} else
		log_drain();
	(void)fwrite(line, 1, n, stderr);
}

static void
log_drain(void)
{
	if (log_hlen > 0)
		(void)fwrite(log_hbuf, 1, log_hlen, stderr);
	log_hlen = 0;
}

void
log_hold(void)
{
	log_held = 1;
}

void
log_release(void)
{
	log_drain();
	log_held = 0;
}

size_t
log_json_str(char *dst, size_t dstsz, const char *src, size_t n)
{
	const unsigned char *p = (const unsigned char *)src;
	size_t k = 0, i = 0, len;
	char esc[8];
	const char *put;

	while (i < n) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' &&
		    p[i] != '\\') {
			put = (const char *)p + i;
			len = 1;
		} else if (p[i] == '"' || p[i] == '\\') {
			esc[0] = '\\';
			esc[1] = (char)p[i];
			put = esc;
			len = 2;
		} else if (p[i] < 0x20 || p[i] == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", p[i]);
			put = esc;
			len = 6;
		} else if ((len = utf8_seq(p + i, n - i, NULL)) > 1)
			put = (const char *)p + i;
		else {
			put = "\xef\xbf\xbd";	/* U+FFFD */
			len = 3;
		}
		if (k + len >= dstsz)
			break;
		memcpy(dst + k, put, len);
		k += len;
		/* An escape or a replacement stands for one byte. */
		i += put == (const char *)p + i ? len : 1;
	}
	dst[k] = '\0';
	return k;
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
