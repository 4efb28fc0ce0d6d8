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

/** sydneyToday is today's date in Sydney (YYYY-MM-DD), the calendar the API's months use. */
export function sydneyToday(now = new Date()) {
  return new Intl.DateTimeFormat('en-CA', { timeZone: 'Australia/Sydney', year: 'numeric', month: '2-digit', day: '2-digit' }).format(now);
}

/** monthRange is the first and last day (YYYY-MM-DD) of a month key (YYYY-MM). */
export function monthRange(key) {
  const [y, m] = key.split('-').map(Number);
  const last = new Date(Date.UTC(y, m, 0)).getUTCDate();
  return [`${key}-01`, `${key}-${String(last).padStart(2, '0')}`];
}

/**
 * months draws one column per month of data (zero months as a marked baseline). With
 * opts.href(key) each column is a link (to that month's notices); the month holding
 * opts.today (YYYY-MM-DD) is marked partial: it is still filling.
 */
export function months(data, title, opts = {}) {
  const W = 960, H = 280, L = 56, R = 12, T = 14, B = 44;
  const max = niceMax(Math.max(0, ...data.map((d) => d.count)));
  const n = Math.max(data.length, 1);
  const step = (W - L - R) / n;
  const bw = Math.max(1, Math.min(40, step * 0.72));
  const y = (v) => T + (H - T - B) * (1 - v / max);
  const current = opts.today ? opts.today.slice(0, 7) : '';
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart months', role: opts.href ? 'group' : 'img', 'aria-label': `${title}: ${data.length} months, ${fmt(data.reduce((a, d) => a + d.count, 0))} notices` });
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    svg.append(s('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'grid' }),
      s('text', { x: L - 8, y: y(v) + 4, class: 'tick', 'text-anchor': 'end' }, fmt(Math.round(v))));
  }
  const every = Math.ceil(n / 12);
  let partial = null;
  data.forEach((d, i) => {
    const x = L + i * step + (step - bw) / 2;
    const part = d.key === current;
    if (part) partial = d;
    const what = `${monthLabel(d.key)}: ${fmt(d.count)} notice${d.count === 1 ? '' : 's'}${part ? ` so far (the month is partial, to ${opts.today})` : ''}`;
    // The full column height is the target, so a month with few notices is as easy to click as a busy one.
    const g = s('g', { class: 'bar' + (d.count === 0 ? ' zero' : '') + (part ? ' partial' : ''), 'data-key': d.key, 'data-count': d.count },
      s('title', {}, what),
      opts.href ? s('rect', { x: L + i * step, y: T, width: step, height: H - T - B, class: 'hit' }) : null,
      s('rect', { x, y: y(d.count), width: bw, height: Math.max(0, y(0) - y(d.count)), class: 'col' }),
      d.count === 0 ? s('line', { x1: x, x2: x + bw, y1: y(0) - 1, y2: y(0) - 1, class: 'zeromark' }) : null);
    svg.append(opts.href ? s('a', { href: opts.href(d.key), 'aria-label': what }, g) : g);
    if (i % every === 0) {
      // A label near either end is anchored to it, so it is never cut off by the chart's edge.
      const cx = x + bw / 2;
      const anchor = cx + 26 > W ? 'end' : cx - 26 < 0 ? 'start' : 'middle';
      const tx = anchor === 'end' ? W - 2 : anchor === 'start' ? 2 : cx;
      svg.append(s('text', { x: tx, y: H - B + 18, class: 'tick', 'text-anchor': anchor }, monthLabel(d.key)));
    }
  });
  svg.append(s('line', { x1: L, x2: W - R, y1: y(0), y2: y(0), class: 'axis' }));
  const notes = [];
  if (partial) notes.push(h('span', { class: 'partialnote', id: 'partial-note' }, h('span', { class: 'swatch', 'aria-hidden': 'true' }), ` ${monthLabel(partial.key)} is partial: notices to ${opts.today}.`));
  if (opts.href) notes.push(' Click a month for its notices.');
  return h('figure', { class: 'figure' }, h('figcaption', {}, title), svg,
    notes.length ? h('p', { class: 'help' }, notes) : null,
    dataTable(title, 'Month', data, (k) => monthLabel(k) + (k === current ? ' (partial)' : '')));
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
