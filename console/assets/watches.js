// #/watches and #/watches/{id}: the account's watches, made and managed
// here: create one from a pasted list or a CSV file with filters; rename,
// deactivate, reactivate, delete; register, rotate (the secret shown once)
// and remove its webhook, send a test delivery; one watch's matches (cursor
// paging with next_since) and its delivery records. Needs the account key;
// a read key is told so.
import { h, fill, fmt, say, errorBox } from './dom.js';
import * as api from './api.js';
import { companyLink, noticeDialog, FACETS } from './search.js';
import { identifiers } from './csv.js';

function needAccount(box) {
  fill(box, h('h1', {}, 'Watches'), h('div', { class: 'alert', role: 'alert' }, h('strong', {}, 'account_required'),
    ': watches and their deliveries need the account key. Sign out and sign in with it.'));
}

function filtersText(f) {
  if (!f) return '—';
  // include_deregistration true is a watch's default, not a filter; false is shown.
  const parts = Object.entries(f).filter(([k, v]) => v !== null && v !== undefined && v !== '' && !(k === 'include_deregistration' && v === true) && !(Array.isArray(v) && !v.length))
    .map(([k, v]) => k === 'include_deregistration' ? 'deregistration notices left out' : `${k}: ${Array.isArray(v) ? v.join(', ') : v}`);
  return parts.length ? parts.join('; ') : 'none';
}

/** stateBadge shows a watch's state: active in the success colour, inactive muted. */
function stateBadge(w) {
  return h('span', { class: 'badge ' + (w.active ? 'ok' : 'off'), 'data-active': String(!!w.active) }, w.active ? 'active' : 'inactive');
}

/** deliveryBadge shows a delivery's status: delivered as success, dead as failure, others pending. */
function deliveryBadge(status) {
  return h('span', { class: 'badge ' + (status === 'delivered' ? 'ok' : status === 'dead' ? 'bad' : 'warn') }, status);
}

function idFor(prefix, facet, value) {
  return prefix + facet + '-' + value.replace(/[^A-Za-z0-9]/g, '_');
}

// filterFields are the create form's filters: a checkbox list per facet (values from
// /v1/filters), the words and deregistration. read() gives the watch's filters object.
function filterFields() {
  const q = h('input', { id: 'w-q', name: 'q', type: 'text', 'aria-describedby': 'w-q-help' });
  const dereg = h('input', { id: 'w-dereg', name: 'include_deregistration', type: 'checkbox', checked: true });
  const lists = h('div', { class: 'wfacets' }, h('p', { class: 'help' }, 'Loading the filter values…'));
  api.get('/v1/filters?include_deregistration=true').then((res) => {
    fill(lists, FACETS.map(([k, label]) => h('fieldset', { class: 'facet' + ((res[k] || []).length > 8 ? ' long' : '') }, h('legend', {}, label),
      (res[k] || []).length ? h('ul', {}, res[k].map((v) => h('li', {},
        h('input', { type: 'checkbox', id: idFor('wf-', k, v.value), name: k, value: v.value }),
        h('label', { for: idFor('wf-', k, v.value) }, v.value)))) : h('p', { class: 'help' }, 'None'))));
  }, (e) => fill(lists, errorBox(e)));
  const node = h('details', { class: 'wfilters', id: 'w-filters' }, h('summary', {}, 'Filters (optional): only notices that pass every filter match'),
    lists,
    h('label', { for: 'w-q' }, 'Words'), q,
    h('p', { class: 'help', id: 'w-q-help' }, 'The search grammar: words, "phrases", OR, -exclude, prefix*.'),
    h('div', { class: 'check' }, dereg, h('label', { for: 'w-dereg' }, 'Include deregistration notices (a watch includes them unless told not to)')));
  const read = () => {
    const f = {};
    for (const [k] of FACETS) {
      const v = [...lists.querySelectorAll(`input[name="${k}"]:checked`)].map((i) => i.value);
      if (v.length) f[k] = v;
    }
    if (q.value.trim()) f.q = q.value.trim();
    if (!dereg.checked) f.include_deregistration = false;
    return f;
  };
  return { node, read };
}

