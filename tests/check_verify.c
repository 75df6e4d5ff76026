/* SPDX-License-Identifier: ISC */
/*
 * check_verify.c: unit tests for workers/verify.c, signature verification.
 *
 * The sources are built by conf_parse from the YAML below, so secrets go
 * through the loader's decoding (whsec_ for standard_webhooks) as they do
 * in the daemon.  Expected signatures come from outside this code: the
 * providers' published examples (Standard Webhooks, GitHub, Slack) or
 * `openssl dgst -hmac` (stripe, shopify and the custom descriptors; the
 * command is written next to each constant).
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "httpreq.h"
#include "keys.h"
#include "testutil.h"
#include "verify.h"

#define CASE_TIMEOUT	10
#define MAXHDRS		16

static struct conf	*test_conf(void);
static enum verify_reason run(const struct conf *, const char *,
			    const char *, const char *, size_t, int64_t);

static const char test_yaml[] =
    "node:\n"
    "  data_dir: /tmp/ankusa-check-verify\n"
    "sources:\n"
    "  stripe:\n"
    "    verify: {type: stripe, secret: [whsec_new_secret, "
    "whsec_stripe_secret]}\n"
    "    sinks: [{type: log}]\n"
    "  github:\n"
    "    verify: {type: github, secret: \"It's a Secret to Everybody\"}\n"
    "    sinks: [{type: log}]\n"
    "  github2:\n"
    "    verify: {type: github, secret: [nope, \"It's a Secret to "
    "Everybody\"]}\n"
    "    sinks: [{type: log}]\n"
    "  sw:\n"
    "    verify: {type: standard_webhooks, "
    "secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}\n"
    "    sinks: [{type: log}]\n"
    "  sw2:\n"
    "    verify: {type: standard_webhooks, "
    "secret: [whsec_aGk=, whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw]}\n"
    "    sinks: [{type: log}]\n"
    "  shopify:\n"
    "    verify: {type: shopify, secret: hush}\n"
    "    sinks: [{type: log}]\n"
    "  slack:\n"
    "    verify: {type: slack, secret: 8f742231b10e8888abcd99yyyzzz85a5}\n"
    "    sinks: [{type: log}]\n"
    "  slack10:\n"
    "    verify: {type: slack, secret: 8f742231b10e8888abcd99yyyzzz85a5, "
    "tolerance_seconds: 10}\n"
    "    sinks: [{type: log}]\n"
    "  meta:\n"
    "    verify: {type: meta, secret: metasecret}\n"
    "    sinks: [{type: log}]\n"
    "  zoom:\n"
    "    verify: {type: zoom, secret: zoomsecret}\n"
    "    sinks: [{type: log}]\n"
    "  h512:\n"
    "    verify:\n"
    "      type: hmac\n"
    "      secret: k512\n"
    "      signature_header: X-Sig\n"
    "      signed: \"{ts}:{header:X-Id}:{body}\"\n"
    "      hash: sha512\n"
    "      encoding: base64\n"
    "      sig_prefix: \"sha512=\"\n"
    "      timestamp_header: X-Ts\n"
    "    sinks: [{type: log}]\n"
    "  hsha1:\n"
    "    verify:\n"
    "      type: hmac\n"
    "      secret: k1\n"
    "      signature_header: X-Sig\n"
    "      signed: \"{ts}.{body}\"\n"
    "      hash: sha1\n"
    "      parse: csv_pairs\n"
    "      sig_key: s\n"
    "    sinks: [{type: log}]\n"
    "  hcsv:\n"
    "    verify:\n"
    "      type: hmac\n"
    "      secret: kcsv\n"
    "      signature_header: X-Sig\n"
    "      signed: \"{body}|{ts}\"\n"
    "      parse: csv_pairs\n"
    "      sig_key: sig\n"
    "      timestamp_header: X-Ts\n"
    "      tolerance_seconds: 60\n"
    "    sinks: [{type: log}]\n"
    "  hspace:\n"
    "    verify:\n"
    "      type: hmac\n"
    "      secret: whsec_aGk=\n"
    "      secret_decode: whsec_base64\n"
    "      signature_header: X-Sig\n"
    "      signed: \"{header:X-Id}.{body}\"\n"
    "      encoding: base64\n"
    "      parse: space_versions\n"
    "      version: \"v2,\"\n"
    "    sinks: [{type: log}]\n"
    "  hspace1:\n"
    "    verify:\n"
    "      type: hmac\n"
    "      secret: whsec_aGk=\n"
    "      secret_decode: whsec_base64\n"
    "      signature_header: X-Sig\n"
    "      signed: \"{brace}{body}\"\n"
    "      encoding: base64\n"
    "      parse: space_versions\n"
    "      version: v1\n"
    "    sinks: [{type: log}]\n"
    "  none:\n"
    "    sinks: [{type: log}]\n";

/*
 * Stripe: secret whsec_stripe_secret (the second of the source's two),
 * t=1700000000, body B_STRIPE:
 *   printf '%s' '1700000000.{"id":"evt_1","object":"event"}' |
 *     openssl dgst -sha256 -hmac whsec_stripe_secret
 * and the same under whsec_old_secret, a secret the source does not have.
 */
