// SPDX-License-Identifier: ISC
// replays.js: the replay jobs (GET /v1/replays) with their progress;
// pause, resume and cancel (PATCH /v1/replays/{id}, replays:write).

import { api, can } from './api.js';
import { button, el, num, say, table, time } from './dom.js';

async function setState(j, state) {
	try {
		await api('PATCH', '/v1/replays/' + encodeURIComponent(j.id),
		    { state });
		say('replay ' + j.id + ': ' + state);
	} catch (e) {
		say('replay ' + j.id + ': ' + e.message, true);
	}
	window.dispatchEvent(new HashChangeEvent('hashchange'));
}

export async function render(box) {
	const r = await api('GET', '/v1/replays');
	const write = can('replays:write');
	box.append(el('h1', {}, 'Replays'), table(['id', 'kind', 'state',
	    'source', 'created', 'rate /s', 'moved', 'dropped', 'why', ''],
	r.replays.slice().reverse().map((j) => {
		const open = j.state === 'running' || j.state === 'paused';
		return [j.id, j.kind, el('span', { class: 'replay-state' },
		    j.state), j.source_id || 'every source', time(j.created_at),
		    num(j.rate), num(j.moved), num(j.dropped),
		    j.reason || j.held || '—',
		    el('span', {}, !write || !open ? [] : [
			j.state === 'running' ?
			    button('Pause', () => setState(j, 'paused'),
				'act-pause') :
			    button('Resume', () => setState(j, 'running'),
				'act-resume'),
			button('Cancel', () => {
				if (confirm('Cancel replay ' + j.id + '?'))
					setState(j, 'cancelled');
			}, 'danger act-cancel')])];
	}), [5, 6, 7]));
	if (r.replays.length === 0)
		box.append(el('p', { class: 'muted' }, 'No replay job.'));
}
