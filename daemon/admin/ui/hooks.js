// SPDX-License-Identifier: ISC
// hooks.js: the search of hooks (GET /v1/hooks) and a hook's page (GET
// /v1/hooks/{id}, its headers and body with hooks:read_body, its attempts;
// retry now, delete, a replay of its dead rows or, kept, its delivery
// again).  The headers, the body, the event type and every answer of a
// sink are shown as text; a
// JSON body pretty-printed, the first BODY_SHOWN bytes of it.

import { api, can, query, replayDead, replayKept } from './api.js';
import { bytes, button, el, filterForm, link, num, say, table, time }
    from './dom.js';

const BODY_SHOWN = 65536;
const FIELDS = [
	['source_id', 'source'], ['tenant_id', 'tenant'],
	['event_type', 'event type'], ['since', 'since (RFC 3339 or ms)'],
	['until', 'until'],
];

// The search's arguments, kept in the hash: #/hooks/<query>.
export async function render(box, args) {
	const q = new URLSearchParams(args[0] || '');
	const state = el('select', { name: 'state' }, ['', 'pending', 'dead',
	    'delivered', 'quarantined'].map((x) => el('option', { value: x },
		x || 'any')));
	const form = filterForm('hook-search', 'hooks', [['id', 'hook id']]
	    .concat(FIELDS, [['state', 'state', state]]), q, (o) => {
		if (o.id === undefined)
			return false;
		location.hash = '#/hook/' + encodeURIComponent(o.id);
		return true;
	});
	box.append(el('h1', {}, 'Hooks'), form);
	const o = Object.fromEntries(q.entries());
	delete o.id;
	o.limit = o.limit || 50;
	if (o.cursor === undefined)
		delete o.cursor;
	const r = await api('GET', '/v1/hooks' + query(o));
	box.append(table(['id', 'received', 'source', 'tenant', 'event type',
	    'state', 'rows', 'size'], r.entries.map((h) => [
		link(h.id, 'hook', h.id), time(h.received_at), h.source_id,
		h.tenant_id || '—', h.event_type === null ? '—' : h.event_type,
		h.state + (h.flagged ? ' (flagged)' : ''), num(h.rows),
		bytes(h.size)]), [6, 7]));
	if (r.entries.length === 0)
		box.append(el('p', { class: 'muted', id: 'no-hooks' },
		    'No hook on this page.'));
	if (r.next_cursor !== null) {
		const next = new URLSearchParams(q);
		next.set('cursor', r.next_cursor);
		box.append(link('Next page', 'hooks', next.toString()));
	}
}

// A body as text: pretty JSON when it parses, else as it is.
function bodyText(h) {
	if (h.body === null || h.body === undefined)
		return h.claim_ref ? '(in the claim store: ' + h.claim_ref + ')' :
		    '(none)';
	let t = h.body_encoding === 'base64' ? '(base64) ' + h.body : h.body;
	if (h.body_encoding === 'utf8') {
		try {
			t = JSON.stringify(JSON.parse(h.body), null, 2);
		} catch (e) {
			// not JSON: shown as it came
		}
	}
	if (t.length > BODY_SHOWN)
		t = t.slice(0, BODY_SHOWN) + '\n(cut at 64 KiB)';
	return t + (h.body_truncated ? '\n(the daemon sent its first ' +
	    '64 KiB)' : '');
}

async function act(what, fn, then) {
	try {
		await fn();
		say(what + ': done');
	} catch (e) {
		say(what + ': ' + e.message, true);
	}
	then();
}