#define B_STRIPE	"{\"id\":\"evt_1\",\"object\":\"event\"}"
#define S_STRIPE	\
    "02c4f3f3627e0f128daba2059a0e5c2e82ab584191863517b07933e6c5bafb6c"
#define S_STRIPE_UC	\
    "02C4F3F3627E0F128DABA2059A0E5C2E82AB584191863517B07933E6C5BAFB6C"
#define S_STRIPE_OLD	\
    "921476aa6febf6d11353fcee45246000c9edf7b3938ae2d09a2d6ea5cb98d9db"
#define ZERO64	\
    "0000000000000000000000000000000000000000000000000000000000000000"
#define T_STRIPE	1700000000

/* GitHub's documented example ("Validating webhook deliveries"). */
#define B_GITHUB	"Hello, World!"
#define S_GITHUB	\
    "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

/* The Standard Webhooks specification's example. */
#define B_SW		"{\"test\": 2432232314}"
#define SW_ID		"msg_p5jXN8AQM9LWM0D4loKWxJek"
#define T_SW		1614265330
#define S_SW		"g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
#define SW_HDRS(sig)	"webhook-id: " SW_ID "\n" \
			"webhook-timestamp: 1614265330\n" \
			"webhook-signature: " sig

/* Shopify: printf '%s' "$B_SHOPIFY" | openssl dgst -sha256 -hmac hush
 * -binary | base64 */
#define B_SHOPIFY	"{\"id\":820982911946154508}"
#define S_SHOPIFY	"qBvrsZF7RfB1iS6BX6IHqJTp5L911P7intnPeTPsH0I="

/* Slack's documented example ("Verifying requests from Slack"). */
#define B_SLACK		"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&" \
    "team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&" \
    "user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&" \
    "text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2F" \
    "T1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=" \
    "398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
#define S_SLACK		\
    "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
#define T_SLACK		1531420618
#define SLACK_HDRS(sig)	"X-Slack-Request-Timestamp: 1531420618\n" \
			"X-Slack-Signature: " sig

/* Meta: printf '%s' "$B_META" | openssl dgst -sha256 -hmac metasecret */
#define B_META		"{\"object\":\"page\",\"entry\":[]}"
#define S_META		\
    "8fd69e570837b4083f73aec8f5a9de7f092e0c576c7cf9baa08a086686d1629d"

/* Zoom: printf '%s' "v0:1700000000:$B_ZOOM" |
 *   openssl dgst -sha256 -hmac zoomsecret */
#define B_ZOOM		"{\"event\":\"meeting.started\",\"payload\":{}}"
#define S_ZOOM		\
    "3c38c4956775005ffab9b647bb113df93a1830e2a64719e0f64c22528f2f4afa"
#define ZOOM_HDRS(sig)	"x-zm-request-timestamp: 1700000000\n" \
			"x-zm-signature: " sig

/* Custom descriptors, all over the body "hello":
 * h512:    printf '%s' '1700000000:msg-7:hello' |
 *            openssl dgst -sha512 -hmac k512 -binary | base64
 * hsha1:   printf '%s' '1700000000.hello' | openssl dgst -sha1 -hmac k1
 * hcsv:    printf '%s' 'hello|1700000000' | openssl dgst -sha256 -hmac kcsv
 * hspace:  printf '%s' 'msg-9.hello' | openssl dgst -sha256 -hmac hi
 *            -binary | base64
 * hspace1: printf '%s' '{brace}hello' | openssl dgst -sha256 -hmac hi
 *            -binary | base64 (an unknown placeholder is literal text) */
#define S_512	"uMLF2muoFtaw4j8otbZLmdo2ZstBeISDSGib7n1kZjkLc17TyfZ6G9wdjk2d" \
		"fAqa1AfGbpQg0FuUKCZn+A4apA=="
#define S_SHA1	"dde364e16ad4f35c34cf2315f22aad15ffa11085"
#define S_CSV	\
    "ab4634bcea478af455c31bcbb06a3fead6b6eba2f2fcea2a2ad4a62ef013bba6"
#define S_SPACE	"GSnt5PTVzxufVlk7d68Tp7COLM7wHXJfHa7B+Qs3HyY="
#define S_SPACE1 "+mgdeSLa/fNsTkAKm/NSPqEDkKJcGA2LfCQhQ5Qc7KM="

#define OK	VERIFY_OK
#define MISSING	VERIFY_MISSING_SIGNATURE
#define BAD	VERIFY_MALFORMED_SIGNATURE
#define NOPE	VERIFY_NO_MATCH
#define LATE	VERIFY_TIMESTAMP_OUT_OF_TOLERANCE

struct vcase {
	const char		*source;
	const char		*headers;	/* "Name: value" lines */
	const char		*body;
	int64_t			 now;
	enum verify_reason	 want;
};

#define STRIPE_T	"t=1700000000,"

