// Search and stats: one filter form (q, dates, deregistration, facets with
// their counts from /v1/filters) over two views: the paged, sorted result
// list with a notice's detail, and the charts of /v1/stats. The filters
// live in the URL's fragment (#/search?q=...&state=NSW), so a view can be
// bookmarked and the back button works; the key never does.
import { h, fill, fmt, say, errorBox, download, sourceLink } from './dom.js';
import * as api from './api.js';
import { months, bars, monthRange, sydneyToday } from './chart.js';
import { describe } from './register.js';

/** FACETS are the filter lists of /v1/filters, in the order shown. */
export const FACETS = [
  ['state', 'State'],
  ['notice_purpose', 'Purpose'],
  ['appointment_type', 'Appointment type'],
  ['status', 'Company status'],
  ['notice_code', 'Notice code'],
];
const SORTS = [
  ['', 'Best first (relevance with words, else newest)'],
  ['published_desc', 'Newest first'],
  ['published_asc', 'Oldest first'],
  ['relevance', 'Relevance'],
];
const LIMITS = [20, 50, 100];

/** readFilters turns the fragment's parameters into the filter object. */
export function readFilters(params) {
  const f = { acn: params.get('acn') || '', q: params.get('q') || '', from: params.get('from') || '', to: params.get('to') || '', include_deregistration: params.get('include_deregistration') === 'true' };
  for (const [k] of FACETS) f[k] = (params.get(k) || '').split(',').filter(Boolean);
  return f;
}

/** companyID is the ACN or ABN a search box holds (9 or 11 digits, spaces allowed), else ''. */
export function companyID(text) {
  const t = String(text || '').trim();
  if (!/^[0-9 ]+$/.test(t)) return '';
  const d = t.replace(/ /g, '');
  return d.length === 9 || d.length === 11 ? d : '';
}

