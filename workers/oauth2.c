/* SPDX-License-Identifier: ISC */
/*
 * oauth2.c: the access tokens of the http sinks with auth type
 * oauth2_client_credentials (RFC 6749 4.4), one deliver process's.
 *
 * A token is fetched from the sink's token_url (a POST of
 * grant_type=client_credentials, with scope and audience when set; the
 * client authenticated by HTTP basic, or in the form with client_auth
 * post) through sink_xfer.c: the egress guard applies, TLS is verified,
 * plain http goes to loopback only (a secret is on board) and never
 * through a proxy.  It is kept per sink (its token_url, client and what
 * it asks for) in a small table of this process, until OAUTH2_MARGIN_S
 * before its expires_in (at most half its life before), and dropped at a
 * 401 from the sink (oauth2_forget).  Each deliver process fetches its
 * own: N processes ask N times.
 *
 * The answer is read strictly: a JSON object with a string access_token
 * of visible ASCII (RFC 6750's b64token and more, no space, no control),
 * a token_type of bearer if any (any case), expires_in a non-negative
 * integer or a string of digits (some servers send one), clamped to a
 * day; absent, OAUTH2_DEFAULT_TTL_S.  A failure names the token endpoint
 * (scheme, host, port and path: never its query, the secret or the
 * answer's bytes).
 */
#include "config.h"

#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "clock.h"
#include "job.h"
#include "log.h"
#include "oauth2.h"
#include "sink.h"

#define OAUTH2_SLOTS		32	/* sinks whose token is kept */
#define OAUTH2_MARGIN_S		30	/* renewed this early */
#define OAUTH2_DEFAULT_TTL_S	300	/* without expires_in */
#define OAUTH2_MAX_TTL_S	86400
#define OAUTH2_ANSWER_MAX	(64 * 1024)

/* One sink's token. */
struct oauth2_slot {
	char		*key;		/* oauth2_key's */
	char		*token;		/* NULL: none */
	uint64_t	 until;		/* mono ms: used up to then */
	uint64_t	 used;		/* mono ms: last use (eviction) */
};

static struct oauth2_slot	slots[OAUTH2_SLOTS];

static char	*oauth2_key(const struct sink_auth *);
static struct oauth2_slot *oauth2_slot(const char *, int);
static void	oauth2_drop(struct oauth2_slot *);
static void	oauth2_where(const char *, char *, size_t);
static char	*oauth2_enc(const char *);
static int	oauth2_fetch(const struct sink_conf *, struct oauth2_slot *,
		    char *, size_t);

int
oauth2_parse(const char *json, size_t len, char **token, uint64_t *ttl_s,
    char *err, size_t errlen)
{
	json_t *root, *v;
	const char *t, *p;
	json_int_t n;
	uint64_t ttl = OAUTH2_DEFAULT_TTL_S;

	*token = NULL;
	if ((root = json_loadb(json, len, JSON_REJECT_DUPLICATES, NULL)) ==
	    NULL || !json_is_object(root)) {
		snprintf(err, errlen, "the answer is not a JSON object");
		json_decref(root);
		return -1;
	}
	v = json_object_get(root, "access_token");
	if ((t = json_string_value(v)) == NULL || *t == '\0' ||
	    strlen(t) != json_string_length(v) || strlen(t) > 16384) {
		snprintf(err, errlen, "no access_token in the answer");
		goto fail;
	}
	for (p = t; *p != '\0'; p++)
		if (*p <= 0x20 || *p >= 0x7f) {
			snprintf(err, errlen, "the access_token holds a byte "
			    "a header cannot carry");
			goto fail;
		}
	if ((v = json_object_get(root, "token_type")) != NULL &&
	    (!json_is_string(v) ||
	    strcasecmp(json_string_value(v), "bearer") != 0)) {
		snprintf(err, errlen, "token_type is not bearer");
		goto fail;
	}
	if ((v = json_object_get(root, "expires_in")) != NULL &&
	    !json_is_null(v)) {
		if (json_is_integer(v) && (n = json_integer_value(v)) >= 0)
			ttl = (uint64_t)n;
		else if (json_is_string(v) && *json_string_value(v) != '\0' &&
		    strspn(json_string_value(v), "0123456789") ==
		    json_string_length(v)) {
			ttl = 0;
			for (p = json_string_value(v); *p != '\0'; p++)
				if (ttl <= OAUTH2_MAX_TTL_S)
					ttl = ttl * 10 + (uint64_t)(*p - '0');
		} else {
			snprintf(err, errlen, "expires_in is not a "
			    "non-negative integer");
			goto fail;
		}
		if (ttl > OAUTH2_MAX_TTL_S)
			ttl = OAUTH2_MAX_TTL_S;
	}
	if ((*token = strdup(t)) == NULL)
		fatal("oauth2_parse");
	*ttl_s = ttl;
	json_decref(root);
	return 0;
fail:
	json_decref(root);
	return -1;
}