static const struct vcase vcases[] = {
	/* stripe: several v1, a v0, the second secret matching. */
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=" S_STRIPE_OLD ",v1="
	    S_STRIPE ",v0=" ZERO64, B_STRIPE, T_STRIPE, OK },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=" S_STRIPE, B_STRIPE,
	    T_STRIPE, OK },
	{ "stripe", "stripe-signature: v1=" S_STRIPE_UC ",t=1700000000",
	    B_STRIPE, T_STRIPE, OK },
	{ "stripe", "Stripe-Signature: t=1700000000, v1=" S_STRIPE " ",
	    B_STRIPE, T_STRIPE, OK },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=" S_STRIPE_OLD,
	    B_STRIPE, T_STRIPE, NOPE },
	/* Tolerance 300: both edges, both directions. */
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=" S_STRIPE, B_STRIPE,
	    T_STRIPE + 300, OK },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=" S_STRIPE, B_STRIPE,
	    T_STRIPE + 301, LATE },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=" S_STRIPE, B_STRIPE,
	    T_STRIPE - 300, OK },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=" S_STRIPE, B_STRIPE,
	    T_STRIPE - 301, LATE },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=" S_STRIPE, B_STRIPE,
	    INT64_MIN, LATE },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=" S_STRIPE, B_STRIPE,
	    INT64_MAX, LATE },
	/* An old forged request: the timestamp is judged first. */
	{ "stripe", "Stripe-Signature: t=1,v1=" ZERO64, B_STRIPE, T_STRIPE,
	    LATE },
	{ "stripe", "Stripe-Signature: t=99999999999999999999999999,v1="
	    S_STRIPE, B_STRIPE, T_STRIPE, LATE },
	{ "stripe", "Stripe-Signature: t=0001700000000,v1=" S_STRIPE,
	    B_STRIPE, T_STRIPE, NOPE },
	/* Failures. */
	{ "stripe", "X-Other: 1", B_STRIPE, T_STRIPE, MISSING },
	{ "stripe", "", B_STRIPE, T_STRIPE, MISSING },
	{ "stripe", "Stripe-Signature:", B_STRIPE, T_STRIPE, BAD },
	{ "stripe", "Stripe-Signature: v1=" S_STRIPE, B_STRIPE, T_STRIPE,
	    BAD },
	{ "stripe", "Stripe-Signature: t=1700000000", B_STRIPE, T_STRIPE,
	    BAD },
	{ "stripe", "Stripe-Signature: t=1700000000,v0=" S_STRIPE, B_STRIPE,
	    T_STRIPE, BAD },
	{ "stripe", "Stripe-Signature: t=1700000000,V1=" S_STRIPE, B_STRIPE,
	    T_STRIPE, BAD },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=zz"
	    "c4f3f3627e0f128daba2059a0e5c2e82ab584191863517b07933e6c5bafb6c",
	    B_STRIPE, T_STRIPE, BAD },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1="
	    "2c4f3f3627e0f128daba2059a0e5c2e82ab584191863517b07933e6c5bafb6c",
	    B_STRIPE, T_STRIPE, BAD },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=", B_STRIPE, T_STRIPE,
	    BAD },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=" S_STRIPE ",v1=xyz",
	    B_STRIPE, T_STRIPE, BAD },
	{ "stripe", "Stripe-Signature: t=1700000000;v1=" S_STRIPE, B_STRIPE,
	    T_STRIPE, BAD },
	{ "stripe", "Stripe-Signature: t=1700000000,,v1=" S_STRIPE, B_STRIPE,
	    T_STRIPE, BAD },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=" S_STRIPE ",",
	    B_STRIPE, T_STRIPE, BAD },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1" S_STRIPE, B_STRIPE,
	    T_STRIPE, BAD },
	{ "stripe", "Stripe-Signature: " STRIPE_T "t=1700000000,v1="
	    S_STRIPE, B_STRIPE, T_STRIPE, BAD },
	{ "stripe", "Stripe-Signature: t=abc,v1=" S_STRIPE, B_STRIPE,
	    T_STRIPE, BAD },
	{ "stripe", "Stripe-Signature: t=-1700000000,v1=" S_STRIPE, B_STRIPE,
	    T_STRIPE, BAD },
	{ "stripe", "Stripe-Signature: t=,v1=" S_STRIPE, B_STRIPE, T_STRIPE,
	    BAD },
	{ "stripe", "Stripe-Signature: t=17e8,v1=" S_STRIPE, B_STRIPE,
	    T_STRIPE, BAD },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=" ZERO64, B_STRIPE,
	    T_STRIPE, NOPE },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=abcd", B_STRIPE,
	    T_STRIPE, NOPE },
	{ "stripe", "Stripe-Signature: " STRIPE_T "v1=" S_STRIPE,
	    "{\"id\":\"evt_2\",\"object\":\"event\"}", T_STRIPE, NOPE },
	{ "stripe", "Stripe-Signature: t=1700000001,v1=" S_STRIPE, B_STRIPE,
	    T_STRIPE, NOPE },

	/* github */
	{ "github", "X-Hub-Signature-256: sha256=" S_GITHUB, B_GITHUB, 0, OK },
	{ "github", "x-hub-signature-256: sha256=" S_GITHUB, B_GITHUB,
	    T_STRIPE, OK },
	{ "github", "X-HUB-SIGNATURE-256: sha256="
	    "757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17",
	    B_GITHUB, 0, OK },
	{ "github2", "X-Hub-Signature-256: sha256=" S_GITHUB, B_GITHUB, 0,
	    OK },
	{ "github", "X-Hub-Signature: sha1=0123456789", B_GITHUB, 0,
	    MISSING },
	{ "github", "X-Hub-Signature-256: sha1=" S_GITHUB, B_GITHUB, 0, BAD },
	{ "github", "X-Hub-Signature-256: SHA256=" S_GITHUB, B_GITHUB, 0,
	    BAD },
	{ "github", "X-Hub-Signature-256: " S_GITHUB, B_GITHUB, 0, BAD },
	{ "github", "X-Hub-Signature-256: sha256=", B_GITHUB, 0, BAD },
	{ "github", "X-Hub-Signature-256: sha256= " S_GITHUB, B_GITHUB, 0,
	    BAD },
	{ "github", "X-Hub-Signature-256: sha256=" S_GITHUB "0", B_GITHUB, 0,
	    BAD },
	{ "github", "X-Hub-Signature-256: sha256=" S_GITHUB "00", B_GITHUB, 0,
	    NOPE },
	{ "github", "X-Hub-Signature-256: sha256=" S_GITHUB, "Hello, World?",
	    0, NOPE },
	{ "github", "X-Hub-Signature-256: sha256=" S_GITHUB, "", 0, NOPE },

	/* standard_webhooks */
	{ "sw", SW_HDRS("v1," S_SW), B_SW, T_SW, OK },
	{ "sw", SW_HDRS("v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= v1,"
	    S_SW), B_SW, T_SW, OK },
	{ "sw", SW_HDRS("v1a,abc  v1," S_SW), B_SW, T_SW, OK },
	{ "sw", SW_HDRS("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE"),
	    B_SW, T_SW, OK },
	{ "sw2", SW_HDRS("v1," S_SW), B_SW, T_SW, OK },
	{ "sw", SW_HDRS("v1," S_SW), B_SW, T_SW + 300, OK },
	{ "sw", SW_HDRS("v1," S_SW), B_SW, T_SW + 301, LATE },
	{ "sw", SW_HDRS("v1," S_SW), B_SW, T_SW - 300, OK },
	{ "sw", SW_HDRS("v1," S_SW), B_SW, T_SW - 301, LATE },
	{ "sw", "webhook-id: " SW_ID "\nwebhook-timestamp: 1614265330",
	    B_SW, T_SW, MISSING },
	{ "sw", "webhook-timestamp: 1614265330\nwebhook-signature: v1," S_SW,
	    B_SW, T_SW, BAD },
	{ "sw", "webhook-id: " SW_ID "\nwebhook-signature: v1," S_SW,
	    B_SW, T_SW, BAD },
	{ "sw", "webhook-id: " SW_ID "\nwebhook-timestamp: 1614265330.0\n"
	    "webhook-signature: v1," S_SW, B_SW, T_SW, BAD },
	{ "sw", "webhook-id: " SW_ID "\nwebhook-timestamp:\n"
	    "webhook-signature: v1," S_SW, B_SW, T_SW, BAD },
	{ "sw", SW_HDRS("v2," S_SW), B_SW, T_SW, BAD },
	{ "sw", SW_HDRS("v1 " S_SW), B_SW, T_SW, BAD },
	{ "sw", SW_HDRS("v1=" S_SW), B_SW, T_SW, BAD },
	{ "sw", SW_HDRS("v1," S_SW " garbage"), B_SW, T_SW, BAD },
	{ "sw", SW_HDRS("v1,g0hM9SsE-OTPJTGt_tmIKtSyZlE3uFJELVlNIOLJ1OE="),
	    B_SW, T_SW, BAD },
	{ "sw", SW_HDRS("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE==="),
	    B_SW, T_SW, BAD },
	{ "sw", SW_HDRS("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uF=JELVlNIOLJ1OE="),
	    B_SW, T_SW, BAD },
	{ "sw", SW_HDRS("v1,"), B_SW, T_SW, BAD },
	{ "sw", SW_HDRS("v1,A"), B_SW, T_SW, BAD },
	{ "sw", "webhook-id: msg_other\nwebhook-timestamp: 1614265330\n"
	    "webhook-signature: v1," S_SW, B_SW, T_SW, NOPE },
	{ "sw", "webhook-id: " SW_ID "\nwebhook-timestamp: 1614265331\n"
	    "webhook-signature: v1," S_SW, B_SW, T_SW, NOPE },
	{ "sw", SW_HDRS("v1,AAAA"), B_SW, T_SW, NOPE },

	/* shopify */
	{ "shopify", "X-Shopify-Hmac-SHA256: " S_SHOPIFY, B_SHOPIFY, 0, OK },
	{ "shopify", "x-shopify-hmac-sha256: " S_SHOPIFY, B_SHOPIFY, 0, OK },
	{ "shopify", "X-Shopify-Topic: orders/create", B_SHOPIFY, 0,
	    MISSING },
	{ "shopify", "X-Shopify-Hmac-SHA256: "
	    "qBvrsZF7RfB1iS6BX6IHqJTp5L911P7intnPeTPsH0I*", B_SHOPIFY, 0,
	    BAD },
	{ "shopify", "X-Shopify-Hmac-SHA256: "
	    "qBvrsZF7RfB1iS6BX6I HqJTp5L911P7intnPeTPsH0I=", B_SHOPIFY, 0,
	    BAD },
	{ "shopify", "X-Shopify-Hmac-SHA256: sha256=" S_SHOPIFY, B_SHOPIFY, 0,
	    BAD },
	{ "shopify", "X-Shopify-Hmac-SHA256: " S_STRIPE, B_SHOPIFY, 0, NOPE },
	{ "shopify", "X-Shopify-Hmac-SHA256: " S_SHOPIFY, "{}", 0, NOPE },

	/* slack */
	{ "slack", SLACK_HDRS(S_SLACK), B_SLACK, T_SLACK, OK },
	{ "slack10", SLACK_HDRS(S_SLACK), B_SLACK, T_SLACK + 10, OK },
	{ "slack10", SLACK_HDRS(S_SLACK), B_SLACK, T_SLACK + 11, LATE },
	{ "slack10", SLACK_HDRS(S_SLACK), B_SLACK, T_SLACK - 10, OK },
	{ "slack10", SLACK_HDRS(S_SLACK), B_SLACK, T_SLACK - 11, LATE },
	{ "slack", "X-Slack-Request-Timestamp: 1531420618", B_SLACK, T_SLACK,
	    MISSING },
	{ "slack", "X-Slack-Signature: " S_SLACK, B_SLACK, T_SLACK, BAD },
	{ "slack", SLACK_HDRS("v1=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10"
	    "bd27519666489c69b503"), B_SLACK, T_SLACK, BAD },
	{ "slack", SLACK_HDRS("a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10"
	    "bd27519666489c69b503"), B_SLACK, T_SLACK, BAD },
	{ "slack", "X-Slack-Request-Timestamp: 1531420618 \n"
	    "X-Slack-Signature: " S_SLACK, B_SLACK, T_SLACK, BAD },
	{ "slack", "X-Slack-Request-Timestamp: 1531420619\n"
	    "X-Slack-Signature: " S_SLACK, B_SLACK, T_SLACK, NOPE },
	{ "slack", SLACK_HDRS(S_SLACK), B_SLACK "&x=1", T_SLACK, NOPE },

	/* meta */
	{ "meta", "X-Hub-Signature-256: sha256=" S_META, B_META, 0, OK },
	{ "meta", "X-Hub-Signature-256: " S_META, B_META, 0, BAD },
	{ "meta", "X-Hub-Signature: sha1=" S_META, B_META, 0, MISSING },
	{ "meta", "X-Hub-Signature-256: sha256=" S_META, B_META " ", 0,
	    NOPE },

	/* zoom */
	{ "zoom", ZOOM_HDRS("v0=" S_ZOOM), B_ZOOM, T_STRIPE, OK },
	{ "zoom", ZOOM_HDRS("v0=" S_ZOOM), B_ZOOM, T_STRIPE + 301, LATE },
	{ "zoom", "x-zm-signature: v0=" S_ZOOM, B_ZOOM, T_STRIPE, BAD },
	{ "zoom", ZOOM_HDRS(S_ZOOM), B_ZOOM, T_STRIPE, BAD },
	{ "zoom", "x-zm-request-timestamp: 1700000000", B_ZOOM, T_STRIPE,
	    MISSING },
	{ "zoom", "x-zm-request-timestamp: 1700000001\n"
	    "x-zm-signature: v0=" S_ZOOM, B_ZOOM, T_STRIPE, NOPE },

	/* hmac: whole, sha512, base64, sig_prefix, {header:NAME}, X-Ts. */
	{ "h512", "X-Sig: sha512=" S_512 "\nX-Ts: 1700000000\nX-Id: msg-7",
	    "hello", T_STRIPE, OK },
	{ "h512", "x-id: msg-7\nx-ts: 1700000000\nx-sig: sha512=" S_512,
	    "hello", T_STRIPE + 300, OK },
	{ "h512", "X-Sig: sha512=" S_512 "\nX-Ts: 1700000000\nX-Id: msg-7",
	    "hello", T_STRIPE + 301, LATE },
	{ "h512", "X-Sig: sha512=" S_512 "\nX-Ts: 1700000000", "hello",
	    T_STRIPE, BAD },
	{ "h512", "X-Sig: sha512=" S_512 "\nX-Id: msg-7", "hello", T_STRIPE,
	    BAD },
	{ "h512", "X-Sig: " S_512 "\nX-Ts: 1700000000\nX-Id: msg-7",
	    "hello", T_STRIPE, BAD },
	{ "h512", "X-Sig: sha512=" S_512 "\nX-Ts: 1700000000\nX-Id: msg-8",
	    "hello", T_STRIPE, NOPE },
	{ "h512", "X-Sig: sha512=" S_SPACE "\nX-Ts: 1700000000\nX-Id: msg-7",
	    "hello", T_STRIPE, NOPE },
	/* hmac: csv_pairs, sha1, hex, "t" in the header. */
	{ "hsha1", "X-Sig: t=1700000000,s=" S_SHA1, "hello", T_STRIPE, OK },
	{ "hsha1", "X-Sig: s=" ZERO64 ",s=" S_SHA1 ",t=1700000000", "hello",
	    T_STRIPE, OK },
	{ "hsha1", "X-Sig: s=" S_SHA1, "hello", T_STRIPE, BAD },
	{ "hsha1", "X-Sig: t=1700000000,v1=" S_SHA1, "hello", T_STRIPE, BAD },
	{ "hsha1", "X-Sig: t=1700000000,s=" S_SHA1, "hello", T_STRIPE - 301,
	    LATE },
	{ "hsha1", "X-Sig: t=1700000000,s=" S_STRIPE, "hello", T_STRIPE,
	    NOPE },
	/* hmac: csv_pairs, sha256, hex, timestamp_header, tolerance 60. */
	{ "hcsv", "X-Sig: sig=" S_CSV ",t=5\nX-Ts: 1700000000", "hello",
	    T_STRIPE + 60, OK },
	{ "hcsv", "X-Sig: sig=" S_CSV "\nX-Ts: 1700000000", "hello",
	    T_STRIPE + 61, LATE },
	{ "hcsv", "X-Sig: sig=" S_CSV, "hello", T_STRIPE, BAD },
	{ "hcsv", "X-Sig: sig=" S_CSV "\nX-Ts: 1700000000", "hellO",
	    T_STRIPE, NOPE },
	/* hmac: space_versions "v2,", sha256, base64, whsec secret. */
	{ "hspace", "X-Sig: v2," S_SPACE "\nX-Id: msg-9", "hello", 0, OK },
	{ "hspace", "X-Sig: v1," S_SPACE "\nX-Id: msg-9", "hello", 0, BAD },
	{ "hspace", "X-Sig: v2," S_SPACE, "hello", 0, BAD },
	{ "hspace", "X-Sig: v2," S_SPACE "\nX-Id: msg-0", "hello", 0, NOPE },
	/* hmac: space_versions "v1", an unknown placeholder kept as text. */
	{ "hspace1", "X-Sig: v1," S_SPACE1, "hello", 0, OK },
	{ "hspace1", "X-Sig: v1," S_SPACE, "hello", 0, NOPE },

	/* none */
	{ "none", "", "anything", 0, OK },
	{ "none", "X-Hub-Signature-256: sha256=00", "", 0, OK },
};

