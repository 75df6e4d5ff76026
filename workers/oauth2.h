/* SPDX-License-Identifier: ISC */
/*
 * oauth2.h: the OAuth2 client credentials tokens of the http sinks, kept
 * per sink in a deliver process (oauth2.c).
 */
#ifndef ANKUSA_OAUTH2_H
#define ANKUSA_OAUTH2_H

#include <stddef.h>
#include <stdint.h>

struct sink_conf;

/* The access token for the sink sk (auth type oauth2_client_credentials):
 * the kept one, or a new one from its token_url.  0 with *token (the
 * process's; valid until the next call), or -1 with why in err ("oauth2:
 * token endpoint <url>: <reason>"). */
int	oauth2_token(const struct sink_conf *sk, const char **token,
	    char *err, size_t errlen);
/* Drop sk's kept token (the sink answered 401): the next call fetches. */
void	oauth2_forget(const struct sink_conf *sk);
/* "Basic <base64 of user:pass>", an Authorization value; malloc'd. */
char	*oauth2_basic(const char *user, const char *pass);
/* Drop every token (the process's end). */
void	oauth2_cleanup(void);

/* The pure parts, for tests. */
/* A token endpoint's answer (len bytes of json): 0 with *token
 * (malloc'd) and *ttl_s (expires_in, clamped; a default when absent), or
 * -1 with why in err. */
int	oauth2_parse(const char *json, size_t len, char **token,
	    uint64_t *ttl_s, char *err, size_t errlen);
/* How long a token of expires_in ttl_s is used: ttl_s less a margin of
 * 30 s, or of half of it when shorter; in ms. */
uint64_t oauth2_life_ms(uint64_t ttl_s);

#endif
