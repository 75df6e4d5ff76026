/* SPDX-License-Identifier: ISC */
/*
 * log.h: one logging interface for every Ankusa program.
 *
 * Every line has a severity, a syslog priority: fatal and fatalx LOG_ERR,
 * log_warn and log_warnx LOG_WARNING, log_info LOG_INFO, log_debug
 * LOG_DEBUG.  In the foreground (-d) lines go to stderr as
 *	2026-12-02T03:10:00.123Z ankusad[42]: warning: text
 * (UTC), with the priority in front as "<4>" when stderr is the journal's
 * stream (JOURNAL_STREAM names it), so that journald files each line at
 * its level; otherwise they go to syslog (facility daemon).  log_warn
 * appends strerror(errno); log_warnx does not.  fatal and fatalx log and
 * exit 1: only for what cannot go on.
 *
 * With log.format json (log_setformat) every line is instead one JSON
 * object, with the same journal prefix:
 *	{"time":"2026-12-02T03:10:00.123Z","level":"warning",
 *	 "process":"ankusad","pid":42,"msg":"text"}
 * (on one line), the prefix of a child (log_setprefix) at the head of msg
 * as in text.  A line of named fields (log_fields: the delivery lines)
 * has its fields as members in place of msg.  Strings are escaped as JSON
 * requires (quote, backslash, every control byte), a byte that is not
 * well-formed UTF-8 becomes U+FFFD: each line is valid JSON whatever its
 * text held.
 *
 * A line that outside input can repeat at will (a forged signature, a sink
 * that keeps failing) is logged through a struct log_limit: at most
 * per_sec such lines a second, then, with the first line of a later
 * second, one line saying how many were suppressed.
 */
#ifndef ANKUSA_LOG_H
#define ANKUSA_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

void	log_init(const char *progname, int foreground);
void	log_setlevel(enum log_level);
int	log_level_parse(const char *, enum log_level *);
void	log_setprefix(const char *);

enum log_format {
	LOG_FORMAT_TEXT = 0,
	LOG_FORMAT_JSON,
};

void	log_setformat(enum log_format);
int	log_format_parse(const char *, enum log_format *);
/* 1 when lines are JSON objects. */
int	log_json(void);
/* A line of named fields at level l: body is the line's text in the text
 * format, or in json the members of its object (escaped, with
 * log_json_str), written after time, level, process and pid. */
void	log_fields(enum log_level l, const char *body);
/*
 * Lines of the calling thread held from log_hold() to log_release() and
 * written together, whole lines in writes of at most LOG_HOLD_MAX bytes
 * (PIPE_BUF, so that a pipe takes each write at once, never mixed with
 * another process's; a line is never split between two writes): the
 * master's settles log two lines a delivered hook, in one loop, which
 * would be two writes each.  Only
 * for stderr: syslog takes a line a call.  An error line writes what was
 * held, then itself, at once; other threads' lines are never held.
 */
#define LOG_HOLD_MAX	4096
void	log_hold(void);
void	log_release(void);
/* The n bytes at src as the inside of a JSON string (no quotes) into dst
 * (dstsz > 0, always terminated): quote and backslash escaped, each
 * control byte and DEL as \u00NN, each byte that is not well-formed
 * UTF-8 as U+FFFD.  What does not fit is dropped an escape or a
 * character at a time, never half of one.  The length written. */
size_t	log_json_str(char *dst, size_t dstsz, const char *src, size_t n);

struct log_limit {
	const char	*what;		/* the lines' name in the summary */
	unsigned int	 per_sec;
	uint64_t	 sec;		/* the monotonic second counted */
	unsigned int	 n;		/* lines in it */
	uint64_t	 suppressed;	/* dropped since the last summary */
};
#define LOG_LIMIT_INIT(what, per_sec)	{ (what), (per_sec), 0, 0, 0 }

/* 1 if a line at level l may go out now (after the summary of those
 * suppressed before, if any), 0 if it is dropped (counted) or the level
 * is not logged.  Take it before building the line. */
int	log_limit_take(struct log_limit *, enum log_level l);
/* The same at monotonic second sec (the clock's seam, for tests). */
int	log_limit_at(struct log_limit *, enum log_level l, uint64_t sec);

/* src made fit for one log line: each control character (newline and
 * tab too) and DEL as \xNN, so that text from outside cannot start a line
 * of its own.  dst (dstsz > 0) is always terminated; what does not fit is
 * dropped.  Returns dst. */
char	*log_clean(char *dst, size_t dstsz, const char *src);

/* An error that the process lives through (fatal* end it). */
void	log_errorx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	fatal(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	fatalx(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

#endif