/** nameQuery is true when the words could be a company name: no operators of the q grammar. */
export function nameQuery(q) {
  return !!q && !/["*()]|(^|\s)-|\b(OR|AND|NOT)\b/.test(q) && !companyID(q);
}

function hashFor(view, f, extra = {}) {
  return '#/' + view + api.query(Object.assign({}, f, extra));
}

function go(view, f, extra) {
  const target = hashFor(view, f, extra);
  if (location.hash === target) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else location.hash = target;
}

function idFor(facet, value) {
  return 'f-' + facet + '-' + value.replace(/[^A-Za-z0-9]/g, '_');
}

// facetCounts asks /v1/filters once with every filter, and once more for
// each facet with a selection, without that facet: a facet's counts are what
// choosing each of its values would give with the other filters kept.
async function facetCounts(f) {
  const base = api.get('/v1/filters' + api.query(f));
  const own = FACETS.filter(([k]) => f[k].length).map(async ([k]) => [k, await api.get('/v1/filters' + api.query(Object.assign({}, f, { [k]: [] })))]);
  const [all, ...others] = await Promise.all([base, ...own]);
  const out = {};
  for (const [k] of FACETS) out[k] = all[k];
  for (const [k, res] of others) out[k] = res[k];
  return out;
}

function facetPanel(view, f, counts) {
  const panel = h('aside', { class: 'facets', 'aria-label': 'Filters' }, h('h2', { class: 'h3' }, 'Filters'));
  for (const [k, label] of FACETS) {
    const values = (counts[k] || []).slice();
    for (const v of f[k]) if (!values.some((x) => x.value.toLowerCase() === v.toLowerCase())) values.push({ value: v, count: 0 });
    const fs = h('fieldset', { class: 'facet' }, h('legend', {}, label));
    if (!values.length) fs.append(h('p', { class: 'help' }, 'None'));
    const many = values.length > 8;
    const list = h('ul', {});
    values.forEach((v, i) => {
      const checked = f[k].some((x) => x.toLowerCase() === v.value.toLowerCase());
      const id = idFor(k, v.value);
      const box = h('input', { type: 'checkbox', id, name: k, value: v.value, checked });
      box.addEventListener('change', () => {
        const next = Object.assign({}, f, { [k]: box.checked ? [...f[k], v.value] : f[k].filter((x) => x.toLowerCase() !== v.value.toLowerCase()) });
        go(view, next);
      });
      list.append(h('li', { class: many && i >= 8 && !checked ? 'more' : null },
        box, h('label', { for: id }, h('span', { class: 'v' }, v.value), h('span', { class: 'count', 'data-count': v.count }, fmt(v.count)))));
    });
    fs.append(list);
    if (many) {
      const more = h('button', { type: 'button', class: 'link small', 'aria-expanded': 'false' }, `Show all ${values.length}`);
      more.addEventListener('click', () => {
        const open = fs.classList.toggle('open');
        more.setAttribute('aria-expanded', String(open));
        more.textContent = open ? 'Show fewer' : `Show all ${values.length}`;
      });
      fs.append(more);
    }
    panel.append(fs);
  }
  const any = FACETS.some(([k]) => f[k].length);
  if (any) {
    panel.append(h('button', { type: 'button', class: 'ghost small', onclick: () => go(view, Object.assign({}, f, Object.fromEntries(FACETS.map(([k]) => [k, []])))) }, 'Clear filters'));
  }
  return panel;
}

function queryForm(view, f, params) {
  const q = h('input', { id: 'q', name: 'q', type: 'search', value: f.q, placeholder: 'e.g. liquidator, a company name, or an ACN/ABN', 'aria-describedby': 'qhelp', 'aria-keyshortcuts': '/' });
  const from = h('input', { id: 'from', name: 'from', type: 'date', value: f.from });
  const to = h('input', { id: 'to', name: 'to', type: 'date', value: f.to });
  const dereg = h('input', { id: 'dereg', name: 'include_deregistration', type: 'checkbox', checked: f.include_deregistration });
  const fields = [
    h('div', { class: 'field grow' }, h('label', { for: 'q' }, view === 'search' ? 'Search' : 'Words'), q,
      view === 'search' ? h('a', { href: '#results', class: 'skip inline', id: 'skip-results', onclick: skipToResults }, 'Skip to results') : null,
      h('span', { id: 'qhelp', class: 'help' }, view === 'search'
        ? 'An ACN or ABN opens the company; words search company names, notice text and practitioners ("phrases", OR, -exclude, prefix*). Press / to come back here.'
        : 'Words, "phrases", OR, -exclude, prefix*; company names, notice text and practitioners are searched.')),
    h('div', { class: 'field' }, h('label', { for: 'from' }, 'Published from'), from),
    h('div', { class: 'field' }, h('label', { for: 'to' }, 'to'), to),
  ];
  let sort, limit;
  if (view === 'search') {
    sort = h('select', { id: 'sort', name: 'sort' }, SORTS.map(([v, l]) => h('option', { value: v, selected: (params.get('sort') || '') === v }, l)));
    limit = h('select', { id: 'limit', name: 'limit' }, LIMITS.map((n) => h('option', { value: n, selected: String(n) === (params.get('limit') || '20') }, `${n} a page`)));
    fields.push(h('div', { class: 'field' }, h('label', { for: 'sort' }, 'Sort'), sort), h('div', { class: 'field' }, h('label', { for: 'limit' }, 'Page size'), limit));
  }
  if (f.acn) {
    fields.push(h('div', { class: 'field' }, h('span', { class: 'help' }, 'Company'),
      h('span', { class: 'chip' }, h('span', { class: 'mono' }, f.acn), ' ',
        h('button', { type: 'button', class: 'link small', onclick: () => go(view, Object.assign({}, f, { acn: '' })) }, 'remove'))));
  }
  const form = h('form', { class: 'query', role: 'search', 'aria-label': view === 'search' ? 'Search notices' : 'Filter the statistics' },
    h('div', { class: 'row' }, fields),
    h('div', { class: 'row end' },
      h('div', { class: 'check' }, dereg, h('label', { for: 'dereg' }, 'Include deregistration notices')),
      h('button', { type: 'submit', class: 'primary', id: 'go' }, view === 'search' ? 'Search' : 'Update charts')));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const id = view === 'search' ? companyID(q.value) : '';
    if (id) {
      location.hash = '#/company/' + id;
      return;
    }
    const next = Object.assign({}, f, { q: q.value.trim(), from: from.value, to: to.value, include_deregistration: dereg.checked });
    const extra = view === 'search' ? { sort: sort.value, limit: limit.value === '20' ? '' : limit.value } : {};
    go(view, next, extra);
  });
  return form;
}

function tabs(view, f, params) {
  const extra = view === 'search' ? {} : { sort: params.get('sort') || '', limit: params.get('limit') || '' };
  return h('div', { class: 'tabs' },
    h('a', { href: hashFor('search', f, view === 'search' ? {} : extra), class: 'tab', 'aria-current': view === 'search' ? 'page' : null }, 'Results'),
    h('a', { href: hashFor('stats', f), class: 'tab', 'aria-current': view === 'stats' ? 'page' : null }, 'Charts'));
}

