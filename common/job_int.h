/* SPDX-License-Identifier: ISC */
/*
 * job_int.h: what the codecs of the deliver messages (job.c, batch.c,
 * claimjob.c) share: the fields every family writes the same way.
 * Nothing else includes it.
 */
#ifndef ANKUSA_JOB_INT_H
#define ANKUSA_JOB_INT_H

#include <stdarg.h>

#include "job.h"

struct msg;

void	job_add_pairs(struct msg *, const struct header_kv *, int);
void	job_add_sink(struct msg *, const struct sink_conf *);
/* The hook's verification and trace context: u8, data TRACE_CTX_LEN. */
void	job_add_trace(struct msg *, uint8_t,
	    const unsigned char[TRACE_CTX_LEN]);
int	job_get_trace(struct msg *, uint8_t *, unsigned char[TRACE_CTX_LEN]);
int	job_get_str(struct msg *, char **);
/* An option: "" comes back NULL; inplace: point into the frame, else a
 * copy. */
int	job_get_opt(struct msg *, char **, int);
int	job_get_pairs(struct msg *, struct header_kv **, int *, int);
int	job_get_sink(struct msg *, struct sink_conf *, int);
void	job_free_pairs(struct header_kv *, int);
void	job_free_sink(struct sink_conf *, int);
/* printf-style into a JOB_DETAIL_MAX buffer, truncated to fit. */
void	job_detail_vset(char *, const char *, va_list);

/* The claim store's options, as a batch and a check-in carry them. */
void	claim_store_add(struct msg *, const struct claim_store *);
int	claim_store_get(struct msg *, struct claim_store *);
void	claim_store_free(struct claim_store *);

#endif
