// Hand-written SVG charts (no library): a column chart of the month series
// and horizontal bars of grouped counts. Every bar carries data-key and
// data-count and a <title>; each chart comes with the same numbers as a
// table for screen readers and copying.
import { h, s, fmt } from './dom.js';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

function monthLabel(key) {
  const [y, m] = key.split('-');
  return MONTHS[Number(m) - 1] + ' ' + y;
}

// niceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
function niceMax(max) {
  if (max <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(max)));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

function dataTable(caption, head, data, label) {
  return h('details', { class: 'astable' },
    h('summary', {}, 'Show as a table'),
    h('table', {},
      h('caption', {}, caption),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, head), h('th', { scope: 'col', class: 'num' }, 'Notices'))),
      h('tbody', {}, data.map((d) => h('tr', {}, h('th', { scope: 'row' }, label(d.key)), h('td', { class: 'num' }, fmt(d.count)))))));
}

/** months draws one column per month of data (zero months as a marked baseline). */
export function months(data, title) {
  const W = 960, H = 280, L = 56, R = 12, T = 14, B = 44;
  const max = niceMax(Math.max(0, ...data.map((d) => d.count)));
  const n = Math.max(data.length, 1);
  const step = (W - L - R) / n;
  const bw = Math.max(1, Math.min(40, step * 0.72));
  const y = (v) => T + (H - T - B) * (1 - v / max);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart months', role: 'img', 'aria-label': `${title}: ${data.length} months, ${fmt(data.reduce((a, d) => a + d.count, 0))} notices` });
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    svg.append(s('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'grid' }),
      s('text', { x: L - 8, y: y(v) + 4, class: 'tick', 'text-anchor': 'end' }, fmt(Math.round(v))));
  }
  const every = Math.ceil(n / 12);
  data.forEach((d, i) => {
    const x = L + i * step + (step - bw) / 2;
    const g = s('g', { class: 'bar' + (d.count === 0 ? ' zero' : ''), 'data-key': d.key, 'data-count': d.count },
      s('title', {}, `${monthLabel(d.key)}: ${fmt(d.count)} notice${d.count === 1 ? '' : 's'}`),
      s('rect', { x, y: y(d.count), width: bw, height: Math.max(0, y(0) - y(d.count)) }),
      d.count === 0 ? s('line', { x1: x, x2: x + bw, y1: y(0) - 1, y2: y(0) - 1, class: 'zeromark' }) : null);
    svg.append(g);
    if (i % every === 0) {
      svg.append(s('text', { x: x + bw / 2, y: H - B + 18, class: 'tick', 'text-anchor': 'middle' }, monthLabel(d.key)));
    }
  });
  svg.append(s('line', { x1: L, x2: W - R, y1: y(0), y2: y(0), class: 'axis' }));
  return h('figure', { class: 'figure' }, h('figcaption', {}, title), svg, dataTable(title, 'Month', data, monthLabel));
}

/** bars draws horizontal bars of grouped counts, largest first. */
export function bars(data, title, keyHead, onPick) {
  const max = Math.max(1, ...data.map((d) => d.count));
  const list = h('ol', { class: 'hbars', 'aria-label': title });
  for (const d of data) {
    const pct = (100 * d.count) / max;
    const bar = s('svg', { class: 'hbar', viewBox: '0 0 100 10', preserveAspectRatio: 'none', 'aria-hidden': 'true' },
      s('rect', { x: 0, y: 0, width: Math.max(pct, d.count ? 0.5 : 0), height: 10 }));
    const label = onPick ? h('button', { type: 'button', class: 'link', onclick: () => onPick(d.key) }, d.key) : h('span', {}, d.key);
    list.append(h('li', { class: 'bar', 'data-key': d.key, 'data-count': d.count }, h('span', { class: 'lbl' }, label), bar, h('span', { class: 'num' }, fmt(d.count))));
  }
  if (!data.length) list.append(h('li', { class: 'empty' }, 'No notices.'));
  return h('figure', { class: 'figure' }, h('figcaption', {}, title), list, dataTable(title, keyHead, data, (k) => k));
}