static struct conf *
test_conf(void)
{
	return test_conf_parse(test_yaml, sizeof(test_yaml) - 1);
}

static enum verify_reason
run(const struct conf *cf, const char *source, const char *headers,
    const char *body, size_t len, int64_t now)
{
	const struct source_conf *src = conf_source(cf, source);
	struct header_kv kv[MAXHDRS];
	struct keys_hdrs h;
	enum verify_reason r;
	char *buf;
	int n;

	ck_assert_msg(src != NULL, "no source %s", source);
	n = test_headers(headers, kv, MAXHDRS, &buf);
	keys_hdrs_pairs(&h, kv, n);
	r = verify_request(&src->verify, &h, body, len, now);
	free(buf);
	return r;
}

START_TEST(test_vectors)
{
	const struct vcase *tc = &vcases[_i];
	struct conf *cf = test_conf();
	enum verify_reason r;

	r = run(cf, tc->source, tc->headers, tc->body, strlen(tc->body),
	    tc->now);
	ck_assert_msg(r == tc->want, "case %d (%s, %s): got %s, want %s", _i,
	    tc->source, tc->headers, verify_reason_name(r),
	    verify_reason_name(tc->want));
	conf_free(cf);
}
END_TEST

/*
 * The signature header's size cap, at its edge: a valid Stripe header
 * padded with an ignored item to exactly VERIFY_HEADER_MAX bytes passes,
 * one byte more is malformed; so is a megabyte of v1 items, at once.
 */