// skipToResults moves the focus to the result list (the skip link's target), so the next
// Tab reaches the first result, past the filters.
function skipToResults(ev) {
  ev.preventDefault();
  const target = document.getElementById('results-table') || document.getElementById('results');
  if (target) target.focus();
}

// drawerOpen remembers the filter drawer opened or closed by hand on a narrow window while
// the page lives (a ticked filter keeps it open); on a wide window it is always open.
let drawerOpen = null;
const WIDE = '(min-width: 801px)';

function drawer(f, facets) {
  const ticked = FACETS.reduce((n, [k]) => n + f[k].length, 0);
  const d = h('details', { class: 'drawer', id: 'filters-drawer', open: window.matchMedia(WIDE).matches || !!drawerOpen },
    h('summary', { class: 'btn ghost' }, 'Filters', ticked ? ` (${ticked} ticked)` : ''), facets);
  d.addEventListener('toggle', () => {
    if (!window.matchMedia(WIDE).matches) drawerOpen = d.open;
  });
  return d;
}

async function layout(box, r, view, ctx) {
  const f = readFilters(r.params);
  const facets = h('div', { class: 'facets-slot' }, h('p', { class: 'help' }, 'Loading filters…'));
  const content = h('section', { class: 'content', id: 'results', tabindex: '-1', 'aria-label': view === 'search' ? 'Results' : 'Charts', 'aria-live': 'polite', 'aria-busy': 'true' });
  fill(box, h('h1', { class: 'vh' }, view === 'search' ? 'Search notices' : 'Statistics'),
    queryForm(view, f, r.params), tabs(view, f, r.params), h('div', { class: 'split' }, drawer(f, facets), content));
  const counts = facetCounts(f).then((c) => {
    if (ctx.current()) fill(facets, facetPanel(view, f, c));
  }, (e) => {
    if (ctx.current()) fill(facets, errorBox(e));
  });
  return { f, content, counts };
}

