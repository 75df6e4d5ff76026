// SPDX-License-Identifier: ISC
// dlq.js: the dead letters (GET /v1/dlq), filtered by source and dead
// time; a replay job of them at a rate (POST /v1/replays, replays:write)
// and their purge (DELETE /v1/dlq, dlq:write) after a confirmation that
// names how many go.

import { api, can, query, replayDead } from './api.js';
import { bytes, button, el, filterForm, link, num, say, table, time }
    from './dom.js';

function again() {
	window.dispatchEvent(new HashChangeEvent('hashchange'));
}

async function act(what, fn) {
	try {
		const r = await fn();
		say(what + ': ' + (r && r.deleted !== undefined ?
		    r.deleted + ' deleted' : r && r.id ? 'job ' + r.id :
		    'done'));
	} catch (e) {
		say(what + ': ' + e.message, true);
	}
	again();
}

export async function render(box, args) {
	const q = new URLSearchParams(args[0] || '');
	const f = {};
	for (const k of ['source_id', 'since', 'until'])
		if (q.get(k))
			f[k] = q.get(k);
	const form = filterForm('dlq-filter', 'dlq', [['source_id', 'source'],
	    ['since', 'dead since'], ['until', 'dead until']], q);
	const r = await api('GET', '/v1/dlq' + query(Object.assign(
	    { limit: 100, cursor: q.get('cursor') }, f)));
	box.append(el('h1', {}, 'Dead letters'), form,
	    el('p', {}, el('span', { id: 'dlq-total' }, String(r.total)),
		' dead letters match.'));
	const rate = el('input', { type: 'number', min: 1, max: 100000,
	    value: 100, id: 'replay-rate' });
	if (can('replays:write') && r.total > 0)
		box.append(el('p', {}, el('label', {}, 'rows a second', rate),
		    button('Replay these ' + r.total, () => act('replay',
			() => replayDead(f, rate.value)), 'act-replay-all')));
	if (can('dlq:write') && r.total > 0)
		box.append(el('p', {}, button('Purge these ' + r.total, () => {
			if (!confirm('Purge ' + r.total + ' dead letters, ' +
			    'for good?'))
				return;
			const o = Object.keys(f).length ? f : { all: 'true' };
			act('purge', () => api('DELETE', '/v1/dlq' + query(o)));
		}, 'danger act-purge')));
	box.append(table(['hook', 'dead', 'source', 'sink', 'reason',
	    'attempts', 'last error', 'size', ''], r.entries.map((d) => [
		link(d.id, 'hook', d.id), time(d.dead_lettered_at),
		d.source_id === null ? '—' : d.source_id,
		String(d.sink) + ' (' + d.module + ')', d.reason,
		num(d.attempts), el('span', { class: 'dlq-error' },
		    d.last_error || '—'), bytes(d.size),
		el('span', {}, [
			can('replays:write') && d.source_id !== null ?
			    button('Replay', () => act('replay ' + d.id,
				() => replayDead({ source_id: d.source_id,
				    since: d.dead_lettered_at,
				    until: d.dead_lettered_at }, rate.value)),
				'act-replay') : null,
			can('dlq:write') ? button('Purge', () => {
				if (confirm('Purge the 1 dead letter of ' +
				    d.id + '?'))
					act('purge ' + d.id, () => api('DELETE',
					    '/v1/dlq' + query({ id: d.id })));
			}, 'danger act-purge-one') : null])]), [5]));
	if (r.next_cursor !== null) {
		const next = new URLSearchParams(q);
		next.set('cursor', r.next_cursor);
		box.append(link('Next page', 'dlq', next.toString()));
	}
}