uint64_t
oauth2_life_ms(uint64_t ttl_s)
{
	uint64_t margin = ttl_s / 2 < OAUTH2_MARGIN_S ? ttl_s / 2 :
	    OAUTH2_MARGIN_S;

	return (ttl_s - margin) * 1000;
}

/* The fields that make two sinks ask for the same token, NUL-separated
 * in one string (none of them holds a NUL). */
static char *
oauth2_key(const struct sink_auth *a)
{
	char *k;

	if (asprintf(&k, "%s\n%s\n%s\n%s\n%s\n%d", a->token_url,
	    a->client_id, a->client_secret, a->scope != NULL ? a->scope : "",
	    a->audience != NULL ? a->audience : "", a->client_post) == -1)
		fatal("oauth2_key");
	return k;
}

static void
oauth2_drop(struct oauth2_slot *s)
{
	if (s->token != NULL)
		explicit_bzero(s->token, strlen(s->token));
	free(s->token);
	s->token = NULL;
	s->until = 0;
}

/* The slot of key; with make, a free or the least recently used one. */
static struct oauth2_slot *
oauth2_slot(const char *key, int make)
{
	struct oauth2_slot *s, *lru = &slots[0];
	int i;

	for (i = 0; i < OAUTH2_SLOTS; i++) {
		s = &slots[i];
		if (s->key != NULL && strcmp(s->key, key) == 0)
			return s;
		if (s->key == NULL || (lru->key != NULL && s->used < lru->used))
			lru = s;
	}
	if (!make)
		return NULL;
	oauth2_drop(lru);
	if (lru->key != NULL)
		explicit_bzero(lru->key, strlen(lru->key));
	free(lru->key);
	if ((lru->key = strdup(key)) == NULL)
		fatal("oauth2_slot");
	return lru;
}

/* The token endpoint as a log or a detail may name it: no userinfo, no
 * query. */
static void
oauth2_where(const char *url, char *buf, size_t len)
{
	const char *a, *at, *end;

	a = strstr(url, "://");
	a = a != NULL ? a + 3 : url;
	end = a + strcspn(a, "?#");
	at = memchr(a, '@', strcspn(a, "/?#"));
	snprintf(buf, len, "%.*s%.*s", (int)(a - url), url,
	    (int)(end - (at != NULL ? at + 1 : a)), at != NULL ? at + 1 : a);
}

/* application/x-www-form-urlencoded of s; malloc'd. */
static char *
oauth2_enc(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out, *p;

	if ((out = malloc(3 * strlen(s) + 1)) == NULL)
		fatal("oauth2_enc");
	for (p = out; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-._~", c) != NULL)
			*p++ = (char)c;
		else if (c == ' ')
			*p++ = '+';
		else {
			*p++ = '%';
			*p++ = hex[c >> 4];
			*p++ = hex[c & 0xf];
		}
	}
	*p = '\0';
	return out;
}

char *
oauth2_basic(const char *user, const char *pass)
{
	char *cred, *b64, *v;
	size_t n;

	if (asprintf(&cred, "%s:%s", user, pass) == -1)
		fatal("oauth2_basic");
	n = strlen(cred);
	if ((b64 = malloc(4 * ((n + 2) / 3) + 1)) == NULL)
		fatal("oauth2_basic");
	EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)cred,
	    (int)n);
	if (asprintf(&v, "Basic %s", b64) == -1)
		fatal("oauth2_basic");
	explicit_bzero(cred, n);
	explicit_bzero(b64, strlen(b64));
	free(cred);
	free(b64);
	return v;
}

