// SPDX-License-Identifier: ISC
// chart.js: a line chart in SVG of a few series of counts over time,
// drawn with createElementNS and classes (no inline style, no library).

const NS = 'http://www.w3.org/2000/svg';
const W = 600, H = 160, PAD = 28;

function svg(tag, attrs) {
	const e = document.createElementNS(NS, tag);
	for (const [k, v] of Object.entries(attrs))
		e.setAttribute(k, String(v));
	return e;
}

// lines: [{ name, cls, values }], every values the same length, one a
// step of stepS seconds ending now; drawn as a rate (/s).
export function chart(lines, stepS) {
	const n = lines.length ? lines[0].values.length : 0;
	let max = 0;
	for (const l of lines)
		for (const v of l.values)
			max = Math.max(max, v / stepS);
	if (max === 0)
		max = 1;
	const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart',
	    role: 'img' });
	root.appendChild(svg('line', { x1: PAD, y1: H - PAD + 10, x2: W,
	    y2: H - PAD + 10, class: 'axis' }));
	const top = svg('text', { x: 0, y: 10 });
	top.textContent = max.toPrecision(3) + '/s';
	root.appendChild(top);
	const left = svg('text', { x: PAD, y: H - 2 });
	left.textContent = '-' + Math.round(n * stepS / 60) + ' min';
	root.appendChild(left);
	const right = svg('text', { x: W - 24, y: H - 2 });
	right.textContent = 'now';
	root.appendChild(right);
	for (const l of lines) {
		const pts = l.values.map((v, i) => {
			const x = PAD + (n > 1 ? i * (W - PAD) / (n - 1) : 0);
			const y = H - PAD + 10 - (v / stepS / max) * (H - PAD);
			return x.toFixed(1) + ',' + y.toFixed(1);
		});
		root.appendChild(svg('polyline', { points: pts.join(' '),
		    class: 'line ' + l.cls }));
	}
	return root;
}
