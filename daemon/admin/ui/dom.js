// SPDX-License-Identifier: ISC
// dom.js: the only way the console makes elements.  Everything a hook or
// a sink sent, and everything the API answered, goes into the page as a
// text node (textContent): never as markup, never into an attribute
// that a browser would run or follow (href, src, on*, style).

// An element: attrs are fixed names set by the console's own code (a
// class, a type, a data-* key); children are elements, or anything else,
// which becomes text.
export function el(tag, attrs, ...children) {
	const e = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs || {})) {
		if (/^on|^href$|^src$|^style$/i.test(k))
			throw new Error('dom.js: no ' + k + ' attribute');
		if (v === true)
			e.setAttribute(k, '');
		else if (v !== false && v !== null && v !== undefined)
			e.setAttribute(k, String(v));
	}
	add(e, children);
	return e;
}

function add(e, children) {
	for (const c of children) {
		if (c === null || c === undefined || c === false)
			continue;
		if (Array.isArray(c))
			add(e, c);
		else if (c instanceof Node)
			e.appendChild(c);
		else
			e.appendChild(document.createTextNode(String(c)));
	}
}

// A link inside the console: a fixed hash route, its parts encoded.
export function link(text, ...parts) {
	const a = document.createElement('a');
	a.href = '#/' + parts.map(encodeURIComponent).join('/');
	a.textContent = String(text);
	return a;
}

// A button; fn runs on a click.
export function button(text, fn, cls) {
	const b = el('button', { type: 'button', class: cls });
	b.textContent = text;
	b.addEventListener('click', fn);
	return b;
}

export function replace(node, ...children) {
	node.replaceChildren();
	add(node, children);
}

// A table of rows (arrays of cells: elements or text).  numeric names
// the columns shown right-aligned.
export function table(heads, rows, numeric = []) {
	return el('table', {},
	    el('thead', {}, el('tr', {}, heads.map((h) => el('th', {}, h)))),
	    el('tbody', {}, rows.map((r) => el('tr', {}, r.map((c, i) =>
		el('td', { class: numeric.includes(i) ? 'num' : null }, c))))));
}

export function time(ms) {
	if (ms === null || ms === undefined)
		return '—';
	return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/,
	    'Z');
}

export function num(v, digits = 0) {
	if (v === null || v === undefined || Number.isNaN(v))
		return '—';
	return Number(v).toLocaleString('en', {
		maximumFractionDigits: digits });
}

export function bytes(v) {
	if (v === null || v === undefined)
		return '—';
	const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
	let i = 0;
	while (v >= 1024 && i < u.length - 1) {
		v /= 1024;
		i++;
	}
	return num(v, i ? 1 : 0) + ' ' + u[i];
}

// A message in the corner for a few seconds.
export function say(text, bad) {
	const s = document.getElementById('status');
	const m = el('div', { class: 'msg' + (bad ? ' bad' : '') }, text);
	s.replaceChildren(m);
	setTimeout(() => { if (m.parentNode) m.remove(); }, 5000);
}

// A filter form: one input a field ([name, label], or [name, label,
// element] for a select), filled from q (URLSearchParams); its submit
// puts the set values in the hash, #/<route>/<query>, unless first(values)
// handled them (returned true).
export function filterForm(id, route, fields, q, first) {
	const inputs = {};
	const form = el('form', { class: 'filters', id },
	    fields.map(([k, label, input]) => el('label', {}, label,
		inputs[k] = input || el('input', { name: k }))),
	    el('button', { type: 'submit' }, 'Search'));
	for (const [k, i] of Object.entries(inputs))
		i.value = q.get(k) || '';
	form.addEventListener('submit', (ev) => {
		ev.preventDefault();
		const o = {};
		for (const [k, i] of Object.entries(inputs))
			if (i.value.trim() !== '')
				o[k] = i.value.trim();
		if (first && first(o))
			return;
		location.hash = '#/' + route + '/' +
		    encodeURIComponent(new URLSearchParams(o).toString());
	});
	return form;
}
