/* SPDX-License-Identifier: ISC */
/*
 * claimjob.c: the codec of MSG_CLAIM_JOB and MSG_CLAIM_OUTCOME; see
 * claimjob.h.
 *
 * MSG_CLAIM_JOB payload (the frame id is the job id):
 *
 *   the store: str type, str root, str bucket, str region, str endpoint,
 *     str access_key_id, str secret_access_key, str session_token,
 *     u64 pack_max_bytes, u32 retention_days;
 *   str tenant, u64 timeout_ms,
 *   u32 n (1..CLAIM_MAX_BODIES), per body u64 offset, u64 length,
 *   u64 total bytes; the frame always carries a memfd holding exactly
 *   total bytes (the bodies, concatenated in order).
 *
 * Absent store strings travel as "" and come back NULL.  Refused: a store
 * type other than local or s3, a tenant that is not an id, a body past
 * the end of the memfd, a memfd of another size, or none.
 *
 * MSG_CLAIM_OUTCOME payload: u8 result, u64 duration_ms, str detail,
 * str key, u32 n (0, or the job's n), per body str urn.
 *
 * Decoding is strict: counts over their bounds, an unknown sink type or
 * result, a body length that disagrees with its descriptor, a descriptor
 * where none belongs (or none where one must be), leftover bytes: each
 * refuses the frame.  Nothing here is fatal except running out of memory.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job_int.h"
#include "log.h"
#include "msg.h"
#include "proc.h"
#include "utf8.h"

static int	claim_memfd(const struct claim_job *, uint64_t *);


void
claim_store_add(struct msg *m, const struct claim_store *s)
{
	msg_add_str(m, s->type);
	msg_add_str(m, s->root);
	msg_add_str(m, s->bucket);
	msg_add_str(m, s->region);
	msg_add_str(m, s->endpoint);
	msg_add_str(m, s->access_key_id);
	msg_add_str(m, s->secret_access_key);
	msg_add_str(m, s->session_token);
	msg_add_u64(m, s->pack_max_bytes);
	msg_add_u32(m, s->retention_days);
}

int
claim_store_get(struct msg *m, struct claim_store *s)
{
	if (job_get_opt(m, &s->type, 0) == -1 ||
	    job_get_opt(m, &s->root, 0) == -1 ||
	    job_get_opt(m, &s->bucket, 0) == -1 ||
	    job_get_opt(m, &s->region, 0) == -1 ||
	    job_get_opt(m, &s->endpoint, 0) == -1 ||
	    job_get_opt(m, &s->access_key_id, 0) == -1 ||
	    job_get_opt(m, &s->secret_access_key, 0) == -1 ||
	    job_get_opt(m, &s->session_token, 0) == -1 ||
	    msg_get_u64(m, &s->pack_max_bytes) == -1 ||
	    msg_get_u32(m, &s->retention_days) == -1)
		return -1;
	if (s->type == NULL || (strcmp(s->type, "local") != 0 &&
	    strcmp(s->type, "s3") != 0)) {
		m->err = 1;
		return -1;
	}
	return 0;
}

void
claim_store_free(struct claim_store *s)
{
	free(s->type);
	free(s->root);
	free(s->bucket);
	free(s->region);
	free(s->endpoint);
	free(s->access_key_id);
	if (s->secret_access_key != NULL)
		explicit_bzero(s->secret_access_key,
		    strlen(s->secret_access_key));
	free(s->secret_access_key);
	if (s->session_token != NULL)
		explicit_bzero(s->session_token, strlen(s->session_token));
	free(s->session_token);
}

void
claim_store_from_conf(struct claim_store *s, const struct conf *cf)
{
	memset(s, 0, sizeof(*s));
	s->type = cf->claim_check.store_type;
	s->root = cf->claim_check.root;
	s->bucket = cf->claim_check.s3_bucket;
	s->region = cf->claim_check.s3_region;
	s->endpoint = cf->claim_check.s3_endpoint;
	s->access_key_id = cf->claim_check.s3_access_key_id;
	s->secret_access_key = cf->claim_check.s3_secret_access_key;
	s->session_token = cf->claim_check.s3_session_token;
	s->pack_max_bytes = cf->claim_check.pack_max_bytes;
	s->retention_days = cf->claim_check.retention_days;
}

/* The bodies, concatenated, in a new memfd; *totalp gets its size. */
static int
claim_memfd(const struct claim_job *j, uint64_t *totalp)
{
	const unsigned char *p;
	uint64_t total = 0;
	size_t left;
	ssize_t n;
	uint32_t i;
	int fd, save;

	if ((fd = proc_memfd("claims", NULL, 0)) == -1)
		return -1;
	for (i = 0; i < j->nbodies; i++) {
		p = j->bodies[i].data;
		left = j->bodies[i].len;
		while (left > 0) {
			if ((n = write(fd, p, left)) == -1) {
				if (errno == EINTR)
					continue;
				save = errno;
				close(fd);
				errno = save;
				return -1;
			}
			p += n;
			left -= n;
		}
		total += j->bodies[i].len;
	}
	*totalp = total;
	return fd;
}

