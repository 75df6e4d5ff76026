/* SPDX-License-Identifier: ISC */
/*
 * conf_json.h: the effective configuration as a JSON object, redacted by
 * an allowlist (see conf_json.c): what GET /v1/config answers.
 */
#ifndef ANKUSA_CONF_JSON_H
#define ANKUSA_CONF_JSON_H

#include <jansson.h>

struct conf;

/* A new object with every key of the table; never NULL (aborts when out
 * of memory, like the loader). */
json_t	*conf_json(const struct conf *);

#endif /* ANKUSA_CONF_JSON_H */
