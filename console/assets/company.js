// #/company/{acn_or_abn}: register data, former names and the company's
// notices on a timeline, newest first, grouped by year.
import { h, fill, fmt, say, errorBox, sourceLink } from './dom.js';
import * as api from './api.js';
import { noticeDialog } from './search.js';
import { codeNode } from './register.js';

function lookupForm(value) {
  const input = h('input', { id: 'company-id', name: 'id', inputmode: 'numeric', value: value || '', placeholder: '9-digit ACN or 11-digit ABN', required: true });
  const form = h('form', { class: 'query lookup', role: 'search', 'aria-label': 'Open a company' },
    h('div', { class: 'row' }, h('div', { class: 'field grow' }, h('label', { for: 'company-id' }, 'ACN or ABN'), input),
      h('button', { type: 'submit', class: 'primary' }, 'Open company')));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const id = input.value.replace(/\s+/g, '');
    if (id) location.hash = '#/company/' + encodeURIComponent(id);
  });
  return form;
}

const REGISTER = [
  ['name', 'Registered name'], ['status', 'Status'], ['type', 'Type'], ['class', 'Class'], ['sub_class', 'Sub-class'],
  ['registered_on', 'Registered on'], ['deregistered_on', 'Deregistered on'], ['current_name', 'Current name'],
  ['current_name_start', 'Current name since'], ['previous_state', 'Previous state'], ['state_registration_number', 'State registration number'],
];

function timeline(notices) {
  const byYear = new Map();
  for (const n of notices) {
    const y = n.published_date.slice(0, 4);
    if (!byYear.has(y)) byYear.set(y, []);
    byYear.get(y).push(n);
  }
  const ol = h('ol', { class: 'timeline', 'aria-label': 'Notices, newest first' });
  for (const [year, list] of byYear) {
    ol.append(h('li', { class: 'year' }, h('h3', {}, year),
      h('ol', {}, list.map((n) => h('li', { class: 'event p-' + (n.notice_purpose || '').toLowerCase().replace(/[^a-z]/g, ''), 'data-id': n.id },
        h('time', { datetime: n.published_date }, n.published_date),
        h('div', { class: 'what' },
          h('button', { type: 'button', class: 'link strong', onclick: () => noticeDialog(n) }, n.notice_type),
          h('div', { class: 'muted' }, [n.notice_purpose, n.appointment_type, n.state, n.status].filter(Boolean).join(' · ')),
          n.practitioners && n.practitioners.length ? h('div', { class: 'muted' }, n.practitioners.map((p) => p.name + (p.firm ? ` (${p.firm})` : '')).join('; ')) : null,
          n.source_url ? sourceLink(n.source_url, { class: 'small' }, 'Source notice ↗') : null))))));
  }
  return ol;
}

/** companyView renders one company, or the lookup form without an identifier. */
export async function companyView(box, r, ctx) {
  if (!r.arg) {
    fill(box, h('h1', {}, 'Company'), lookupForm(''));
    return;
  }
  fill(box, lookupForm(r.arg), h('p', { class: 'help', 'aria-busy': 'true' }, 'Loading…'));
  try {
    const c = await api.get('/v1/companies/' + encodeURIComponent(r.arg));
    if (!ctx.current()) return;
    const reg = c.register;
    const former = reg && reg.former_names ? reg.former_names : [];
    fill(box, lookupForm(r.arg),
      h('header', { class: 'companyhead' },
        h('h1', { id: 'company-name' }, c.name || r.arg),
        h('p', { class: 'ids mono' }, c.acn ? `ACN ${c.acn}` : null, c.acn && c.abn ? ' · ' : null, c.abn ? `ABN ${c.abn}` : null),
        h('p', {}, h('strong', { id: 'notice-count', 'data-count': c.notice_count }, fmt(c.notice_count)), ` notice${c.notice_count === 1 ? '' : 's'}`,
          c.acn ? [' · ', h('a', { href: '#/search?include_deregistration=true&acn=' + encodeURIComponent(c.acn) }, 'search them')] : null)),
      h('div', { class: 'two' },
        h('section', { class: 'card', 'aria-labelledby': 'reg-title' }, h('h2', { id: 'reg-title' }, 'Register'),
          reg ? h('dl', { class: 'kv' }, REGISTER.filter(([k]) => reg[k]).map(([k, l]) => [h('dt', {}, l), h('dd', { 'data-field': k }, codeNode(k, reg[k]))]))
            : h('p', { class: 'help' }, 'The company register does not hold this company; what is shown comes from its notices.'),
          h('h3', {}, 'Former names'),
          former.length ? h('ul', { id: 'former-names' }, former.map((n) => h('li', {}, n))) : h('p', { class: 'help' }, 'None recorded.')),
        h('section', { class: 'card', 'aria-labelledby': 'tl-title' }, h('h2', { id: 'tl-title' }, 'Notices on a timeline'),
          c.notices.length ? timeline(c.notices) : h('p', { class: 'empty' }, 'No notices for this company.'))));
    say(`${c.name || r.arg}: ${fmt(c.notice_count)} notices.`);
  } catch (e) {
    if (ctx.current()) fill(box, lookupForm(r.arg), errorBox(e));
  }
}
