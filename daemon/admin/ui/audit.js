// SPDX-License-Identifier: ISC
// audit.js: who changed what (GET /v1/audit, audit:read), newest first,
// filtered by actor, action and tenant.

import { api, query } from './api.js';
import { el, filterForm, link, table, time } from './dom.js';

export async function render(box, args) {
	const q = new URLSearchParams(args[0] || '');
	const form = filterForm('audit-filter', 'audit', ['actor', 'action',
	    'tenant'].map((k) => [k, k]), q);
	const o = Object.fromEntries(q.entries());
	o.limit = 100;
	const r = await api('GET', '/v1/audit' + query(o));
	box.append(el('h1', {}, 'Audit'), form, table(['at', 'actor',
	    'action', 'target', 'tenant', 'outcome'], r.entries.map((e) => [
		time(e.at), e.actor, e.action, e.target, e.tenant || '—',
		el('span', { class: e.outcome === 'ok' ? 'ok' : 'bad' },
		    e.outcome)])));
	if (r.next_cursor !== null) {
		q.set('cursor', r.next_cursor);
		box.append(link('Older', 'audit', q.toString()));
	}
}
