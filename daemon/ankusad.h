/*
 * ankusad.h: the master's global state.
 *
 * One struct, one instance (env), owned by ankusad.c.  The subsystems
 * (supervisor, writer, control) read it; only ankusad.c swaps the config.
 */
#ifndef ANKUSA_ANKUSAD_H
#define ANKUSA_ANKUSAD_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct conf;
struct store;

#define ANKUSA_VERSION_STRING	PACKAGE_VERSION

struct ankusad {
	struct event_base	*base;
	struct conf		*conf;		/* in force */
	char			*conf_text;	/* the bytes conf was parsed from */
	size_t			 conf_len;
	const char		*conf_path;	/* NULL: the embedded default */
	struct store		*store;
	int			 listen_fd;	/* ingest listener, passed to edges */
	int			 claim_fd;	/* claim gateway listener, or -1 */
	int			 foreground;	/* -d */
	int			 verbose;
	int			 draining;	/* SIGTERM or drain: no new work */
	int			 store_ok;	/* the last commit succeeded */
	char			 libexecdir[4096];
	uint64_t		 started_ms;	/* wall */
};

extern struct ankusad *env;

/* Re-read the config file; 0 on success, -1 (logged, old config kept). */
int	ankusad_reload(char *err, size_t errlen);
/* Begin an orderly stop: answer new hooks 503, commit what is queued,
 * retire the children, checkpoint, exit 0 (1 when the close of the
 * store fails: store_close). */
void	ankusad_shutdown(const char *why);
/* If the store is lost (store_lost: a sync of the log or a table failed,
 * or BDB panicked), answer every waiting hook 503 and exit 1 naming the
 * cause: nothing can be acknowledged any more, and the restart that init
 * makes runs the recovery that keeps what was synced. */
void	ankusad_store_check(void);

#endif