struct size_case {
	size_t			 size;
	enum verify_reason	 want;
};

static const struct size_case size_cases[] = {
	{ VERIFY_HEADER_MAX, OK },
	{ VERIFY_HEADER_MAX + 1, BAD },
	{ 1024 * 1024, BAD },
};

START_TEST(test_oversized)
{
	const struct size_case *tc = &size_cases[_i];
	static const char head[] = "Stripe-Signature: ";
	static const char sig[] = STRIPE_T "v1=" S_STRIPE ",x=";
	struct conf *cf = test_conf();
	size_t hl = sizeof(head) - 1, sl = sizeof(sig) - 1;
	char *hdr;

	ck_assert_ptr_nonnull(hdr = malloc(hl + tc->size + 1));
	memcpy(hdr, head, hl);
	memcpy(hdr + hl, sig, sl);
	memset(hdr + hl + sl, 'a', tc->size - sl);
	hdr[hl + tc->size] = '\0';
	ck_assert_int_eq(run(cf, "stripe", hdr, B_STRIPE, strlen(B_STRIPE),
	    T_STRIPE), tc->want);
	free(hdr);
	conf_free(cf);
}
END_TEST

/* Many candidates within the cap: the match is found after them all. */
START_TEST(test_many_signatures)
{
	struct conf *cf = test_conf();
	char hdr[VERIFY_HEADER_MAX + 64];
	size_t len;

	len = snprintf(hdr, sizeof(hdr), "Stripe-Signature: " STRIPE_T);
	while (len + 68 + 64 + 3 < VERIFY_HEADER_MAX)
		len += snprintf(hdr + len, sizeof(hdr) - len, "v1=" ZERO64 ",");
	len += snprintf(hdr + len, sizeof(hdr) - len, "v1=" S_STRIPE);
	ck_assert_int_eq(run(cf, "stripe", hdr, B_STRIPE, strlen(B_STRIPE),
	    T_STRIPE), OK);
	conf_free(cf);
}
END_TEST

