// SPDX-License-Identifier: ISC
// sinks.js: each sink key's health (GET /v1/sinks) and, for a token with
// sinks:write, pause, resume and retry now (the manual operations'
// routes).  A key's last error is the sink's words: text only.

import { api, can } from './api.js';
import { button, el, num, say, time } from './dom.js';

// The tenant a source's routes are named under: its own (GET /v1/config,
// config:read), else "default" (a source bound to none serves any).
async function tenants() {
	const t = {};
	if (!can('config:read'))
		return t;
	const c = await api('GET', '/v1/config');
	for (const [id, s] of Object.entries(c.sources || {}))
		if (typeof s.tenant === 'string')
			t[id] = s.tenant;
	return t;
}

function pct(v) {
	return v === null || v === undefined ? '—' : num(v * 100, 1) + ' %';
}

async function act(what, fn) {
	try {
		const r = await fn();
		say(what + ': done' + (r && r.retried !== undefined ?
		    ' (' + r.retried + ' rows)' : ''));
	} catch (e) {
		say(what + ': ' + e.message, true);
	}
	window.dispatchEvent(new HashChangeEvent('hashchange'));
}

export async function render(box) {
	const [list, ten] = await Promise.all([api('GET', '/v1/sinks'),
	    tenants()]);
	const write = can('sinks:write');
	const rows = list.sinks.map((k) => {
		const t = encodeURIComponent(ten[k.source_id] || 'default');
		const base = `/v1/tenants/${t}/sources/` +
		    `${encodeURIComponent(k.source_id)}/sinks/${k.sink}`;
		const key = k.source_id + '#' + k.sink;
		const state = k.disabled !== null ? 'disabled: ' + k.disabled :
		    k.paused ? 'paused' : 'active';
		const actions = !write ? [] : [
			k.paused ?
			    button('Resume', () => act('resume ' + key, () =>
				api('POST', base + '/resume')), 'act-resume') :
			    button('Pause', () => act('pause ' + key, () =>
				api('POST', base + '/pause')), 'act-pause'),
			button('Retry now', () => act('retry now ' + key, () =>
			    api('POST', '/v1/retry-now', { source: k.source_id,
				sink: k.sink })), 'act-retry'),
		];
		const rate = (k.rate || []).map((r) => r.per_second === null ?
		    '' : num(r.per_second, 2) + '/s').filter((x) => x)
		    .join(' ');
		return [
			el('span', { class: 'sink-key' }, key), k.module,
			el('span', { class: 'sink-state ' + (state === 'active' ?
			    'ok' : 'warn') }, state),
			el('span', { class: k.breaker === 'closed' ? '' : 'bad' },
			    k.breaker),
			pct(k['5m'].success_ratio), num(k['5m'].p50_ms),
			num(k['5m'].p99_ms), num(k.pending), num(k.dead),
			rate || '—',
			el('span', { class: 'sink-error' }, k.last_error === null ?
			    '—' : k.last_error + ' (' + time(k.last_error_at) +
			    ')'),
			el('span', {}, actions),
		];
	});
	box.append(el('h1', {}, 'Destinations'),
	    el('p', { class: 'muted' }, 'Success ratio and latency over the ' +
		'last 5 minutes.'),
	    tableOf(rows));
}

function tableOf(rows) {
	const heads = ['sink key', 'module', 'state', 'breaker', 'success',
	    'p50 ms', 'p99 ms', 'pending', 'dead', 'rate', 'last error', ''];
	const t = el('table', { id: 'sinks' },
	    el('thead', {}, el('tr', {}, heads.map((h) => el('th', {}, h)))),
	    el('tbody', {}, rows.map((r) => el('tr', { class: 'sink-row' },
		r.map((c, i) => el('td', { class: i >= 4 && i <= 8 ? 'num' :
		    null }, c))))));
	return t;
}
