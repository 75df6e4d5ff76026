/* SPDX-License-Identifier: ISC */
/*
 * evtype.c: a hook's event type; see evtype.h.
 */
#include "config.h"

#include <string.h>

#include "conf.h"
#include "evtype.h"
#include "keys.h"
#include "utf8.h"

static const struct keyspec ks_type = { KEY_JSON, "type" };
static const struct keyspec ks_action = { KEY_JSON, "action" };
static const struct keyspec ks_event_type = { KEY_JSON, "event.type" };
static const struct keyspec ks_event = { KEY_JSON, "event" };
static const struct keyspec ks_github = { KEY_HEADER, "x-github-event" };
static const struct keyspec ks_shopify = { KEY_HEADER, "x-shopify-topic" };

static size_t	evtype_put(char *, size_t, const char *, size_t);

/* Append n bytes of s at out + at when the whole stays a valid type:
 * the new length, or 0. */
static size_t
evtype_put(char *out, size_t at, const char *s, size_t n)
{
	if (n == 0 || at + n > EVTYPE_MAX || !utf8_text(s, n))
		return 0;
	memcpy(out + at, s, n);
	out[at + n] = '\0';
	return at + n;
}

size_t
evtype_get(const struct source_conf *src, struct keys_ctx *k, char *out)
{
	const struct keyspec *ks = NULL;
	const char *v;
	size_t len, n;

	out[0] = '\0';
	if (src->event_type.kind != KEY_NONE)
		ks = &src->event_type;
	else
		switch (src->verify.type) {
		case VERIFY_STRIPE:
		case VERIFY_STANDARD_WEBHOOKS:
			ks = &ks_type;
			break;
		case VERIFY_GITHUB:
			ks = &ks_github;
			break;
		case VERIFY_SHOPIFY:
			ks = &ks_shopify;
			break;
		case VERIFY_ZOOM:
			ks = &ks_event;
			break;
		case VERIFY_SLACK:
			if (keys_get(k, &ks_event_type, &v, &len))
				return evtype_put(out, 0, v, len);
			ks = &ks_type;
			break;
		default:
			return 0;
		}
	if (!keys_get(k, ks, &v, &len) || (n = evtype_put(out, 0, v,
	    len)) == 0) {
		out[0] = '\0';
		return 0;
	}
	/* GitHub's event and, when it has one, the body's action. */
	if (src->event_type.kind == KEY_NONE &&
	    src->verify.type == VERIFY_GITHUB &&
	    keys_get(k, &ks_action, &v, &len) && n + 1 + len <= EVTYPE_MAX) {
		out[n] = '.';
		if ((len = evtype_put(out, n + 1, v, len)) != 0)
			return len;
		out[n] = '\0';
	}
	return n;
}
