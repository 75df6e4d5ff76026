/* SPDX-License-Identifier: ISC */
/*
 * repl.h: the master's view of its node's place in a replication group
 * (repl.c), over the store's (store_group.h).
 */
#ifndef ANKUSA_REPL_H
#define ANKUSA_REPL_H

#include <stdint.h>

struct conf;
struct event_base;
struct store;
struct store_group;

/* The conf's replication section as the store takes it; 0 if the section
 * is absent (a single node). */
int		 repl_group_from_conf(const struct conf *, struct store_group *);
/* Before anything is opened: -1 with a reason in err when
 * replication.local is (or resolves to) an address that is not private
 * and replication.insecure_public is not set; else 0. */
int		 repl_check_network(const struct conf *, char *, size_t);
/* After the store is open: watch its group's events.  A change of this
 * node's role, an internal initialisation of its store, or a failure of
 * the environment executes ankusad again (reexec.h). */
void		 repl_init(struct event_base *, struct store *);
/* Takes hooks and dispatches: a single node, or the group's master. */
int		 repl_writable(void);
/* "single", "master" or "client". */
const char	*repl_role(void);
/* The master's host:port (replication.local of that node), "" if none is
 * known or not replicated. */
const char	*repl_master(void);
/* On a client: ms since the master's last beat applied here (it beats
 * every second, so up to 1000 is no lag); 0 on a master or a single
 * node; -1 when no beat is known. */
int64_t		 repl_lag_ms(void);
/* On a client: bytes of log the master had, at its last word (a beat a
 * second), beyond this node's; 0 on a master or a single node; -1 when
 * the master has not said for a few beats. */
int64_t		 repl_lag_bytes(void);
/* f(site, bytes, arg) for each site whose lag in bytes this node knows:
 * on a client itself, on the master each client that reported. */
void		 repl_lag_sites(void (*)(const char *, int64_t, void *),
		    void *);
/* A reload's new timeouts (the rest of the section is restart-only). */
void		 repl_reload(const struct conf *);

struct repl_stats {
	unsigned long	elections;
	unsigned long	perm_failed;
	unsigned long	connects;
	unsigned long	disconnects;
	int		sites;		/* other sites known */
	int		connected;	/* of them, connected */
	unsigned long	unknown_removed;	/* sites removed for not being
						 * in replication.peers */
};
void		 repl_stats(struct repl_stats *);
/* The group for ankusactl status: {"sites": [{"address", "connected",
 * "master", "lag_bytes"}], "lag_ms", "lag_bytes", "elections",
 * "perm_failed", "connects", "disconnects", "inits",
 * "unknown_sites_removed", "unknown_sites": [the last few removed]}, or
 * NULL when not replicated. */
struct json_t	*repl_status_json(void);

#endif
