// SPDX-License-Identifier: ISC
// overview.js: the daemon at a glance: the last hour's rates (GET
// /v1/stats/series), the queue, dead letters, breakers, pauses, the
// replication role, the disk and the children (GET /metrics), the
// disabled sinks (GET /v1/sinks) and the role (GET /health).  Each
// figure's raw value is in its data-value, as the API gave it.

import { api, can, parseMetrics } from './api.js';
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
	const [health, series, metrics, sinks] = await Promise.all([
		api('GET', '/health'),
		can('metrics:read') ? api('GET',
		    '/v1/stats/series?seconds=3600&step=' + STEP) : null,
		can('metrics:read') ? api('GET', '/metrics') : null,
		can('hooks:read') ? api('GET', '/v1/sinks') : null,
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
	if (metrics !== null) {
		const m = parseMetrics(metrics).sum;
		const g = (name) => name in m ? m[name] : null;
		box.append(el('h2', {}, 'Queue and health'),
		    el('div', { class: 'cards' },
			card('ov-pending', 'backlog (rows pending)',
			    g('ankusa_queue_pending')),
			card('ov-inflight', 'in flight',
			    g('ankusa_queue_inflight')),
			card('ov-oldest', 'oldest due age (s)',
			    g('ankusa_queue_oldest_due_age_seconds')),
			card('ov-dead', 'dead letters',
			    g('ankusa_queue_dead')),
			card('ov-breakers', 'open breakers',
			    g('ankusa_dispatch_breakers_open')),
			card('ov-paused', 'paused sinks',
			    g('ankusa_dispatch_paused_keys')),
			card('ov-disk', 'disk free',
			    g('ankusa_disk_free_bytes'),
			    bytes(g('ankusa_disk_free_bytes'))),
			card('ov-role', 'replication role', health.role,
			    health.role),
			card('ov-sites', 'replication sites',
			    g('ankusa_replication_sites')),
			card('ov-lag', 'replication lag (s)',
			    g('ankusa_replication_lag_seconds')),
			card('ov-children', 'child processes',
			    g('ankusa_children')),
			card('ov-restarts', 'children restarted',
			    g('ankusa_child_restarts_total') || 0)));
	}
	if (sinks !== null) {
		const disabled = sinks.sinks.filter((k) => k.disabled !== null);
		box.append(el('div', { class: 'cards' },
		    card('ov-disabled', 'disabled sinks', disabled.length),
		    card('ov-sinks', 'sink keys', sinks.sinks.length)));
	}
	if (series === null && metrics === null)
		box.append(el('p', { class: 'muted' }, 'This token has no ' +
		    'metrics:read: no rates or queue figures.'));
}
