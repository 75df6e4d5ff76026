/* SPDX-License-Identifier: ISC */
/*
 * quarantine.h: the pen for hooks that failed verification under
 * on_verify_failure: quarantine, as the operator sees it: release and
 * purge (listing is a plain store walk in admin_control.c).
 *
 * Release re-verifies each held hook against the source's secrets as they
 * are now, judging its timestamp at its receive time.  The master never
 * parses provider bytes, so each held hook goes to an edge
 * (MSG_QUARANTINE_CHECK) and the edge's verdict comes back; a hook that
 * passes is committed with its original id and removed from the pen in the
 * same transaction (writer_release).  One release runs at a time.
 */
#ifndef ANKUSA_QUARANTINE_H
#define ANKUSA_QUARANTINE_H

#include <stdint.h>

#include <jansson.h>

struct msg;

/* Start a release; done(arg, result) gets {"released","kept","failed"}
 * (or an error string in result "error").  -1 with err if one runs. */
int	quarantine_release(const char *source, const char *id,
	    void (*done)(void *, json_t *), void *arg, char *err, size_t);
/* The caller of a running release went away: finish without telling. */
void	quarantine_release_detach(void *arg);
/*
 * A release paced by its caller (replay job replay_id, arg): the held
 * hooks of source (NULL: all) and event type (NULL or "": any; the type
 * the edge read at ingest, equal) with a seq after after_seq and below
 * below_seq, received in [since, until] (0: open), each sent to an edge
 * only once granted; the rows of those released carry replay_id.  done
 * gets the result with "walked": true when the walk reached its end
 * (false when it was ended or stopped early).  -1 with err if a release
 * runs.
 */
int	quarantine_release_paced(const unsigned char *replay_id,
	    const char *source, const char *event_type, uint64_t after_seq,
	    uint64_t below_seq, uint64_t since, uint64_t until,
	    void (*done)(void *, json_t *), void *arg, char *err, size_t);
/* n more held hooks may go out; the count granted (0: arg's release is
 * not running). */
uint64_t quarantine_grant(void *arg, uint64_t n);
/* Where arg's release is: every held hook up to seq has its verdict and
 * its commit; released so far, and kept (failed again, or not checked). */
void	quarantine_progress(void *arg, uint64_t *seq, uint64_t *released,
	    uint64_t *kept);
/* End arg's release: nothing more goes out, done follows once the checks
 * out are back. */
void	quarantine_release_end(void *arg);
/* MSG_QUARANTINE_VERDICT from edge serial; -1 if malformed (recycle
 * it).  A route of router.h. */
int	quarantine_verdict(uint32_t serial, struct msg *);
/* Delete held hooks (of source, or the one with id); the count or -1. */
int64_t	quarantine_purge(const char *source, const char *id, char *err,
	    size_t);
/* One step of it, a batch of at most a few hundred held hooks after
 * *cursor (a pen seq, 0 at first, moved on): *n and *bytes (their body
 * bytes) grow by what it deleted.  1 more may follow, 0 done, -1 with err
 * (a store error). */
int	quarantine_purge_step(const char *source, const char *id,
	    uint64_t *cursor, uint64_t *n, uint64_t *bytes, char *err,
	    size_t errlen);

#endif