/** searchView is #/search: the result list, paged and sorted, with Export CSV. */
export async function searchView(box, r, ctx) {
  const { f, content, counts } = await layout(box, r, 'search', ctx);
  const page = Math.max(1, Number(r.params.get('page')) || 1);
  const limit = Number(r.params.get('limit')) || 20;
  const sort = r.params.get('sort') || '';
  const extra = { sort, limit: limit === 20 ? '' : limit };
  const names = page === 1 && nameQuery(f.q) ? companiesNamed(f.q) : null;
  try {
    const res = await api.get('/v1/notices' + api.query(Object.assign({}, f, { sort, limit, page })));
    if (!ctx.current()) return;
    const first = res.total ? (page - 1) * limit + 1 : 0;
    const last = (page - 1) * limit + res.data.length;
    const exportBtn = h('button', { type: 'button', class: 'ghost', id: 'export' }, 'Export CSV');
    exportBtn.addEventListener('click', () => exportCSV(f, sort, exportBtn));
    const head = h('div', { class: 'resulthead' },
      h('p', { class: 'total' }, h('strong', { id: 'total', 'data-total': res.total }, fmt(res.total)), ` notice${res.total === 1 ? '' : 's'}`, res.total ? ` · showing ${fmt(first)}–${fmt(last)}` : ''),
      exportBtn);
    const table = h('table', { class: 'results', id: 'results-table', tabindex: '-1' },
      h('caption', { class: 'vh' }, 'Matching notices'),
      h('thead', {}, h('tr', {}, ['Published', 'Company', 'Purpose', 'Appointment type', 'State', 'Status', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, res.data.map((n) => h('tr', { 'data-id': n.id },
        h('td', { class: 'nowrap' }, n.published_date),
        h('td', {}, companyLink(n), n.acn ? h('div', { class: 'muted mono' }, 'ACN ' + n.acn) : null, snippet(n)),
        h('td', {}, n.notice_purpose),
        h('td', {}, n.appointment_type || '—'),
        h('td', {}, n.state),
        h('td', {}, n.status),
        h('td', {}, h('button', { type: 'button', class: 'link', 'aria-label': `Details of the notice of ${n.company_name} on ${n.published_date}`, onclick: () => noticeDialog(n) }, 'Details'))))));
    const pages = Math.max(1, Math.ceil(res.total / limit));
    const maxPage = Math.min(pages, Math.floor(10000 / limit));
    // A page link that leads nowhere has no href: it is shown, but neither focused nor followed.
    const pageLink = (id, to, off, text) => h('a', { class: 'btn ghost', id, href: off ? null : hashFor('search', f, Object.assign({}, extra, { page: to })), 'aria-disabled': off ? 'true' : null }, text);
    const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' },
      pageLink('prev', page - 1, page <= 1, '← Previous'),
      h('span', {}, `Page ${fmt(page)} of ${fmt(pages)}`),
      pageLink('next', page + 1, page >= maxPage || !res.has_more, 'Next →'));
    fill(content, names ? await names : null, head, res.data.length ? h('div', { class: 'scrollx' }, table) : h('p', { class: 'empty' }, 'No notice matches. Loosen the words or the filters.'), res.total > limit ? pager : null,
      pages > maxPage ? h('p', { class: 'help' }, `Paging stops at ${fmt(maxPage * limit)} notices; narrow the filters or export CSV for the rest.`) : null);
    say(`${fmt(res.total)} notices found.`);
  } catch (e) {
    if (ctx.current()) fill(content, errorBox(e));
  } finally {
    content.setAttribute('aria-busy', 'false');
  }
  await counts;
}

async function exportCSV(f, sort, btn) {
  btn.disabled = true;
  const was = btn.textContent;
  btn.textContent = 'Exporting…';
  try {
    const text = await api.getCSV('/v1/notices' + api.query(Object.assign({}, f, { sort })));
    const rows = Math.max(0, text.split('\n').filter(Boolean).length - 1);
    download(`notices-${new Date().toISOString().slice(0, 10)}.csv`, text);
    say(`Exported ${fmt(rows)} notices as CSV.`);
  } catch (e) {
    btn.after(errorBox(e));
  } finally {
    btn.disabled = false;
    btn.textContent = was;
  }
}

/** NAMES_SHOWN is how many companies the name lookup lists above the notices. */
const NAMES_SHOWN = 8;

// companiesNamed looks the words up as a company name (GET /v1/companies?name=) and
// resolves to the panel listing what it found (null when no company has such a name: the
// notices are listed alone). It never rejects: a server without the
// route (404) is told plainly, any other failure shown as an error, and the notices are
// still listed below.
async function companiesNamed(q) {
  const panel = (...children) => h('section', { class: 'names', id: 'names', 'aria-labelledby': 'names-title' },
    h('h2', { id: 'names-title', class: 'h3' }, `Companies named like “${q}”`), children);
  try {
    const res = await api.get('/v1/companies' + api.query({ name: q, limit: NAMES_SHOWN }));
    const list = res.data || [];
    const total = typeof res.total === 'number' ? res.total : list.length;
    if (!list.length) return null; // words that name no company: the notices alone
    return panel(h('ul', { class: 'namelist' }, list.slice(0, NAMES_SHOWN).map((c) => h('li', {},
      companyLink({ acn: c.acn, abn: c.abn, company_name: c.name }),
      c.matched_name && c.matched_name !== c.name ? h('span', { class: 'muted' }, ` (formerly ${c.matched_name})`) : null,
      c.acn ? h('span', { class: 'muted mono' }, ' ACN ' + c.acn) : null,
      c.status ? h('span', { class: 'muted' }, ' · ', describe('status', c.status)) : null))),
    total > NAMES_SHOWN ? h('p', { class: 'help' }, `${fmt(total - NAMES_SHOWN)} more; add words to narrow the name.`) : null);
  } catch (e) {
    // Words too common to list companies by (over 1,000 names) are not an error of the search.
    if (e.status === 400) return panel(h('p', { class: 'help' }, e.message));
    if (api.missingRoute(e)) {
      return panel(h('p', { class: 'help', id: 'names-unavailable' }, 'Looking companies up by name is not available on this server (GET /v1/companies?name= answered 404: it came in a later version). The notices below still match company names.'));
    }
    return panel(errorBox(e));
  }
}

const ENTITIES = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&#34;': '"', '&#39;': "'", '&quot;': '"' };

/**
 * highlightParts reads a notice's highlight (GET /v1/notices with q: fragments of its text
 * as HTML, the matched words in <mark>) into [{ text, mark }] parts, entities decoded, the
 * fragments joined by a space. Only <mark> and </mark> are read as markup; anything else
 * stays text, so the console never parses the service's HTML.
 */
export function highlightParts(n) {
  const frags = Array.isArray(n.highlight) ? n.highlight.filter((f) => typeof f === 'string' && f) : [];
  const parts = [];
  frags.forEach((frag, i) => {
    if (i) parts.push({ text: ' ', mark: false });
    let mark = false;
    for (const piece of frag.split(/(<\/?mark>)/)) {
      if (piece === '<mark>') mark = true;
      else if (piece === '</mark>') mark = false;
      else if (piece) parts.push({ text: piece.replace(/&(amp|lt|gt|#34|#39|quot);/g, (e) => ENTITIES[e]), mark });
    }
  });
  return parts;
}

/** snippet is a notice's highlight as nodes (the matched words in <mark>), or null without one. */
export function snippet(n) {
  const parts = highlightParts(n);
  return parts.length ? h('div', { class: 'snippet' }, parts.map((p) => (p.mark ? h('mark', {}, p.text) : p.text))) : null;
}

/** companyLink links a notice's company to its page (by ACN, else ABN). */
export function companyLink(n) {
  const id = n.acn || n.abn;
  return id ? h('a', { href: '#/company/' + id }, n.company_name || id) : h('span', {}, n.company_name || '—');
}

/** noticeDialog shows one notice in a modal dialog with its source link. */
export function noticeDialog(n) {
  const close = h('button', { type: 'button', class: 'ghost', autofocus: true }, 'Close');
  const rows = [
    ['Published', n.published_date], ['Notice type', n.notice_type], ['Purpose', n.notice_purpose],
    ['Appointment type', n.appointment_type || '—'], ['State', n.state], ['Company status', n.status],
    ['ACN', n.acn || '—'], ['ABN', n.abn || '—'], ['Notice id', n.id], ['Source id', n.source_id],
  ];
  const dlg = h('dialog', { class: 'notice', 'aria-labelledby': 'dlg-title' },
    h('div', { class: 'dlghead' }, h('h2', { id: 'dlg-title' }, n.company_name || n.notice_type), close),
    h('dl', { class: 'kv' }, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
    n.practitioners && n.practitioners.length ? [h('h3', {}, 'Practitioners'),
      h('ul', {}, n.practitioners.map((p) => h('li', {}, p.name, p.firm ? `, ${p.firm}` : '', p.role ? ` (${p.role})` : '')))] : null,
    h('h3', {}, 'Notice text'), h('p', { class: 'text' }, n.text || '—'),
    h('p', { class: 'source' }, n.source_url
      ? sourceLink(n.source_url, { id: 'source' }, 'Open the source notice ↗')
      : 'No source link for this notice.', h('span', { class: 'help' }, ' Check the source notice before relying on the data.')),
    n.acn || n.abn ? h('p', {}, h('a', { href: '#/company/' + (n.acn || n.abn), onclick: () => dlg.close() }, 'All notices of this company →')) : null);
  close.addEventListener('click', () => dlg.close());
  dlg.addEventListener('close', () => dlg.remove());
  document.body.append(dlg);
  dlg.showModal();
}

/** statsView is #/stats: the month series, by state and by purpose, for the current filters. */
export async function statsView(box, r, ctx) {
  const { f, content, counts } = await layout(box, r, 'stats', ctx);
  const get = (g) => api.get('/v1/stats' + api.query(Object.assign({ group_by: g }, f)));
  try {
    const [m, st, p] = await Promise.all([get('month'), get('state'), get('notice_purpose')]);
    if (!ctx.current()) return;
    const pick = (k) => (v) => go('stats', Object.assign({}, f, { [k]: [v] }));
    const range = m.data.length ? `${m.data[0].key} to ${m.data[m.data.length - 1].key}` : 'no months';
    fill(content,
      h('p', { class: 'total' }, h('strong', { id: 'total', 'data-total': m.total }, fmt(m.total)), ` notices · ${range}`),
      months(m.data, 'Notices by month of publication', { today: sydneyToday(), href: (k) => {
        const [from, to] = monthRange(k);
        return hashFor('search', Object.assign({}, f, { from, to }));
      } }),
      h('div', { class: 'two' }, bars(st.data, 'By state', 'State', pick('state')), bars(p.data, 'By purpose', 'Purpose', pick('notice_purpose'))));
    say(`Charts of ${fmt(m.total)} notices.`);
  } catch (e) {
    if (ctx.current()) fill(content, errorBox(e));
  } finally {
    content.setAttribute('aria-busy', 'false');
  }
  await counts;
}
