/*
 * log.h: one logging interface for every Ankusa program.
 *
 * In the foreground (-d) lines go to stderr, otherwise to syslog (facility
 * daemon).  log_warn appends strerror(errno); log_warnx does not.  fatal and
 * fatalx log and exit 1: only for what cannot go on.
 */
#ifndef ANKUSA_LOG_H
#define ANKUSA_LOG_H

#include <stdarg.h>

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

void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	fatal(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	fatalx(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

#endif
