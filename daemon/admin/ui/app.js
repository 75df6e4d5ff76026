// SPDX-License-Identifier: ISC
// app.js: the console's sign-in, its pages by the URL's hash, and the
// refresh of the live pages (overview, destinations) every 2 s.

import { signIn, signOut, token, whoami } from './api.js';
import { el, replace, say } from './dom.js';
import * as overview from './overview.js';
import * as sinks from './sinks.js';
import * as hooks from './hooks.js';
import * as dlq from './dlq.js';
import * as replays from './replays.js';
import * as audit from './audit.js';

const REFRESH_MS = 2000;

// Each page: render(main, args) draws it; live pages are drawn again
// every REFRESH_MS while shown.
const pages = {
	overview: { render: overview.render, live: true },
	sinks: { render: sinks.render, live: true },
	hooks: { render: hooks.render },
	hook: { render: hooks.renderOne },
	dlq: { render: dlq.render },
	replays: { render: replays.render, live: true },
	audit: { render: audit.render },
};

let timer = null;
let drawing = 0;	// the current draw's number: an older one stops

function main() {
	return document.getElementById('main');
}

function signInForm(why) {
	document.getElementById('nav').hidden = true;
	document.getElementById('signout').hidden = true;
	replace(document.getElementById('who'));
	const input = el('input', { type: 'password', id: 'token',
	    autocomplete: 'off', placeholder: 'admin token' });
	const form = el('form', { class: 'signin', id: 'signin' },
	    el('h1', {}, 'Sign in'),
	    el('p', { class: 'muted' }, 'A token of admin.tokens ' +
		'(ankusa.yml(5)); it is kept in this tab only.'),
	    el('label', {}, 'Token', input),
	    el('button', { type: 'submit', id: 'signin-go' }, 'Sign in'),
	    el('p', { id: 'signin-error', class: 'bad' }, why || ''));
	form.addEventListener('submit', async (ev) => {
		ev.preventDefault();
		try {
			await signIn(input.value);
			route();
		} catch (e) {
			replace(document.getElementById('signin-error'),
			    e.status === 401 ? 'This token is refused.' :
			    'Sign-in failed: ' + e.message);
		}
	});
	replace(main(), form);
	input.focus();
}

async function route() {
	clearTimeout(timer);
	let me;
	try {
		me = await whoami();
	} catch (e) {
		signInForm(token() ? 'This token is refused.' : '');
		return;
	}
	document.getElementById('nav').hidden = false;
	document.getElementById('signout').hidden = false;
	replace(document.getElementById('who'), me.name + ' (' +
	    me.scopes.join(' ') + ')');
	const parts = location.hash.replace(/^#\/?/, '').split('/')
	    .map(decodeURIComponent);
	const name = pages[parts[0]] ? parts[0] : 'overview';
	for (const a of document.querySelectorAll('nav a'))
		a.classList.toggle('here', a.getAttribute('href') ===
		    '#/' + (name === 'hook' ? 'hooks' : name));
	const n = ++drawing;
	const draw = async () => {
		const box = el('div', { id: 'page-' + name });
		try {
			await pages[name].render(box, parts.slice(1));
		} catch (e) {
			if (e.status === 401)
				return;
			replace(box, el('p', { class: 'bad' },
			    'The API answered: ' + e.message));
		}
		if (n !== drawing)
			return;
		replace(main(), box);
		box.dataset.drawn = String(Date.now());
		if (pages[name].live)
			timer = setTimeout(draw, REFRESH_MS);
	};
	await draw();
}

window.addEventListener('hashchange', route);
window.addEventListener('ankusa-signout', () => signInForm(
    'The token was refused; sign in again.'));
document.getElementById('signout').addEventListener('click', () => {
	signOut();
	clearTimeout(timer);
	signInForm('');
});
window.addEventListener('unhandledrejection', (ev) => say(
    String(ev.reason && ev.reason.message), true));
route();
