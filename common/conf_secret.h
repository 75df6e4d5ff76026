/* SPDX-License-Identifier: ISC */
/*
 * conf_secret.h: values of the configuration read from files, ${file:PATH}
 * and ${credential:NAME}; see conf_secret.c.
 */
#ifndef ANKUSA_CONF_SECRET_H
#define ANKUSA_CONF_SECRET_H

#include <stddef.h>

/* The most bytes a secret's file may hold. */
#define CONF_SECRET_MAX		65536

/* 1 when the reference between "${" and "}" (ref, len bytes) names a file:
 * "file:PATH" or "credential:NAME". */
int	conf_secret_is_ref(const char *ref, size_t len);
/* The text that reference stands for: the file's bytes, one trailing
 * newline (LF or CRLF) stripped; malloc'd.  NULL with why in err (the
 * path and the reason: missing, unreadable, too large, a NUL byte, no
 * CREDENTIALS_DIRECTORY). */
char	*conf_secret_read(const char *ref, size_t len, char *err,
	    size_t errlen);
/* value with each ${file:...} and ${credential:...} replaced by what it
 * stands for, "${" in that text written "$${" so that a later
 * interpolation leaves it as it is, every other reference kept: malloc'd,
 * or NULL with why in err.  *changed is 0 when value has no such
 * reference (the copy is value's). */
char	*conf_secret_inline(const char *value, int *changed, char *err,
	    size_t errlen);

#endif