// createForm makes a watch from a name, pasted identifiers or a CSV file (a column named
// acn, abn or identifier, else one a line), filters and an alert email; it opens the new
// watch.
function createForm() {
  const name = h('input', { id: 'w-new-name', name: 'name', type: 'text', maxlength: 200 });
  const ids = h('textarea', { id: 'w-ids', name: 'identifiers', rows: 5, spellcheck: 'false', 'aria-describedby': 'w-ids-help', placeholder: '000000019\n51 824 753 556' });
  const file = h('input', { id: 'w-file', name: 'file', type: 'file', accept: '.csv,.txt,text/csv,text/plain' });
  const info = h('p', { class: 'help', id: 'w-file-info', 'aria-live': 'polite' });
  const email = h('input', { id: 'w-new-email', name: 'alert_email', type: 'email', autocomplete: 'email', 'aria-describedby': 'w-email-help' });
  const err = h('div', {});
  const go = h('button', { type: 'submit', class: 'primary', id: 'w-create' }, 'Create watch');
  const filters = filterFields();
  let fromFile = null; // { name, ids } of a chosen file
  file.addEventListener('change', async () => {
    const f = file.files[0];
    if (!f) return;
    const list = identifiers(await f.text());
    fromFile = { name: f.name, ids: list.ids };
    info.textContent = `${f.name}: ${fmt(list.ids.length)} identifier${list.ids.length === 1 ? '' : 's'} from ${fmt(list.rows)} row${list.rows === 1 ? '' : 's'}` +
      (list.column ? ` (column ${list.column})` : ' (one a line)') + '.';
    ids.value = '';
  });
  ids.addEventListener('input', () => {
    if (fromFile && ids.value.trim()) {
      fromFile = null;
      file.value = '';
      info.textContent = '';
    }
  });
  const form = h('form', { class: 'card', id: 'w-new', 'aria-labelledby': 'w-new-title' },
    h('h2', { id: 'w-new-title' }, 'New watch'),
    h('label', { for: 'w-new-name' }, 'Name'), name,
    h('label', { for: 'w-ids' }, 'Companies to watch (ACNs or ABNs)'), ids,
    h('p', { class: 'help', id: 'w-ids-help' }, 'One per line, or CSV with a header row and a column named acn, abn or identifier. Leave empty for a watch on the filters alone.'),
    h('label', { for: 'w-file' }, 'Or a CSV file'), file, info,
    filters.node,
    h('label', { for: 'w-new-email' }, 'Alert email (optional)'), email,
    h('p', { class: 'help', id: 'w-email-help' }, 'A daily digest of new matches, and a message if the watch is deactivated.'),
    err, h('div', { class: 'row end' }, go));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    fill(err);
    const list = fromFile ? fromFile.ids : identifiers(ids.value).ids;
    const body = { name: name.value.trim(), identifiers: list, filters: filters.read() };
    if (email.value.trim()) body.alert_email = email.value.trim();
    go.disabled = true;
    try {
      const w = await api.send('POST', '/v1/watches', body);
      say(`Watch ${w.name || w.id} created with ${fmt(w.identifier_count)} companies.`);
      location.hash = '#/watches/' + encodeURIComponent(w.id);
    } catch (e) {
      fill(err, errorBox(e));
    } finally {
      go.disabled = false;
    }
  });
  return form;
}