/* The body is bytes: a NUL inside is signed like any other byte. */
START_TEST(test_binary_body)
{
	struct conf *cf = test_conf();

	/* Hello\0World! is not Hello, World!: no match, and no crash. */
	ck_assert_int_eq(run(cf, "github", "X-Hub-Signature-256: sha256="
	    S_GITHUB, "Hello\0World!", 12, 0), NOPE);
	ck_assert_int_eq(run(cf, "github", "X-Hub-Signature-256: sha256="
	    S_GITHUB, B_GITHUB, strlen(B_GITHUB), 0), OK);
	conf_free(cf);
}
END_TEST

/* Headers read from a parsed request, as the edge does. */
START_TEST(test_httpreq_headers)
{
	static const char req[] = "POST /webhooks/sw HTTP/1.1\r\n"
	    "Host: x\r\nWebhook-Id: " SW_ID "\r\n"
	    "Webhook-Timestamp:   1614265330  \r\n"
	    "Webhook-Signature: v1,AAAA v1," S_SW "\r\n\r\n";
	struct conf *cf = test_conf();
	struct httpreq r;
	struct keys_hdrs h;
	size_t used;

	httpreq_init(&r);
	ck_assert_int_eq(httpreq_feed(&r, req, sizeof(req) - 1, &used),
	    HTTPREQ_DONE);
	keys_hdrs_request(&h, &r);
	ck_assert_int_eq(verify_request(&conf_source(cf, "sw")->verify, &h,
	    B_SW, strlen(B_SW), T_SW), OK);
	ck_assert_int_eq(verify_request(&conf_source(cf, "sw")->verify, &h,
	    B_SW, strlen(B_SW), T_SW + 301), LATE);
	httpreq_free(&r);
	conf_free(cf);
}
END_TEST

