// SPDX-License-Identifier: ISC
// overview.js: the daemon at a glance: the last hour's rates (GET
// /v1/stats/series), the queue, dead letters, breakers, pauses, disabled
// sinks, the disk, the children and the replication (GET
// /v1/stats/summary: the node's figures of /metrics, without the sink
// keys', whose cost grows with the keys) and the version (GET /health).
// Each figure's raw value is in its data-value, as the API gave it.

import { api, can } from './api.js';
import { chart } from './chart.js';
import { bytes, el, num } from './dom.js';

const STEP = 60;	// the chart's step, seconds: 60 points an hour

function card(id, label, value, text) {
	return el('div', { class: 'card' }, el('dl', {},
	    el('dt', {}, label),
	    el('dd', { id, 'data-value': value === null ? '' : value },
		text === undefined ? num(value, 2) : text)));
}

export async function render(box) {
	const metrics = can('metrics:read');
	const [health, series, sum] = await Promise.all([
		api('GET', '/health'),
		metrics ? api('GET', '/v1/stats/series?seconds=3600&step=' +
		    STEP) : null,
		metrics ? api('GET', '/v1/stats/summary') : null,
	]);
	box.append(el('h1', {}, 'Overview'),
	    el('p', { class: 'muted' }, 'ankusad ' + health.version + ' on ' +
		health.instance + (health.draining ? ' (draining)' : '')));
	if (series !== null) {
		const s = series.series, last = s.ingest.length - 1;
		const total = (k) => s[k].reduce((a, b) => a + b, 0);
		box.append(el('h2', {}, 'The last hour'),
		    el('div', { class: 'legend' },
			['ingest', 'delivered', 'failed', 'dead'].map((k) =>
			    el('span', { class: 's-' + k }, '— ' + k))),
		    chart(['ingest', 'delivered', 'failed', 'dead'].map(
			(k) => ({ name: k, cls: 's-' + k, values: s[k] })),
			series.step),
		    el('div', { class: 'cards' },
			card('ov-ingest-rate', 'ingest /s (last minute)',
			    s.ingest[last] / STEP),
			card('ov-delivered-rate',
			    'delivered /s (last minute)',
			    s.delivered[last] / STEP),
			card('ov-failed-rate', 'failed /s (last minute)',
			    s.failed[last] / STEP),
			['2xx', '3xx', '4xx', '5xx', 'no_answer'].map((k) =>
			    card('ov-answers-' + k, 'answers ' +
				k.replace('_', ' ') + ' (hour)',
				total(k)))));
	}
	if (sum !== null) {
		const add = (o) => Object.values(o).reduce((a, b) => a + b, 0);
		const r = sum.replication;
		box.append(el('h2', {}, 'Queue and health'),
		    el('div', { class: 'cards' },
			card('ov-pending', 'backlog (rows pending)',
			    sum.pending),
			card('ov-inflight', 'in flight', sum.inflight),
			card('ov-oldest', 'oldest due age (s)',
			    sum.oldest_due_age_s),
			card('ov-dead', 'dead letters', sum.dead),
			card('ov-breakers', 'open breakers',
			    sum.breakers_open),
			card('ov-paused', 'paused sinks', sum.paused_keys),
			card('ov-disabled', 'disabled sinks',
			    sum.disabled_keys),
			card('ov-sinks', 'sink keys', sum.sink_keys),
			card('ov-disk', 'disk free', sum.disk_free_bytes,
			    bytes(sum.disk_free_bytes)),
			card('ov-children', 'child processes',
			    add(sum.children), Object.entries(sum.children)
			    .filter(([, n]) => n > 0)
			    .map(([k, n]) => n + ' ' + k).join(', ')),
			card('ov-restarts', 'children restarted',
			    add(sum.restarts)),
			card('ov-role', 'replication role', r.role, r.role),
			card('ov-sites', 'replication sites',
			    r.sites_connected + r.sites_disconnected,
			    r.sites_connected + ' up, ' +
			    r.sites_disconnected + ' down'),
			card('ov-lag', 'replication lag (s)', r.lag_s)));
	} else
		box.append(el('p', { class: 'muted' }, 'This token has no ' +
		    'metrics:read: no rates or queue figures.'));
}