async function list(box, ctx) {
  const res = await api.get('/v1/watches');
  if (!ctx.current()) return;
  const create = h('details', { class: 'create', id: 'w-create-open', open: !res.data.length }, h('summary', { class: 'btn primary' }, 'New watch'), createForm());
  fill(box, h('h1', {}, 'Watches'), create,
    res.data.length ? h('div', { class: 'scrollx' }, h('table', { class: 'results', id: 'watch-list' },
      h('caption', { class: 'vh' }, 'Watches'),
      h('thead', {}, h('tr', {}, ['Name', 'State', 'Companies', 'Filters', 'Webhook', 'Created'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, res.data.map((w) => h('tr', { 'data-id': w.id },
        h('td', {}, h('a', { href: '#/watches/' + w.id }, w.name || w.id)),
        h('td', {}, stateBadge(w)),
        h('td', { class: 'num' }, fmt(w.identifier_count)),
        h('td', {}, filtersText(w.filters)),
        h('td', { class: 'mono small wrap' }, w.webhook_url || '—'),
        h('td', { class: 'nowrap' }, w.created_at.slice(0, 10)))))))
      : h('p', { class: 'empty' }, 'No watches yet: make one above.'));
}

// settings is the watch's name and alert email (PATCH), its state (activate or
// deactivate) and deleting it, each confirming in place.
function settings(w, redraw) {
  const path = '/v1/watches/' + encodeURIComponent(w.id);
  const err = h('div', { id: 'w-settings-error' });
  const name = h('input', { id: 'w-name', name: 'name', type: 'text', value: w.name || '', maxlength: 200 });
  const email = h('input', { id: 'w-email', name: 'alert_email', type: 'email', value: w.alert_email || '', autocomplete: 'email' });
  const act = async (what, fn) => {
    fill(err);
    try {
      await fn();
      await redraw(what);
    } catch (e) {
      fill(err, errorBox(e));
    }
  };
  const form = h('form', { class: 'row', 'aria-label': 'Name and alert email' },
    h('div', { class: 'field grow' }, h('label', { for: 'w-name' }, 'Name'), name),
    h('div', { class: 'field grow' }, h('label', { for: 'w-email' }, 'Alert email'), email),
    h('button', { type: 'submit', class: 'ghost', id: 'w-save' }, 'Save'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const patch = {};
    if (name.value.trim() !== (w.name || '')) patch.name = name.value.trim();
    if (email.value.trim() !== (w.alert_email || '')) patch.alert_email = email.value.trim() || null;
    if (!Object.keys(patch).length) {
      fill(err, h('p', { class: 'help' }, 'Nothing changed.'));
      return;
    }
    act('Saved.', () => api.send('PATCH', path, patch));
  });
  const toggle = h('button', { type: 'button', class: 'ghost', id: 'w-toggle' }, w.active ? 'Deactivate' : 'Activate');
  toggle.addEventListener('click', () => act(w.active ? 'Deactivated: nothing is delivered until it is activated again.' : 'Activated.',
    () => api.send('PATCH', path, { active: !w.active })));
  const del = confirmButton('w-delete', 'Delete watch', 'Delete this watch, its matches list and pending deliveries?', 'Delete', async () => {
    fill(err);
    try {
      await api.send('DELETE', path);
      say(`Watch ${w.name || w.id} deleted.`);
      location.hash = '#/watches';
    } catch (e) {
      fill(err, errorBox(e));
    }
  });
  return h('section', { class: 'card', 'aria-labelledby': 's-title' }, h('h2', { id: 's-title' }, 'Settings'),
    form, h('div', { class: 'row actions' }, toggle, del), err);
}

// confirmButton is a button that asks again in place before doing what it says.
function confirmButton(id, label, question, yes, onYes, cls = 'danger') {
  const wrap = h('span', { class: 'confirm' });
  const start = h('button', { type: 'button', class: 'ghost ' + cls, id }, label);
  const ask = () => {
    const ok = h('button', { type: 'button', class: 'primary ' + cls, id: id + '-confirm' }, yes);
    const no = h('button', { type: 'button', class: 'ghost', id: id + '-cancel' }, 'Cancel');
    ok.addEventListener('click', onYes);
    no.addEventListener('click', () => {
      fill(wrap, start);
      start.focus();
    });
    fill(wrap, h('span', { role: 'alert' }, question, ' '), ok, ' ', no);
    no.focus();
  };
  start.addEventListener('click', ask);
  return fill(wrap, start);
}

// secretBox shows a webhook secret once, after registering or rotating.
function secretBox(secret) {
  const input = h('input', { id: 'secret', type: 'text', readonly: true, value: secret, class: 'mono', spellcheck: 'false', 'aria-describedby': 'secret-help' });
  const copy = h('button', { type: 'button', class: 'ghost', id: 'secret-copy' }, 'Copy');
  copy.addEventListener('click', async () => {
    input.select();
    try {
      await navigator.clipboard.writeText(secret);
      say('Secret copied.');
    } catch {
      say('Select the secret and copy it.');
    }
  });
  return h('div', { class: 'secret', id: 'secret-box' },
    h('label', { for: 'secret' }, 'Signing secret'), h('div', { class: 'row' }, input, copy),
    h('p', { class: 'help', id: 'secret-help' }, 'Shown once: keep it now where your receiver reads it. It is not shown again; Rotate secret issues a new one and the old one stops verifying at once.'));
}

// outcome shows a test delivery's answer ({ok, status_code, error, duration_ms, ...}): a
// headline in the success or failure colour, then every plain field of the answer.
function outcome(res) {
  const ok = res.ok === true;
  const how = [res.status_code ? `HTTP ${res.status_code}` : '', typeof res.duration_ms === 'number' ? `in ${fmt(res.duration_ms)} ms` : ''].filter(Boolean).join(' ');
  const fields = Object.entries(res).filter(([, v]) => v === null || ['string', 'number', 'boolean'].includes(typeof v));
  return h('div', { class: 'testresult ' + (ok ? 'okbox' : 'badbox'), id: 'wh-test-outcome', 'data-ok': String(ok) },
    h('strong', {}, ok ? 'Test delivery accepted' : 'Test delivery failed', how ? ` (${how})` : '', !ok && res.error ? `: ${res.error}` : ''),
    h('dl', { class: 'kv' }, fields.map(([k, v]) => [h('dt', {}, k), h('dd', { class: 'mono wrap' }, v === null ? '—' : String(v))])));
}

// webhookSection registers, replaces, rotates, tests and removes the watch's webhook.
function webhookSection(w, redraw, flash) {
  const path = '/v1/watches/' + encodeURIComponent(w.id) + '/webhook';
  const err = h('div', { id: 'wh-error' });
  const result = h('div', { id: 'wh-test-result', role: 'status' });
  const url = h('input', { id: 'wh-url', name: 'url', type: 'url', required: true, 'aria-describedby': 'wh-url-help', value: '' });
  const register = h('form', { class: 'row', 'aria-label': w.webhook_url ? 'Change the webhook URL' : 'Register a webhook' },
    h('div', { class: 'field grow' }, h('label', { for: 'wh-url' }, w.webhook_url ? 'New URL' : 'Webhook URL'), url,
      h('span', { class: 'help', id: 'wh-url-help' }, 'An absolute https address; each matching notice is POSTed to it, signed with the secret.')),
    h('button', { type: 'submit', class: w.webhook_url ? 'ghost' : 'primary', id: 'wh-register' }, w.webhook_url ? 'Change URL' : 'Register'));
  register.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    fill(err);
    try {
      const res = await api.send('POST', path, { url: url.value.trim() });
      await redraw('Webhook registered: copy its secret now.', { secret: res.secret });
    } catch (e) {
      fill(err, errorBox(e));
    }
  });
  const children = [h('h2', { id: 'wh-title' }, 'Webhook')];
  if (flash && flash.secret) children.push(secretBox(flash.secret));
  if (w.webhook_url) {
    const test = h('button', { type: 'button', class: 'ghost', id: 'wh-test' }, 'Send test delivery');
    test.addEventListener('click', async () => {
      fill(err);
      fill(result, h('p', { class: 'help' }, 'Sending a test delivery…'));
      test.disabled = true;
      try {
        fill(result, outcome(await api.send('POST', path + '/test')));
      } catch (e) {
        fill(result, api.missingRoute(e)
          ? h('p', { class: 'alert', id: 'wh-test-unavailable' }, 'Test deliveries are not available on this server (POST …/webhook/test answered 404: it came in a later version).')
          : errorBox(e));
      } finally {
        test.disabled = false;
      }
    });
    const rotate = confirmButton('wh-rotate', 'Rotate secret', 'Issue a new secret? The old one stops verifying at once.', 'Rotate', async () => {
      fill(err);
      try {
        const res = await api.send('POST', path + '/rotate');
        await redraw('New secret issued: copy it now.', { secret: res.secret });
      } catch (e) {
        fill(err, errorBox(e));
      }
    }, '');
    const remove = confirmButton('wh-remove', 'Remove webhook', 'Stop delivering? Pending deliveries are dropped; the matches stay listed.', 'Remove', async () => {
      fill(err);
      try {
        await api.send('DELETE', path);
        await redraw('Webhook removed.');
      } catch (e) {
        fill(err, errorBox(e));
      }
    });
    children.push(h('p', {}, 'Deliveries go to ', h('span', { class: 'mono wrap', id: 'wh-current' }, w.webhook_url), '.'),
      h('div', { class: 'row actions' }, test, rotate, remove), result, register);
  } else {
    children.push(h('p', { class: 'help' }, 'No webhook registered: matches are only listed here and by GET …/matches.'), register);
  }
  children.push(err);
  return h('section', { class: 'card', id: 'webhook', 'aria-labelledby': 'wh-title' }, children);
}

