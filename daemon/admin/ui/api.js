// SPDX-License-Identifier: ISC
// api.js: calls of the admin API with the operator's token.  The token is
// kept in this tab's sessionStorage (gone when the tab closes) and sent as
// Authorization: Bearer; the console sets no cookie, so a page of another
// site can make no call that acts (the daemon checks Host and Origin too).

const KEY = 'ankusa.token';
let me = null;		// GET /v1/whoami's answer

export class ApiError extends Error {
	constructor(status, body) {
		super((body && (body.message || body.error)) ||
		    ('HTTP ' + status));
		this.status = status;
		this.body = body;
	}
}

export function token() {
	return sessionStorage.getItem(KEY);
}

export function signOut() {
	sessionStorage.removeItem(KEY);
	me = null;
}

// The answer of method path (with body, as JSON): its parsed JSON, or its
// text for a text answer.  Throws ApiError on any status but 2xx; a 401
// signs out and goes back to the sign-in form.
export async function api(method, path, body) {
	const h = {};
	const t = token();
	if (t)
		h.Authorization = 'Bearer ' + t;
	const init = { method, headers: h, cache: 'no-store',
	    credentials: 'omit', referrerPolicy: 'no-referrer' };
	if (body !== undefined) {
		h['Content-Type'] = 'application/json';
		init.body = JSON.stringify(body);
	}
	const r = await fetch(path, init);
	const ct = r.headers.get('Content-Type') || '';
	const data = ct.startsWith('application/json') ?
	    await r.json().catch(() => null) : await r.text();
	if (r.status === 401 && path !== '/v1/whoami') {
		signOut();
		window.dispatchEvent(new Event('ankusa-signout'));
	}
	if (r.status < 200 || r.status > 299)
		throw new ApiError(r.status, data);
	return data;
}

// Sign in with a token: kept only when the daemon knows it.
export async function signIn(t) {
	sessionStorage.setItem(KEY, t);
	try {
		me = await api('GET', '/v1/whoami');
	} catch (e) {
		signOut();
		throw e;
	}
	return me;
}

// Who the kept token is, asking once a page load.
export async function whoami() {
	if (me === null)
		me = await api('GET', '/v1/whoami');
	return me;
}

// Whether the token grants scope ("dlq:write").
export function can(scope) {
	return me !== null && (me.scopes.includes('*') ||
	    me.scopes.includes(scope));
}

// A replay job of the dead letters of filter f (source_id, since, until)
// at rate rows a second: POST /v1/replays, its job.
export function replayDead(f, rate) {
	return api('POST', '/v1/replays', Object.assign({ kind: 'dlq',
	    rate: Number(rate) }, f));
}

// A replay job of one kept (delivered) hook's row: kind archive, its
// source's hooks last delivered at that ms, of that sink.
export function replayKept(source, sink, at) {
	return api('POST', '/v1/replays', { kind: 'archive',
	    source_id: source, sink, since: at, until: at, rate: 100 });
}

// A query string of the set values of o.
export function query(o) {
	const q = new URLSearchParams();
	for (const [k, v] of Object.entries(o))
		if (v !== '' && v !== null && v !== undefined)
			q.set(k, v);
	const s = q.toString();
	return s ? '?' + s : '';
}

// Prometheus text (GET /metrics) as { 'name{labels}': value, ... } and
// each family's sum over its series as { name: sum }.
export function parseMetrics(text) {
	const series = {}, sum = {};
	for (const line of text.split('\n')) {
		if (line === '' || line.startsWith('#'))
			continue;
		const sp = line.lastIndexOf(' ');
		const key = line.slice(0, sp), v = Number(line.slice(sp + 1));
		series[key] = v;
		const name = key.replace(/\{.*$/, '');
		sum[name] = (sum[name] || 0) + v;
	}
	return { series, sum };
}