/* A new token for s into slot: 0, or -1 with why in err. */
static int
oauth2_fetch(const struct sink_conf *sk, struct oauth2_slot *slot,
    char *err, size_t errlen)
{
	const struct sink_auth *a = &sk->u.http.auth;
	struct sink_xfer x;
	struct curl_slist *h = NULL;
	char *body, *id, *sec, *sc = NULL, *au = NULL, *b64, *line;
	char why[256], perr[128], *tok;
	uint64_t ttl;
	int rc = -1;

	id = oauth2_enc(a->client_id);
	sec = oauth2_enc(a->client_secret);
	if (a->scope != NULL)
		sc = oauth2_enc(a->scope);
	if (a->audience != NULL)
		au = oauth2_enc(a->audience);
	if (asprintf(&body, "grant_type=client_credentials%s%s%s%s%s%s%s%s",
	    sc != NULL ? "&scope=" : "", sc != NULL ? sc : "",
	    au != NULL ? "&audience=" : "", au != NULL ? au : "",
	    a->client_post ? "&client_id=" : "", a->client_post ? id : "",
	    a->client_post ? "&client_secret=" : "",
	    a->client_post ? sec : "") == -1)
		fatal("oauth2_fetch");
	if (!a->client_post) {
		/* RFC 6749 2.3.1: each form-encoded, then joined. */
		b64 = oauth2_basic(id, sec);
		if (asprintf(&line, "Authorization: %s", b64) == -1)
			fatal("oauth2_fetch");
		if ((h = curl_slist_append(h, line)) == NULL)
			fatalx("oauth2: curl_slist_append");
		explicit_bzero(b64, strlen(b64));
		explicit_bzero(line, strlen(line));
		free(b64);
		free(line);
	}
	if ((h = curl_slist_append(h, "Content-Type: "
	    "application/x-www-form-urlencoded")) == NULL ||
	    (h = curl_slist_append(h, "Accept: application/json")) == NULL ||
	    (h = curl_slist_append(h, "Expect:")) == NULL)
		fatalx("oauth2: curl_slist_append");

	memset(&x, 0, sizeof(x));
	x.url = a->token_url;
	x.headers = h;
	x.body = body;
	x.bodylen = strlen(body);
	x.timeout_ms = sk->timeout_ms;
	x.cap = OAUTH2_ANSWER_MAX;
	x.secret = 1;
	x.proxy_mode = sk->proxy_mode;
	x.proxy = sk->proxy;
	oauth2_where(a->token_url, why, sizeof(why));
	if (sink_xfer_run(&x) == -1)
		snprintf(err, errlen, "oauth2: token endpoint %s: %s", why,
		    x.error);
	else if (x.status != 200)
		snprintf(err, errlen, "oauth2: token endpoint %s: http %ld",
		    why, x.status);
	else if (oauth2_parse(x.answer != NULL ? x.answer : "", x.answerlen,
	    &tok, &ttl, perr, sizeof(perr)) == -1)
		snprintf(err, errlen, "oauth2: token endpoint %s: %s", why,
		    perr);
	else {
		oauth2_drop(slot);
		slot->token = tok;
		slot->until = time_mono_ms() + oauth2_life_ms(ttl);
		rc = 0;
	}
	sink_xfer_done(&x);
	curl_slist_free_all(h);
	explicit_bzero(body, strlen(body));
	explicit_bzero(sec, strlen(sec));
	free(body);
	free(id);
	free(sec);
	free(sc);
	free(au);
	return rc;
}

int
oauth2_token(const struct sink_conf *sk, const char **token, char *err,
    size_t errlen)
{
	struct oauth2_slot *s;
	char *key = oauth2_key(&sk->u.http.auth);
	uint64_t now = time_mono_ms();

	s = oauth2_slot(key, 1);
	explicit_bzero(key, strlen(key));
	free(key);
	s->used = now;
	if (s->token == NULL || now >= s->until) {
		if (oauth2_fetch(sk, s, err, errlen) == -1) {
			oauth2_drop(s);
			return -1;
		}
	}
	*token = s->token;
	return 0;
}

void
oauth2_forget(const struct sink_conf *sk)
{
	struct oauth2_slot *s;
	char *key = oauth2_key(&sk->u.http.auth);

	if ((s = oauth2_slot(key, 0)) != NULL)
		oauth2_drop(s);
	explicit_bzero(key, strlen(key));
	free(key);
}

void
oauth2_cleanup(void)
{
	int i;

	for (i = 0; i < OAUTH2_SLOTS; i++) {
		oauth2_drop(&slots[i]);
		if (slots[i].key != NULL)
			explicit_bzero(slots[i].key, strlen(slots[i].key));
		free(slots[i].key);
		slots[i].key = NULL;
	}
}