async function one(box, id, ctx, message, flash) {
  const path = '/v1/watches/' + encodeURIComponent(id);
  const [w, d] = await Promise.all([api.get(path), api.get(path + '/deliveries')]);
  if (!ctx.current()) return;
  const redraw = async (msg, fl) => {
    say(msg);
    await one(box, id, ctx, msg, fl);
  };
  const matches = h('tbody', {});
  const more = h('button', { type: 'button', class: 'ghost', id: 'more' }, 'Load more');
  const status = h('p', { class: 'help', 'aria-live': 'polite' });
  let since = 0;
  let shown = 0;
  const load = async () => {
    more.disabled = true;
    try {
      const page = await api.get(`${path}/matches?since=${since}&limit=100`);
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
    h('h1', { id: 'w-title' }, w.name || w.id, ' ', stateBadge(w)),
    message ? h('p', { class: 'flash', id: 'w-flash' }, message) : null,
    h('dl', { class: 'kv' },
      h('dt', {}, 'Id'), h('dd', { class: 'mono' }, w.id),
      h('dt', {}, 'State'), h('dd', { id: 'w-state' }, w.active ? 'active' : `inactive: ${w.deactivated_reason || ''}`),
      h('dt', {}, 'Companies'), h('dd', {}, fmt(w.identifier_count), w.unresolved && w.unresolved.length ? ` (${fmt(w.unresolved.length)} unresolved)` : ''),
      h('dt', {}, 'Filters'), h('dd', {}, filtersText(w.filters), h('span', { class: 'help' }, ' (set when the watch is made)')),
      h('dt', {}, 'Alert email'), h('dd', {}, w.alert_email || 'none')),
    h('div', { class: 'two' }, settings(w, redraw), webhookSection(w, redraw, flash)),
    h('section', { 'aria-labelledby': 'm-title' }, h('h2', { id: 'm-title' }, 'Matches'),
      h('div', { class: 'scrollx' }, h('table', { class: 'results' }, h('caption', { class: 'vh' }, 'Matching notices, in arrival order'),
        h('thead', {}, h('tr', {}, ['Seq', 'Published', 'Company', 'Purpose', 'State', ''].map((c) => h('th', { scope: 'col' }, c)))), matches)),
      status, more),
    h('section', { 'aria-labelledby': 'd-title' }, h('h2', { id: 'd-title' }, 'Webhook deliveries'),
      d.data.length ? h('div', { class: 'scrollx' }, h('table', { class: 'results' }, h('caption', { class: 'vh' }, 'Delivery records, newest first'),
        h('thead', {}, h('tr', {}, ['Delivery', 'Notice', 'Status', 'Attempts', 'Last error', 'Next attempt', 'Delivered', 'Updated'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, d.data.map((r) => h('tr', {},
          h('td', { class: 'mono small' }, r.id), h('td', { class: 'mono small' }, r.notice_id),
          h('td', {}, deliveryBadge(r.status)),
          h('td', { class: 'num' }, r.attempts), h('td', {}, r.last_error || '—'),
          h('td', { class: 'nowrap' }, r.next_attempt_at || '—'), h('td', { class: 'nowrap' }, r.delivered_at || '—'), h('td', { class: 'nowrap' }, r.updated_at))))))
        : h('p', { class: 'empty' }, w.webhook_url ? 'No deliveries yet: one is made when a new matching notice arrives.' : 'No webhook registered, so no deliveries.')));
  await load();
  const focus = flash && flash.secret ? document.getElementById('secret') : message ? document.getElementById('w-flash') : null;
  if (focus) {
    if (focus.id === 'w-flash') focus.setAttribute('tabindex', '-1');
    focus.focus();
  }
}

/** watchesView lists the watches with the new-watch form, or shows one (#/watches/{id}). */
export async function watchesView(box, r, ctx) {
  if (ctx.kind !== 'account') {
    needAccount(box);
    return;
  }
  if (r.arg) await one(box, r.arg, ctx);
  else await list(box, ctx);
}
