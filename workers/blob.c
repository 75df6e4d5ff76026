/* SPDX-License-Identifier: ISC */
/*
 * blob.c: the claim store's verbs, dispatched to the implementation the
 * options name (claim_check.store.type); see blob.h.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blob.h"
#include "job.h"
#include "log.h"

static const struct blob_ops *blob_impls[] = {
	&blob_local_ops,
	&blob_s3_ops,
};

struct blob_store *
blob_open(const struct claim_store *cs, char *err, size_t errlen)
{
	struct blob_store *bs;
	size_t i;

	for (i = 0; i < sizeof(blob_impls) / sizeof(blob_impls[0]); i++)
		if (cs->type != NULL &&
		    strcmp(cs->type, blob_impls[i]->name) == 0)
			break;
	if (i == sizeof(blob_impls) / sizeof(blob_impls[0])) {
		snprintf(err, errlen, "claim store: unknown type %s",
		    cs->type != NULL ? cs->type : "(none)");
		return NULL;
	}
	if ((bs = calloc(1, sizeof(*bs))) == NULL)
		fatal("blob_open");
	bs->ops = blob_impls[i];
	if (bs->ops->open(bs, cs, err, errlen) == -1) {
		free(bs);
		return NULL;
	}
	return bs;
}

void
blob_close(struct blob_store *bs)
{
	if (bs == NULL)
		return;
	bs->ops->close(bs);
	free(bs);
}

/* Segments of [A-Za-z0-9_.=-], none empty, ".", or "..". */
int
blob_valid_key(const char *key)
{
	const char *p, *seg;

	if (key == NULL || *key == '\0' || strlen(key) > 1024)
		return 0;
	for (seg = p = key;; p++) {
		if (*p == '/' || *p == '\0') {
			if (p == seg || (p - seg == 1 && seg[0] == '.') ||
			    (p - seg == 2 && seg[0] == '.' && seg[1] == '.'))
				return 0;
			if (*p == '\0')
				return 1;
			seg = p + 1;
			continue;
		}
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' ||
		    *p == '=' || *p == '-'))
			return 0;
	}
}

enum blob_status
blob_put(struct blob_store *bs, const char *key, const void *data,
    size_t len, char *err, size_t errlen)
{
	if (!blob_valid_key(key)) {
		snprintf(err, errlen, "claim store: invalid key");
		return BLOB_ERROR;
	}
	return bs->ops->put(bs, key, data, len, err, errlen);
}

enum blob_status
blob_get(struct blob_store *bs, const char *key, uint64_t off, size_t len,
    void *buf, char *err, size_t errlen)
{
	if (!blob_valid_key(key)) {
		snprintf(err, errlen, "claim store: invalid key");
		return BLOB_ERROR;
	}
	if (len == 0)
		return BLOB_OK;
	return bs->ops->get(bs, key, off, len, buf, err, errlen);
}

int
blob_expire(struct blob_store *bs, const char *tenant, uint64_t now_ms,
    uint32_t days, char *err, size_t errlen)
{
	if (bs->ops != &blob_local_ops || days == 0)
		return 0;
	return blob_local_expire(bs, tenant, now_ms, days, err, errlen);
}