/* A secret the loader would refuse fails closed at run time. */
struct secret_case {
	int		 nsecrets;
	size_t		 len1;		/* length of the second secret */
	int		 null1;		/* its data is NULL */
};

static const struct secret_case secret_cases[] = {
	{ 0, 0, 0 },
	{ 2, 0, 0 },
	{ 2, 4, 1 },
	{ CONF_MAX_SECRETS + 1, 4, 0 },
};

START_TEST(test_bad_secret)
{
	const struct secret_case *tc = &secret_cases[_i];
	struct verify_conf v;
	struct header_kv kv[1] = { { "X-Hub-Signature-256",
	    "sha256=" S_GITHUB } };
	struct keys_hdrs h;

	memset(&v, 0, sizeof(v));
	v.type = VERIFY_GITHUB;
	v.nsecrets = tc->nsecrets;
	v.secrets[0].data = (unsigned char *)"It's a Secret to Everybody";
	v.secrets[0].len = 26;
	v.secrets[1].data = tc->null1 ? NULL : (unsigned char *)"abcd";
	v.secrets[1].len = tc->len1;
	keys_hdrs_pairs(&h, kv, 1);
	ck_assert_int_eq(verify_request(&v, &h, B_GITHUB, strlen(B_GITHUB),
	    0), VERIFY_BAD_SECRET);
	/* The same, well made, passes: the secret was the only fault. */
	v.nsecrets = 1;
	ck_assert_int_eq(verify_request(&v, &h, B_GITHUB, strlen(B_GITHUB),
	    0), OK);
}
END_TEST

/* A hand-built hmac descriptor the loader would refuse. */
START_TEST(test_bad_descriptor)
{
	struct verify_conf v;
	struct header_kv kv[1] = { { "X-Sig", "00" } };
	struct keys_hdrs h;

	memset(&v, 0, sizeof(v));
	v.type = VERIFY_HMAC;
	v.nsecrets = 1;
	v.secrets[0].data = (unsigned char *)"k";
	v.secrets[0].len = 1;
	keys_hdrs_pairs(&h, kv, 1);
	/* No signature_header, no template. */
	ck_assert_int_eq(verify_request(&v, &h, "", 0, 0), VERIFY_BAD_SECRET);
	v.signature_header = "X-Sig";
	v.signed_template = "{body}";
	/* Defaults: sha256, hex, whole; "00" is well-formed but short. */
	ck_assert_int_eq(verify_request(&v, &h, "", 0, 0), NOPE);
	v.hash = "md5";
	ck_assert_int_eq(verify_request(&v, &h, "", 0, 0), VERIFY_BAD_SECRET);
	v.hash = "sha1";
	v.encoding = "base32";
	ck_assert_int_eq(verify_request(&v, &h, "", 0, 0), VERIFY_BAD_SECRET);
	v.encoding = "hex";
	v.parse = "csv_pairs";
	ck_assert_int_eq(verify_request(&v, &h, "", 0, 0), VERIFY_BAD_SECRET);
	v.parse = "space_versions";
	v.version = ",";
	ck_assert_int_eq(verify_request(&v, &h, "", 0, 0), VERIFY_BAD_SECRET);
	v.parse = "other";
	ck_assert_int_eq(verify_request(&v, &h, "", 0, 0), VERIFY_BAD_SECRET);
	/* {ts} with nowhere to read it from. */
	v.parse = "whole";
	v.signed_template = "{ts}.{body}";
	ck_assert_int_eq(verify_request(&v, &h, "", 0, 0), BAD);
	v.type = (enum verify_type)99;
	ck_assert_int_eq(verify_request(&v, &h, "", 0, 0), VERIFY_BAD_SECRET);
}
END_TEST

/* Type mtls: the client certificate against subject, san and
 * fingerprint, each set one required; no certificate, or no connection
 * (verify_request: a quarantine release), is no_client_certificate. */
