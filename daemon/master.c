/* SPDX-License-Identifier: ISC */
/*
 * master.c: the master's shared state and the program's actions its
 * modules may ask for; see master.h.
 *
 * Fatal: an action asked for before master_init (fatalx).
 */
#include "config.h"

#include <stddef.h>

#include "log.h"
#include "master.h"

struct master		*env;
static struct master_ops ops;

void
master_init(struct master *m, const struct master_ops *o)
{
	env = m;
	ops = *o;
}

int
master_reload(char *err, size_t errlen)
{
	if (ops.reload == NULL)
		fatalx("master: reload before master_init");
	return ops.reload(err, errlen);
}

void
master_shutdown(const char *why)
{
	if (ops.shutdown == NULL)
		fatalx("master: shutdown before master_init");
	ops.shutdown(why);
}

void
master_store_check(void)
{
	if (ops.store_check == NULL)
		fatalx("master: store check before master_init");
	ops.store_check();
}

void
master_reexec(const char *why)
{
	if (ops.reexec == NULL)
		fatalx("master: reexec before master_init");
	ops.reexec(why);
	fatalx("master: reexec returned");
}