int
claim_job_encode(struct msg *m, const struct claim_job *j)
{
	const struct claim_store *s = &j->store;
	uint64_t off = 0, total;
	uint32_t i;
	int fd;

	if (j->nbodies == 0 || j->nbodies > CLAIM_MAX_BODIES) {
		errno = EINVAL;
		return -1;
	}
	msg_init(m, MSG_CLAIM_JOB, j->id);
	claim_store_add(m, s);
	msg_add_str(m, j->tenant);
	msg_add_u64(m, j->timeout_ms);
	msg_add_u32(m, j->nbodies);
	for (i = 0; i < j->nbodies; i++) {
		msg_add_u64(m, off);
		msg_add_u64(m, j->bodies[i].len);
		off += j->bodies[i].len;
	}
	if ((fd = claim_memfd(j, &total)) == -1) {
		msg_free(m);
		return -1;
	}
	msg_add_u64(m, total);
	msg_set_fd(m, fd);
	return 0;
}

int
claim_job_decode(struct msg *m, struct claim_job *j)
{
	struct claim_store *s = &j->store;
	struct stat st;
	uint64_t *offs = NULL, *lens = NULL, total;
	uint32_t i, n;

	memset(j, 0, sizeof(*j));
	j->id = m->id;
	if (m->type != MSG_CLAIM_JOB || claim_store_get(m, s) == -1 ||
	    job_get_str(m, &j->tenant) == -1 ||
	    msg_get_u64(m, &j->timeout_ms) == -1 ||
	    msg_get_u32(m, &n) == -1)
		goto bad;
	if (s->type == NULL || (strcmp(s->type, "local") != 0 &&
	    strcmp(s->type, "s3") != 0) || !conf_valid_id(j->tenant) ||
	    n == 0 || n > CLAIM_MAX_BODIES)
		goto bad;
	if ((offs = calloc(n, sizeof(*offs))) == NULL ||
	    (lens = calloc(n, sizeof(*lens))) == NULL ||
	    (j->bodies = calloc(n, sizeof(*j->bodies))) == NULL)
		fatal("claim_job_decode");
	for (i = 0; i < n; i++)
		if (msg_get_u64(m, &offs[i]) == -1 ||
		    msg_get_u64(m, &lens[i]) == -1)
			goto bad;
	if (msg_get_u64(m, &total) == -1 || msg_end(m) == -1)
		goto bad;
	if (m->fd == -1 || total > JOB_MAX_BODY || fstat(m->fd, &st) == -1 ||
	    (uint64_t)st.st_size != total)
		goto bad;
	for (i = 0; i < n; i++)
		if (offs[i] > total || lens[i] > total - offs[i])
			goto bad;
	if ((j->buf = (unsigned char *)proc_read_fd(m->fd, total)) == NULL) {
		if (errno == ENOMEM)
			fatal("claim_job_decode");
		goto bad;
	}
	j->buflen = total;
	for (i = 0; i < n; i++) {
		j->bodies[i].data = j->buf + offs[i];
		j->bodies[i].len = lens[i];
	}
	j->nbodies = n;
	free(offs);
	free(lens);
	return 0;
bad:
	m->err = 1;
	free(offs);
	free(lens);
	claim_job_free(j);
	return -1;
}

void
claim_job_free(struct claim_job *j)
{
	claim_store_free(&j->store);
	free(j->tenant);
	free(j->bodies);
	free(j->buf);
	memset(j, 0, sizeof(*j));
}

void
claim_outcome_encode(struct msg *m, uint64_t id, const struct claim_outcome *o)
{
	uint32_t i;

	msg_init(m, MSG_CLAIM_OUTCOME, id);
	msg_add_u8(m, o->result);
	msg_add_u64(m, o->duration_ms);
	msg_add_str(m, o->detail);
	msg_add_str(m, o->key);
	msg_add_u32(m, o->nurns);
	for (i = 0; i < o->nurns; i++)
		msg_add_str(m, o->urns[i]);
}

int
claim_outcome_decode(struct msg *m, struct claim_outcome *o)
{
	const char *s;
	uint32_t i, n;
	uint8_t r;

	memset(o, 0, sizeof(*o));
	if (m->type != MSG_CLAIM_OUTCOME || m->fd != -1 ||
	    msg_get_u8(m, &r) == -1 ||
	    msg_get_u64(m, &o->duration_ms) == -1 ||
	    msg_get_str(m, &s) == -1)
		goto bad;
	if (r >= JOB_RESULT_MAX || strlen(s) >= sizeof(o->detail))
		goto bad;
	o->result = r;
	(void)utf8_clean(o->detail, sizeof(o->detail), s, strlen(s));
	if (job_get_str(m, &o->key) == -1 || msg_get_u32(m, &n) == -1)
		goto bad;
	if (n > CLAIM_MAX_BODIES || (n > 0 && o->result != JOB_OK))
		goto bad;
	if (n > 0 && (o->urns = calloc(n, sizeof(*o->urns))) == NULL)
		fatal("claim_outcome_decode");
	for (i = 0; i < n; i++) {
		if (job_get_str(m, &o->urns[i]) == -1)
			goto bad;
		o->nurns = i + 1;
	}
	if (msg_end(m) == -1)
		goto bad;
	return 0;
bad:
	m->err = 1;
	claim_outcome_free(o);
	return -1;
}

void
claim_outcome_free(struct claim_outcome *o)
{
	uint32_t i;

	for (i = 0; i < o->nurns; i++)
		free(o->urns[i]);
	free(o->urns);
	free(o->key);
	memset(o, 0, sizeof(*o));
}
