// The console's shell: sign in, the section router (#/search, #/stats,
// #/company/ACN, #/screen, #/watches) and sign out. The key is kept in
// sessionStorage (api.js) and never put in a URL.
import { h, fill, say, errorBox } from './dom.js';
import * as api from './api.js';
import { searchView, statsView } from './search.js';
import { companyView } from './company.js';
import { screenView } from './screen.js';
import { watchesView } from './watches.js';

const KIND = 'noticesd.kind';
const main = () => document.getElementById('main');

function signInView(message) {
  const input = h('input', { id: 'key', name: 'key', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, 'aria-describedby': 'keyhelp' });
  const err = h('div', { id: 'signin-error' });
  // method post: should the script's handler ever not run, the key still never lands in a URL.
  const form = h('form', { class: 'card signin', method: 'post', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Sign in'),
    h('p', {}, 'Enter your API key. It is kept in this tab only (session storage) and sent in the X-API-Key header; closing the tab forgets it.'),
    h('label', { for: 'key' }, 'API key'),
    input,
    h('p', { id: 'keyhelp', class: 'help' }, 'A read key searches, charts and screens; the account key also shows watches and their deliveries.'),
    err,
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'));
  if (message) fill(err, errorBox({ code: 'unauthorised', message }));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const k = input.value.trim();
    if (!k) return;
    api.setKey(k);
    fill(err);
    try {
      await api.get('/v1/stats?group_by=state');
      let kind = 'read';
      try {
        await api.get('/v1/watches');
        kind = 'account';
      } catch (e) {
        if (e.code !== 'account_required') throw e;
      }
      sessionStorage.setItem(KIND, kind);
      input.value = '';
      if (!location.hash || location.hash === '#/signin') location.hash = '#/search';
      render();
    } catch (e) {
      api.forget();
      fill(err, errorBox(e));
      input.focus();
    }
  });
  fill(main(), form);
  input.focus();
}

function chrome(signedIn) {
  document.getElementById('nav').hidden = !signedIn;
  document.getElementById('who').hidden = !signedIn;
  const kind = sessionStorage.getItem(KIND);
  document.getElementById('keykind').textContent = kind === 'account' ? 'Account key' : 'Read key';
}

function route() {
  const raw = location.hash.replace(/^#/, '') || '/search';
  const [path, qs] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { name: parts[0] || 'search', arg: parts[1] || '', params: new URLSearchParams(qs || '') };
}

const views = { search: searchView, stats: statsView, company: companyView, screen: screenView, watches: watchesView };

let rendering = 0;
// focusNext names the element the next section shown is to focus ("/" from another section).
let focusNext = '';

async function render() {
  const signedIn = !!api.key();
  chrome(signedIn);
  if (!signedIn) {
    signInView();
    return;
  }
  const r = route();
  const view = views[r.name] || searchView;
  for (const a of document.querySelectorAll('#nav a')) {
    const on = a.dataset.view === r.name;
    if (on) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const my = ++rendering;
  const box = h('div', { class: 'view' });
  // While a section loads, main is busy; once it is complete, data-rendered names the
  // address it shows (tests and assistive technology wait for that, not for a guess).
  main().setAttribute('aria-busy', 'true');
  delete main().dataset.rendered;
  fill(main(), box);
  try {
    await view(box, r, { kind: sessionStorage.getItem(KIND), current: () => my === rendering });
  } catch (e) {
    if (my === rendering) fill(box, errorBox(e));
  }
  if (my === rendering) {
    main().setAttribute('aria-busy', 'false');
    main().dataset.rendered = location.hash;
  }
}

window.addEventListener('hashchange', async () => {
  // A filter ticked or a page turned keeps the focus where it was; a new section puts it on the content.
  const id = focusNext || (document.activeElement && document.activeElement.id);
  focusNext = '';
  await render();
  const el = id && document.getElementById(id);
  if (el) el.focus();
  else main().focus({ preventScroll: true });
});
window.addEventListener('noticesd:unauthorised', (ev) => {
  api.forget();
  chrome(false);
  signInView(ev.detail);
});
// The skip links move the focus without touching the address (the address is the route).
for (const a of document.querySelectorAll('a.skip[data-target]')) {
  a.addEventListener('click', (ev) => {
    ev.preventDefault();
    const el = document.getElementById(a.dataset.target);
    if (el) el.focus();
  });
}
// "/" anywhere but in a field goes to the search box (opening the search when elsewhere).
document.addEventListener('keydown', (ev) => {
  if (ev.key !== '/' || ev.ctrlKey || ev.metaKey || ev.altKey || !api.key()) return;
  const t = ev.target;
  if (t && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
  ev.preventDefault();
  const q = document.getElementById('q');
  if (q) {
    q.focus();
    q.select();
  } else {
    focusNext = 'q';
    location.hash = '#/search';
  }
});
document.getElementById('signout').addEventListener('click', () => {
  api.forget();
  sessionStorage.removeItem(KIND);
  say('Signed out.');
  location.hash = '#/signin';
  render();
});
render();