export async function renderOne(box, args) {
	const id = args[0];
	const body = can('hooks:read_body') ? '?body=1' : '';
	const enc = encodeURIComponent(id);
	let h = null;
	try {
		h = await api('GET', '/v1/hooks/' + enc + body);
	} catch (e) {
		if (e.status !== 404)
			throw e;
	}
	box.append(el('h1', {}, 'Hook ', el('span', { id: 'hook-id' }, id)));
	if (h === null)
		box.append(el('p', { class: 'muted' }, 'Not stored (a ' +
		    'delivered hook not kept, or deleted); its attempts, if ' +
		    'kept, follow.'));
	else {
		const head = [['received', time(h.received_at)],
		    ['source', h.source_id], ['tenant', h.tenant_id || '—'],
		    ['event type', h.event_type === null ? '—' : h.event_type],
		    ['size', bytes(h.size)], ['content type',
		    h.content_type || '—'], ['dedupe key', h.dedupe_key || '—'],
		    ['flagged', String(h.flagged)], ['kept', String(!!h.kept)]];
		box.append(el('table', { id: 'hook-head' }, el('tbody', {},
		    head.map(([k, v]) => el('tr', {}, el('th', {}, k),
			el('td', {}, v))))));
		const again = () => window.dispatchEvent(
		    new HashChangeEvent('hashchange'));
		const acts = [];
		const t = encodeURIComponent(h.tenant_id || 'default');
		if (can('sinks:write') && h.rows.some((r) => r.state === 'due'))
			acts.push(button('Retry now', () => act('retry now',
			    () => api('POST', `/v1/tenants/${t}/sources/` +
				`${encodeURIComponent(h.source_id)}/retry-now`,
				{ id }), again), 'act-retry'));
		if (can('hooks:write'))
			acts.push(button('Delete', () => {
				if (confirm('Delete hook ' + id + ' and its ' +
				    h.rows.length + ' rows?'))
					act('delete', () => api('DELETE',
					    '/v1/hooks/' + enc), () => {
						location.hash = '#/hooks';
					});
			}, 'danger act-delete'));
		const dead = h.rows.filter((r) => r.state === 'dead');
		if (can('replays:write') && dead.length > 0)
			acts.push(button('Replay', () => act('replay', () =>
			    Promise.all(dead.map((r) => replayDead({
				source_id: h.source_id,
				since: r.dead_lettered_at,
				until: r.dead_lettered_at }, 100))), again),
			    'act-replay'));
		const kept = h.rows.filter((r) => r.state === 'delivered' &&
		    typeof r.delivered_at === 'number');
		if (can('replays:write') && h.kept && kept.length > 0)
			acts.push(button('Deliver again', () => act('replay',
			    () => Promise.all(kept.map((r) => replayKept(
				h.source_id, r.sink, r.delivered_at))), again),
			    'act-replay-kept'));
		box.append(el('p', {}, acts));
		box.append(el('h2', {}, 'Rows'), table(['sink', 'module',
		    'state', 'attempts', 'due', 'last error', 'dead reason'],
		    h.rows.map((r) => [String(r.sink), r.module, r.state,
			num(r.attempts), time(r.due), el('span', {
			    class: 'row-error' }, r.last_error || '—'),
			r.dead_reason || '—'])));
		if (body !== '' && Array.isArray(h.headers))
			box.append(el('h2', {}, 'Headers'), el('table',
			    { id: 'hook-headers' }, el('tbody', {},
			    h.headers.map((x) => el('tr', {}, el('th', {},
				x.name), el('td', {}, x.value))))));
		if (body !== '')
			box.append(el('h2', {}, 'Body'), el('pre',
			    { id: 'hook-body' }, bodyText(h)));
	}
	let a;
	try {
		a = await api('GET', '/v1/hooks/' + enc + '/attempts');
	} catch (e) {
		if (e.status !== 404)
			throw e;
		a = { attempts: [] };
	}
	box.append(el('h2', {}, 'Attempts'), el('table', { id: 'attempts' },
	    el('thead', {}, el('tr', {}, ['sink', 'n', 'started', 'ms',
		'outcome', 'status', 'error', 'answer'].map((x) =>
		el('th', {}, x)))),
	    el('tbody', {}, a.attempts.map((x) => el('tr',
		{ class: 'attempt' }, [String(x.sink) + ' (' + x.module + ')',
		    num(x.n), time(x.started_at), num(x.duration_ms),
		    x.outcome, x.status === null ? '—' : String(x.status),
		    el('span', { class: 'attempt-error' }, x.error || '—'),
		    el('pre', { class: 'attempt-response' },
			x.response === null ? '—' : x.response)].map((c) =>
		    el('td', {}, c)))))));
}
