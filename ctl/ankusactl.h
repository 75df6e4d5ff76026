/* SPDX-License-Identifier: ISC */
/*
 * ankusactl.h: what ankusactl.c and ankusactl_show.c share: the count of
 * answers printed and the admin API answers' printers.
 */
#ifndef ANKUSA_ANKUSACTL_H
#define ANKUSA_ANKUSACTL_H

#include <stddef.h>

#include <jansson.h>

/* Answers printed so far (the first of a kind prints its header). */
extern int	 nprinted;

/* A time in ms since the epoch as "YYYY-MM-DD HH:MM:SS" UTC into buf, or
 * "-" when v is no integer. */
const char	*when_utc(json_t *v, char *buf, size_t len);
/* o's string member key, or none. */
const char	*str_or(json_t *o, const char *key, const char *none);

/* An answer as it came, and dlq list's (ankusactl.c), which the printers
 * below fall back to. */
void	print_api(json_t *);
void	print_dlq(json_t *);
/* The printers of the admin API's answers (ankusactl_show.c), each of one
 * answer object as the control socket gives it. */
void	print_dlq_api(json_t *);
void	print_hook(json_t *);
void	print_replays(json_t *);
void	print_audit(json_t *);
void	print_sinks(json_t *);
void	print_hooks(json_t *);

#endif
