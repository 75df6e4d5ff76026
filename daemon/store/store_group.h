/* SPDX-License-Identifier: ISC */
/*
 * store_group.h: the store as one site of a replication group (Berkeley
 * DB's replication manager); store_group.c.
 *
 * A store opened with store_open_group() is a site of the group its
 * struct store_group describes.  The open returns once the site has a
 * role: master (elected, or the creator of a new group), or client and
 * caught up with a master (STARTUPDONE).  A client's tables are read only:
 * store_batch_begin() refuses on it.  A master's commit that a quorum of
 * the group did not acknowledge (DB_EVENT_REP_PERM_FAILED) fails with
 * store_in_doubt() true: the transaction is in the master's own log and
 * may survive or be rolled back, so no 201 is given for it.
 *
 * Berkeley DB raises the group's events on its own threads; they only set
 * counters here and write a byte to store_group_fd(), which the master's
 * loop watches and then reads store_group_state().
 */
#ifndef ANKUSA_STORE_GROUP_H
#define ANKUSA_STORE_GROUP_H

#include <stddef.h>
#include <stdint.h>

struct store;

#define STORE_GROUP_MAX_PEERS	32

struct store_group {
	const char	*local_host;
	unsigned	 local_port;
	const char	*peer_host[STORE_GROUP_MAX_PEERS];
	unsigned	 peer_port[STORE_GROUP_MAX_PEERS];
	size_t		 npeers;
	unsigned	 priority;		/* 0: never master */
	int		 create;		/* the group's first site */
	int		 ack_all;		/* else quorum */
	unsigned	 ack_timeout_ms;
	unsigned	 heartbeat_ms;		/* 0: off */
	unsigned	 heartbeat_timeout_ms;	/* 0: off */
	int		 as_master;		/* start as master, without an
						 * election: this site was
						 * elected a moment ago */
	unsigned	 beat_ms;		/* lag reports; 0: 1000 */
};

enum store_role {
	STORE_ROLE_SINGLE = 0,	/* not replicated */
	STORE_ROLE_NONE,	/* a site without a role yet */
	STORE_ROLE_CLIENT,
	STORE_ROLE_MASTER,
};

struct store_group_state {
	enum store_role	 role;
	int		 synced;	/* a client caught up (STARTUPDONE) */
	int		 master_eid;	/* -1: none known */
	unsigned long	 role_changes;	/* MASTER / CLIENT / DUPMASTER events */
	unsigned long	 inits;		/* internal initialisations done */
	unsigned long	 elections;	/* won by this site */
	unsigned long	 perm_failed;	/* commits without a quorum's ack */
	unsigned long	 connects;	/* connections made */
	unsigned long	 disconnects;	/* connections broken */
	unsigned long	 sites_added;	/* sites that joined the group */
	int		 panic;		/* the environment failed */
	int		 handles_dead;	/* DB_REP_HANDLE_DEAD met */
};

struct store	*store_open_group(const char *dir, const struct store_group *,
		    char *err, size_t errlen);
const char	*store_role_name(enum store_role);
enum store_role	 store_role(struct store *);
/* The descriptor a byte arrives on at each event, or -1 (not
 * replicated); read it empty with store_group_drain. */
int		 store_group_fd(struct store *);
void		 store_group_drain(struct store *);
void		 store_group_state(struct store *, struct store_group_state *);
/* The master's host:port as the group knows it, "" when none or not
 * replicated.  In the loop only (a Berkeley DB call). */
void		 store_group_master(struct store *, char *, size_t);
/* Sites of the group other than this one: host:port and connected. */
struct store_site {
	char	addr[300];
	int	connected;
	int	is_master;
	int64_t	lag_bytes;	/* on a master: how far behind it the site's
				 * log ends, as the site last said; -1 when
				 * it has not said (store_lag.c) */
	int64_t	said_ms_ago;	/* when it last said; -1: never */
};
/* Up to max sites into sites; the number of them, or -1. */
int		 store_group_sites(struct store *, struct store_site *,
		    size_t max);
/*
 * On the master: remove from the group every site that is neither this
 * one nor one of its peers (struct store_group: replication.local and
 * replication.peers are the membership), with the replication manager's
 * DB_SITE->remove.  removed(addr, err, arg) is called for each such site,
 * err NULL when it is out, else why not.  The number found, 0 on a
 * client (only the master changes the membership), or -1 (the site list
 * could not be read; store_strerror).  In the loop only.
 */
int		 store_group_prune(struct store *,
		    void (*removed)(const char *, const char *, void *),
		    void *);
/* The last commit failed for want of a quorum's acknowledgement: it is in
 * the master's log, in doubt. */
int		 store_in_doubt(struct store *);
/* On a client: bytes of log the master had written, at its last word
 * (every beat), beyond this site's log end; 0 on a master; -1 when the
 * master has not said for a few beats. */
int64_t		 store_group_lag_bytes(struct store *);
/* This site's replication.local, host:port: 0, or -1 (not replicated). */
int		 store_group_local(struct store *, char *, size_t);
/* The timeouts that may change at run time (store_group's ack and
 * heartbeat fields); 0 or -1 with store_strerror. */
int		 store_group_timeouts(struct store *, const struct store_group *);
/* Before store_open_group: a site waiting to join its group (no master
 * yet, or too few sites to admit it) gives up, and the open fails, as
 * soon as stop() returns what asked it to stop ("SIGTERM"); called from
 * the opening thread every few ms. */
void		 store_group_stop_check(const char *(*stop)(void));
/* The end of that open's error ("store DIR: SIGTERM " STORE_GROUP_STOPPED). */
#define STORE_GROUP_STOPPED	"while joining the replication group"

#endif
