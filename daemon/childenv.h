/* SPDX-License-Identifier: ISC */
/*
 * childenv.h: the environment the master executes each kind of child with
 * (ankusad(8), ENVIRONMENT): the variables of the master's that the child
 * reads, and nothing else.
 */
#ifndef ANKUSA_CHILDENV_H
#define ANKUSA_CHILDENV_H

#include <stddef.h>

#include "conf.h"

/* The environment of a child of role: NULL-terminated "NAME=value"
 * strings, with the master's values, for its part of the config (text,
 * len: what the child reads on PROC_FD_CONF) and the config in force cf.
 * NULL, with err, if that part does not parse. */
char	**childenv_make(enum conf_role, const char *text, size_t len,
	    const struct conf *cf, char *err, size_t errlen);
void	  childenv_free(char **);
/* 1 if a and b hold the same strings in the same order, else 0. */
int	  childenv_same(char *const *a, char *const *b);

#endif
