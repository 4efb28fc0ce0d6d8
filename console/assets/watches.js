// #/watches and #/watches/{id}: the account's watches, one watch's matches
// (cursor paging with next_since) and its webhook delivery records. Needs
// the account key; a read key is told so.
import { h, fill, fmt, errorBox } from './dom.js';
import * as api from './api.js';
import { companyLink, noticeDialog } from './search.js';

function needAccount(box) {
  fill(box, h('h1', {}, 'Watches'), h('div', { class: 'alert', role: 'alert' }, h('strong', {}, 'account_required'),
    ': watches and their deliveries need the account key. Sign out and sign in with it.'));
}

function filtersText(f) {
  if (!f) return '—';
  const parts = Object.entries(f).filter(([, v]) => v !== null && v !== undefined && v !== '' && !(Array.isArray(v) && !v.length))
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : v}`);
  return parts.length ? parts.join('; ') : 'none';
}

async function list(box, ctx) {
  const res = await api.get('/v1/watches');
  if (!ctx.current()) return;
  fill(box, h('h1', {}, 'Watches'),
    res.data.length ? h('table', { class: 'results' },
      h('caption', { class: 'vh' }, 'Watches'),
      h('thead', {}, h('tr', {}, ['Name', 'State', 'Companies', 'Filters', 'Webhook', 'Created'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, res.data.map((w) => h('tr', {},
        h('td', {}, h('a', { href: '#/watches/' + w.id }, w.name || w.id)),
        h('td', {}, h('span', { class: 'badge ' + (w.active ? 'matched' : 'unresolved') }, w.active ? 'active' : 'inactive')),
        h('td', { class: 'num' }, fmt(w.identifier_count)),
        h('td', {}, filtersText(w.filters)),
        h('td', { class: 'mono small' }, w.webhook_url || '—'),
        h('td', { class: 'nowrap' }, w.created_at.slice(0, 10))))))
      : h('p', { class: 'empty' }, 'No watches yet. Create them with POST /v1/watches (see /docs).'));
}

async function one(box, id, ctx) {
  const [w, d] = await Promise.all([api.get('/v1/watches/' + encodeURIComponent(id)), api.get('/v1/watches/' + encodeURIComponent(id) + '/deliveries')]);
  if (!ctx.current()) return;
  const matches = h('tbody', {});
  const more = h('button', { type: 'button', class: 'ghost', id: 'more' }, 'Load more');
  const status = h('p', { class: 'help', 'aria-live': 'polite' });
  let since = 0;
  let shown = 0;
  const load = async () => {
    more.disabled = true;
    try {
      const page = await api.get(`/v1/watches/${encodeURIComponent(id)}/matches?since=${since}&limit=100`);
      for (const n of page.data) {
        matches.append(h('tr', {}, h('td', { class: 'num' }, n.notice_seq), h('td', { class: 'nowrap' }, n.published_date), h('td', {}, companyLink(n)),
          h('td', {}, n.notice_purpose), h('td', {}, n.state),
          h('td', {}, h('button', { type: 'button', class: 'link', onclick: () => noticeDialog(n) }, 'Details'))));
      }
      shown += page.data.length;
      since = page.next_since;
      more.hidden = !page.has_more;
      status.textContent = `${fmt(shown)} match${shown === 1 ? '' : 'es'} shown${page.has_more ? '' : ' (all)'}; next poll since=${page.next_since}.`;
    } catch (e) {
      status.replaceChildren(errorBox(e));
    } finally {
      more.disabled = false;
    }
  };
  more.addEventListener('click', load);
  fill(box, h('p', {}, h('a', { href: '#/watches' }, '← All watches')),
    h('h1', {}, w.name || w.id),
    h('dl', { class: 'kv' },
      h('dt', {}, 'Id'), h('dd', { class: 'mono' }, w.id),
      h('dt', {}, 'State'), h('dd', {}, w.active ? 'active' : `inactive: ${w.deactivated_reason || ''}`),
      h('dt', {}, 'Companies'), h('dd', {}, fmt(w.identifier_count), w.unresolved && w.unresolved.length ? ` (${fmt(w.unresolved.length)} unresolved)` : ''),
      h('dt', {}, 'Filters'), h('dd', {}, filtersText(w.filters)),
      h('dt', {}, 'Webhook'), h('dd', { class: 'mono' }, w.webhook_url || 'none'),
      h('dt', {}, 'Alert email'), h('dd', {}, w.alert_email || 'none')),
    h('section', { 'aria-labelledby': 'm-title' }, h('h2', { id: 'm-title' }, 'Matches'),
      h('table', { class: 'results' }, h('caption', { class: 'vh' }, 'Matching notices, in arrival order'),
        h('thead', {}, h('tr', {}, ['Seq', 'Published', 'Company', 'Purpose', 'State', ''].map((c) => h('th', { scope: 'col' }, c)))), matches),
      status, more),
    h('section', { 'aria-labelledby': 'd-title' }, h('h2', { id: 'd-title' }, 'Webhook deliveries'),
      d.data.length ? h('table', { class: 'results' }, h('caption', { class: 'vh' }, 'Delivery records, newest first'),
        h('thead', {}, h('tr', {}, ['Delivery', 'Notice', 'Status', 'Attempts', 'Last error', 'Next attempt', 'Delivered', 'Updated'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, d.data.map((r) => h('tr', {},
          h('td', { class: 'mono small' }, r.id), h('td', { class: 'mono small' }, r.notice_id),
          h('td', {}, h('span', { class: 'badge ' + (r.status === 'delivered' ? 'matched' : r.status === 'dead' ? 'unresolved' : 'unmatched') }, r.status)),
          h('td', { class: 'num' }, r.attempts), h('td', {}, r.last_error || '—'),
          h('td', { class: 'nowrap' }, r.next_attempt_at || '—'), h('td', { class: 'nowrap' }, r.delivered_at || '—'), h('td', { class: 'nowrap' }, r.updated_at)))))
        : h('p', { class: 'empty' }, w.webhook_url ? 'No deliveries yet: one is made when a new matching notice arrives.' : 'No webhook registered, so no deliveries.')));
  await load();
}

/** watchesView lists the watches, or shows one (#/watches/{id}). */
export async function watchesView(box, r, ctx) {
  if (ctx.kind !== 'account') {
    needAccount(box);
    return;
  }
  if (r.arg) await one(box, r.arg, ctx);
  else await list(box, ctx);
}
