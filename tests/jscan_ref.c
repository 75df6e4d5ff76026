/* SPDX-License-Identifier: ISC */
/*
 * jscan_ref.c: workers/jscan.c held against jansson; see jscan_ref.h.
 *
 * The reference is what workers/keys.c did before jscan: json_loadb with
 * no flags (a NULL buffer refused, as keys.c never passed one), then
 * json_object_get along the dot path through objects.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jscan.h"
#include "jscan_ref.h"

static json_t	*ref_path(json_t *, const char *);

static json_t *
ref_path(json_t *v, const char *path)
{
	char seg[256];
	const char *dot;
	size_t n;

	while (v != NULL) {
		if (!json_is_object(v))
			return NULL;
		dot = strchr(path, '.');
		n = dot != NULL ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof(seg))
			return NULL;
		memcpy(seg, path, n);
		seg[n] = '\0';
		v = json_object_get(v, seg);
		if (dot == NULL)
			break;
		path = dot + 1;
	}
	return v;
}

int
jscan_ref_agree(const void *buf, size_t len, const char *path, char *why,
    size_t whylen)
{
	struct jscan_val v;
	json_t *root = NULL, *j = NULL;
	char *dec = NULL;
	size_t declen;
	int ok, ref, agree = 0;

	ok = jscan(buf, len, path, &v);
	if (buf != NULL && len > 0)
		root = json_loadb(buf, len, 0, NULL);
	ref = root != NULL;
	if (ok != ref) {
		snprintf(why, whylen, "jscan %s, jansson %s", ok ? "accepts" :
		    "refuses", ref ? "accepts" : "refuses");
		goto out;
	}
	if (!ok) {
		if (v.kind != JSCAN_NONE) {
			snprintf(why, whylen, "refused with a value");
			goto out;
		}
		agree = 1;
		goto out;
	}
	if (path != NULL)
		j = ref_path(root, path);
	if (j == NULL) {
		agree = v.kind == JSCAN_NONE;
		snprintf(why, whylen, "jansson: no value at %s, jscan kind %d",
		    path != NULL ? path : "(none)", v.kind);
	} else if (json_is_string(j)) {
		if (v.kind != JSCAN_STRING) {
			snprintf(why, whylen, "%s: jansson a string, jscan "
			    "kind %d", path, v.kind);
			goto out;
		}
		if ((dec = malloc(v.rawlen + 1)) == NULL)
			abort();
		declen = jscan_unescape(v.raw, v.rawlen, dec);
		if (v.escaped == (memchr(v.raw, '\\', v.rawlen) == NULL)) {
			snprintf(why, whylen, "%s: escaped flag wrong", path);
			goto out;
		}
		agree = declen == json_string_length(j) &&
		    memcmp(dec, json_string_value(j), declen) == 0;
		snprintf(why, whylen, "%s: strings differ (%zu, %zu bytes)",
		    path, declen, json_string_length(j));
	} else if (json_is_integer(j)) {
		agree = v.kind == JSCAN_INTEGER &&
		    v.integer == json_integer_value(j);
		snprintf(why, whylen, "%s: jansson integer %lld, jscan kind "
		    "%d %lld", path, (long long)json_integer_value(j), v.kind,
		    v.integer);
	} else {
		agree = v.kind == JSCAN_OTHER;
		snprintf(why, whylen, "%s: jansson type %d, jscan kind %d",
		    path, json_typeof(j), v.kind);
	}
out:
	free(dec);
	if (root != NULL)
		json_decref(root);
	return agree;
}
