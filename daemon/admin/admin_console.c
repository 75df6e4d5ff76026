/* SPDX-License-Identifier: ISC */
/*
 * admin_console.c: /ui/, the console's files and its CSP reports; see
 * admin_console.h.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "admin_api.h"
#include "admin_console.h"
#include "metrics.h"

#define CONSOLE_PREFIX	"/ui/"
#define CONSOLE_REPORT	"csp-report"

/* Scripts, styles, images and fetches of this origin only: no inline
 * script or style, no eval, no plugin, no frame of it anywhere. */
#define CONSOLE_CSP	"default-src 'self'; script-src 'self'; " \
	"style-src 'self'; img-src 'self'; connect-src 'self'; " \
	"font-src 'self'; object-src 'none'; base-uri 'none'; " \
	"form-action 'none'; frame-ancestors 'none'; " \
	"report-uri " CONSOLE_PREFIX CONSOLE_REPORT

static const struct {
	const char	*suffix;
	const char	*ctype;
} ctypes[] = {
	{ ".html", "text/html; charset=utf-8" },
	{ ".css", "text/css; charset=utf-8" },
	{ ".js", "text/javascript; charset=utf-8" },
	{ ".svg", "image/svg+xml" },
	{ ".png", "image/png" },
	{ ".ico", "image/x-icon" },
};

static void	console_headers(struct admin_req *);

int
console_path(const char *path)
{
	return strcmp(path, "/ui") == 0 ||
	    strncmp(path, CONSOLE_PREFIX, strlen(CONSOLE_PREFIX)) == 0;
}

const char *
console_ctype(const char *name)
{
	size_t i, n = strlen(name), k;

	for (i = 0; i < sizeof(ctypes) / sizeof(ctypes[0]); i++) {
		k = strlen(ctypes[i].suffix);
		if (n > k && strcmp(name + n - k, ctypes[i].suffix) == 0)
			return ctypes[i].ctype;
	}
	return "application/octet-stream";
}

const struct console_asset *
console_asset(const char *name)
{
	size_t i;

	for (i = 0; i < console_nassets; i++)
		if (strcmp(console_assets[i].name, name) == 0)
			return &console_assets[i];
	return NULL;
}

/* The asset's ETag, "<version>-<FNV-1a of its bytes>", made once. */
static const char *
console_etag(const struct console_asset *a)
{
	static char tags[64][64];
	size_t i = (size_t)(a - console_assets), k;
	uint32_t h = 2166136261u;

	if (i >= sizeof(tags) / sizeof(tags[0]))
		return NULL;
	if (tags[i][0] == '\0') {
		for (k = 0; k < a->len; k++)
			h = (h ^ a->data[k]) * 16777619u;
		snprintf(tags[i], sizeof(tags[i]), "\"%s-%08x\"",
		    PACKAGE_VERSION, h);
	}
	return tags[i];
}

static void
console_headers(struct admin_req *ar)
{
	admin_header(ar, "Content-Security-Policy", CONSOLE_CSP);
	admin_header(ar, "X-Frame-Options", "DENY");
	admin_header(ar, "Referrer-Policy", "no-referrer");
	admin_header(ar, "X-Content-Type-Options", "nosniff");
	admin_header(ar, "Cross-Origin-Opener-Policy", "same-origin");
}

/* 404 under /ui/: text, with the console's headers. */
static void
console_missing(struct admin_req *ar)
{
	static const char text[] = "not found\n";

	console_headers(ar);
	admin_reply_text(ar, 404, "text/plain; charset=utf-8", text,
	    sizeof(text) - 1);
}

/* 405 with the methods allowed. */
static void
console_refuse(struct admin_req *ar, const char *allow)
{
	admin_header(ar, "Allow", allow);
	console_headers(ar);
	admin_reply_text(ar, 405, "text/plain; charset=utf-8", "", 0);
}

void
console_serve(struct admin_req *ar, const char *path)
{
	const struct console_asset *a;
	const char *name, *etag, *inm;

	/* /ui: the page's files are named relative to /ui/. */
	if (strcmp(path, "/ui") == 0) {
		console_headers(ar);
		admin_header(ar, "Location", CONSOLE_PREFIX);
		admin_reply_text(ar, 301, "text/plain; charset=utf-8", "", 0);
		return;
	}
	name = path + strlen(CONSOLE_PREFIX);
	if (strcmp(name, CONSOLE_REPORT) == 0) {
		if (admin_method(ar) != ADMIN_POST) {
			console_refuse(ar, "POST");
			return;
		}
		metrics_add("ankusa_console_csp_reports_total", 1, NULL);
		admin_reply_text(ar, 204, "text/plain; charset=utf-8", "", 0);
		return;
	}
	if (*name == '\0')
		name = "index.html";
	if (admin_method(ar) != ADMIN_GET) {
		console_refuse(ar, "GET, HEAD");
		return;
	}
	if ((a = console_asset(name)) == NULL) {
		console_missing(ar);
		return;
	}
	console_headers(ar);
	admin_header(ar, "Cache-Control", "no-cache");
	if ((etag = console_etag(a)) != NULL) {
		admin_header(ar, "ETag", etag);
		inm = admin_req_header(ar, "If-None-Match");
		if (inm != NULL && strcmp(inm, etag) == 0) {
			admin_reply_text(ar, 304, console_ctype(name), "", 0);
			return;
		}
	}
	admin_reply_text(ar, 200, console_ctype(name), (const char *)a->data,
	    a->len);
}