START_TEST(test_mtls)
{
	struct verify_conf v;
	struct verify_peer p;
	struct header_kv kv[1] = { { "X-Sig", "00" } };
	struct keys_hdrs h;
	char fp[100];
	int i;

	memset(&v, 0, sizeof(v));
	memset(&p, 0, sizeof(p));
	v.type = VERIFY_MTLS;
	p.subject = "CN=provider-a,O=Example";
	p.sans[0] = "other.example";
	p.sans[1] = "provider-a.example";
	p.sans[2] = "192.0.2.7";
	p.nsans = 3;
	for (i = 0; i < 32; i++)
		p.sha256[i] = (unsigned char)(0xa0 + i);
	keys_hdrs_pairs(&h, kv, 1);
	ck_assert_int_eq(verify_request(&v, &h, "", 0, 0),
	    VERIFY_NO_CLIENT_CERTIFICATE);
	ck_assert_int_eq(verify_mtls(&v, NULL), VERIFY_NO_CLIENT_CERTIFICATE);

	v.mtls_subject = "CN=provider-a,O=Example";
	ck_assert_int_eq(verify_mtls(&v, &p), VERIFY_OK);
	v.mtls_subject = "CN=provider-a";
	ck_assert_int_eq(verify_mtls(&v, &p),
	    VERIFY_CLIENT_CERTIFICATE_MISMATCH);
	v.mtls_subject = NULL;

	v.mtls_san = "Provider-A.example";
	ck_assert_int_eq(verify_mtls(&v, &p), VERIFY_OK);
	v.mtls_san = "192.0.2.7";
	ck_assert_int_eq(verify_mtls(&v, &p), VERIFY_OK);
	v.mtls_san = "provider-b.example";
	ck_assert_int_eq(verify_mtls(&v, &p),
	    VERIFY_CLIENT_CERTIFICATE_MISMATCH);
	v.mtls_san = NULL;

	/* Hex with colons, either case; every byte counts. */
	for (i = 0; i < 32; i++)
		snprintf(fp + i * 3, sizeof(fp) - i * 3, "%02X%s",
		    0xa0 + i, i < 31 ? ":" : "");
	v.mtls_fingerprint = fp;
	ck_assert_int_eq(verify_mtls(&v, &p), VERIFY_OK);
	p.sha256[31] ^= 1;
	ck_assert_int_eq(verify_mtls(&v, &p),
	    VERIFY_CLIENT_CERTIFICATE_MISMATCH);
	p.sha256[31] ^= 1;
	fp[5] = '\0';			/* short */
	ck_assert_int_eq(verify_mtls(&v, &p),
	    VERIFY_CLIENT_CERTIFICATE_MISMATCH);

	/* All that is set must match. */
	snprintf(fp, sizeof(fp), "%s", "");
	for (i = 0; i < 32; i++)
		snprintf(fp + i * 2, sizeof(fp) - i * 2, "%02x", 0xa0 + i);
	v.mtls_san = "provider-a.example";
	v.mtls_subject = "CN=someone-else";
	ck_assert_int_eq(verify_mtls(&v, &p),
	    VERIFY_CLIENT_CERTIFICATE_MISMATCH);
	v.mtls_subject = "CN=provider-a,O=Example";
	ck_assert_int_eq(verify_mtls(&v, &p), VERIFY_OK);
}
END_TEST

/* The contract's words. */
struct name_case {
	enum verify_reason	 r;
	const char		*name;
};

static const struct name_case name_cases[] = {
	{ VERIFY_OK, "ok" },
	{ VERIFY_MISSING_SIGNATURE, "missing_signature" },
	{ VERIFY_MALFORMED_SIGNATURE, "malformed_signature" },
	{ VERIFY_NO_MATCH, "no_match" },
	{ VERIFY_TIMESTAMP_OUT_OF_TOLERANCE, "timestamp_out_of_tolerance" },
	{ VERIFY_BAD_SECRET, "bad_secret" },
	{ VERIFY_NO_CLIENT_CERTIFICATE, "no_client_certificate" },
	{ VERIFY_CLIENT_CERTIFICATE_MISMATCH, "client_certificate_mismatch" },
	{ (enum verify_reason)42, "unknown" },
};

START_TEST(test_names)
{
	const struct name_case *tc = &name_cases[_i];

	ck_assert_str_eq(verify_reason_name(tc->r), tc->name);
}
END_TEST

static Suite *
verify_suite(void)
{
	Suite *s = suite_create("verify");
	TCase *tc;

#define NELEM(a)	((int)(sizeof(a) / sizeof((a)[0])))
	tc = tcase_create("vectors");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_vectors, 0, NELEM(vcases));
	tcase_add_test(tc, test_binary_body);
	tcase_add_test(tc, test_httpreq_headers);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_oversized, 0, NELEM(size_cases));
	tcase_add_test(tc, test_many_signatures);
	suite_add_tcase(s, tc);

	tc = tcase_create("config");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_bad_secret, 0, NELEM(secret_cases));
	tcase_add_test(tc, test_bad_descriptor);
	tcase_add_test(tc, test_mtls);
	tcase_add_loop_test(tc, test_names, 0, NELEM(name_cases));
	suite_add_tcase(s, tc);
#undef NELEM
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(verify_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
