/* SPDX-License-Identifier: ISC */
/*
 * master.h: the master's shared state, and what its modules may ask of the
 * program.
 *
 * One struct, one instance (env), filled by ankusad.c.  The subsystems
 * (supervisor, writer, control, the pipeline) read it; only ankusad.c
 * swaps the config.  The modules never call into the program's main file:
 * the actions that belong to it (a reload, an orderly stop, the stop when
 * the store is lost) are handed to master_init as master_ops, and the
 * modules ask for them through master_reload, master_shutdown and
 * master_store_check.
 */
#ifndef ANKUSA_MASTER_H
#define ANKUSA_MASTER_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "tlsmat.h"

struct event_base;
struct conf;
struct store;

#define ANKUSA_VERSION_STRING	PACKAGE_VERSION

struct master {
	struct event_base	*base;
	struct conf		*conf;		/* in force */
	char			*conf_text;	/* the bytes conf was parsed from */
	size_t			 conf_len;
	/* What each kind of child gets of it (conf_role.c), by enum
	 * conf_role. */
	char			*role_text[CONF_ROLE_MAX];
	size_t			 role_len[CONF_ROLE_MAX];
	const char		*conf_path;	/* NULL: the embedded default */
	struct store		*store;
	int			 listen_fd;	/* ingest listener, passed to edges */
	int			 claim_fd;	/* claim gateway listener, or -1 */
	int			 tls_fd;	/* http.tls listener, or -1 */
	struct tlsmat		 tls;		/* http.tls's files, for edges */
	int			 foreground;	/* -d */
	int			 verbose;
	int			 draining;	/* SIGTERM or drain: no new work */
	int			 store_ok;	/* the last commit succeeded */
	char			 libexecdir[4096];
	uint64_t		 started_ms;	/* wall */
};

extern struct master *env;

struct master_ops {
	/* Re-read the config file; 0 on success, -1 (logged, old config
	 * kept) with the reason in err. */
	int	(*reload)(char *err, size_t errlen);
	/* Begin an orderly stop: answer new hooks 503, commit what is
	 * queued, retire the children, checkpoint, exit 0 (1 when the close
	 * of the store fails: store_close). */
	void	(*shutdown)(const char *why);
	/* If the store is lost (store_lost: a sync of the log or a table
	 * failed, or BDB panicked), answer every waiting hook 503 and exit 1
	 * naming the cause: nothing can be acknowledged any more, and the
	 * restart that init makes runs the recovery that keeps what was
	 * synced. */
	void	(*store_check)(void);
	/* Execute ankusad again in place (reexec.h): the children killed,
	 * the store closed, the listeners kept.  Does not return. */
	void	(*reexec)(const char *why);
};

/* The program's state and its actions, once at its start. */
void	master_init(struct master *, const struct master_ops *);
int	master_reload(char *err, size_t errlen);
void	master_shutdown(const char *why);
void	master_store_check(void);
void	master_reexec(const char *why) __attribute__((noreturn));

#endif /* ANKUSA_MASTER_H */
