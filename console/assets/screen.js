// #/screen: paste or upload up to 50,000 identifiers (one per line, or a
// CSV with an acn, abn or identifier column), screen them with POST
// /v1/match as CSV, see matched / unmatched / unresolved and download the
// service's CSV answer as it came.
import { h, fill, fmt, say, errorBox, download } from './dom.js';
import * as api from './api.js';
import { parse, records, identifiers } from './csv.js';

const SHOWN = 200;
const MAX = 50000;

let last = null; // the last answer, kept while the tab is open: { text, rows, columns, name, body }

// ANSWER are the columns of the service's CSV answer the table shows in its own way; any
// other column of the answer (the uploaded file's own, kept beside) is shown as it is.
const ANSWER = ['identifier', 'result', 'acn', 'company_name', 'notice_count', 'latest_notice_id', 'latest_published_date', 'latest_notice_purpose',
  'insolvency', 'latest_insolvency_notice_id', 'latest_insolvency_published_date', 'latest_insolvency_notice_purpose', 'notice_purposes'];

function summary(rows) {
  const n = { matched: 0, unmatched: 0, unresolved: 0 };
  for (const r of rows) n[r.result] = (n[r.result] || 0) + 1;
  return n;
}

function resultPanel(res) {
  const n = summary(res.rows);
  const out = h('section', { class: 'card', 'aria-labelledby': 'res-title' });
  const table = h('div', {});
  let shown = 'all';
  const draw = () => {
    const list = res.rows.filter((r) => shown === 'all' || r.result === shown);
    const own = res.columns.filter((c) => !ANSWER.includes(c));
    fill(table, h('div', { class: 'scrollx' }, h('table', { class: 'results', id: 'screen-table' },
      h('caption', { class: 'vh' }, 'Screen result'),
      h('thead', {}, h('tr', {}, ['Identifier', ...own, 'Result', 'Company', 'Notices', 'Latest notice', 'Latest insolvency notice'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, list.slice(0, SHOWN).map((r) => h('tr', { class: 'r-' + r.result },
        h('td', { class: 'mono' }, r.identifier),
        own.map((c) => h('td', {}, r[c])),
        h('td', {}, h('span', { class: 'badge ' + r.result }, r.result)),
        h('td', {}, r.acn ? h('a', { href: '#/company/' + r.acn }, r.company_name || r.acn) : '—'),
        h('td', { class: 'num' }, r.notice_count || (r.result === 'unmatched' ? '0' : '—')),
        h('td', {}, r.latest_notice_id ? `${r.latest_published_date} · ${r.latest_notice_purpose}` : '—'),
        h('td', {}, r.latest_insolvency_notice_id ? `${r.latest_insolvency_published_date} · ${r.latest_insolvency_notice_purpose}` : '—')))))),
    list.length > SHOWN ? h('p', { class: 'help' }, `Showing the first ${SHOWN} of ${fmt(list.length)}; the download has every row.`) : null);
  };
  const choice = h('div', { class: 'seg', role: 'radiogroup', 'aria-label': 'Show' });
  for (const [v, label] of [['all', `All ${fmt(res.rows.length)}`], ['matched', `Matched ${fmt(n.matched)}`], ['unmatched', `Unmatched ${fmt(n.unmatched)}`], ['unresolved', `Unresolved ${fmt(n.unresolved)}`]]) {
    const id = 'show-' + v;
    const radio = h('input', { type: 'radio', name: 'show', id, value: v, checked: v === 'all' });
    radio.addEventListener('change', () => {
      shown = v;
      draw();
    });
    choice.append(radio, h('label', { for: id }, label));
  }
  const dl = h('button', { type: 'button', class: 'primary', id: 'download' }, 'Download result CSV');
  dl.addEventListener('click', () => download(res.name, res.text));
  // Excel (BOM) asks the service again with bom=1: the same answer starting with a UTF-8
  // byte-order mark, so Excel reads company names with accents right.
  const excel = h('button', { type: 'button', class: 'ghost', id: 'download-bom' }, 'Excel (BOM)');
  excel.addEventListener('click', async () => {
    excel.disabled = true;
    try {
      download(res.name, await api.postCSVBlob('/v1/match?bom=1', res.body));
    } catch (e) {
      say('Excel download failed: ' + (e.message || e));
    } finally {
      excel.disabled = false;
    }
  });
  fill(out, h('div', { class: 'resulthead' }, h('h2', { id: 'res-title' }, 'Result'), h('div', { class: 'row' }, excel, dl)),
    h('dl', { class: 'counts' },
      h('div', { class: 'matched' }, h('dt', {}, 'Matched'), h('dd', { id: 'n-matched' }, fmt(n.matched))),
      h('div', { class: 'unmatched' }, h('dt', {}, 'Unmatched'), h('dd', { id: 'n-unmatched' }, fmt(n.unmatched))),
      h('div', { class: 'unresolved' }, h('dt', {}, 'Unresolved'), h('dd', { id: 'n-unresolved' }, fmt(n.unresolved))),
      h('div', {}, h('dt', {}, 'Submitted'), h('dd', { id: 'n-submitted' }, fmt(res.rows.length)))),
    h('p', { class: 'help' }, 'Matched: has notices. Unmatched: in the register, no notices. Unresolved: neither the register nor the notices know it.'),
    choice, table);
  draw();
  return out;
}

/** screenView renders the screen form and the last result. */
export async function screenView(box) {
  const text = h('textarea', { id: 'ids', name: 'ids', rows: 8, spellcheck: 'false', 'aria-describedby': 'ids-help', placeholder: '000000019\n51 824 753 556\n...' });
  const file = h('input', { id: 'file', name: 'file', type: 'file', accept: '.csv,.txt,text/csv,text/plain' });
  const info = h('p', { class: 'help', id: 'file-info', 'aria-live': 'polite' });
  const err = h('div', {});
  const go = h('button', { type: 'submit', class: 'primary', id: 'screen' }, 'Screen');
  const result = h('div', {});
  let loaded = null; // { name, text } of an uploaded file
  file.addEventListener('change', async () => {
    const f = file.files[0];
    if (!f) return;
    loaded = { name: f.name, text: await f.text() };
    const list = identifiers(loaded.text);
    info.textContent = `${f.name}: ${fmt(list.rows)} row${list.rows === 1 ? '' : 's'} loaded` +
      (list.column ? ` (a header row, identifiers in column ${list.column})` : ' (one identifier a line, no header row)') + '; Screen sends the file as it is.';
    text.value = '';
  });
  text.addEventListener('input', () => {
    if (loaded && text.value.trim()) {
      loaded = null;
      file.value = '';
      info.textContent = '';
    }
  });
  const form = h('form', { class: 'card', 'aria-labelledby': 'screen-title' },
    h('h1', { id: 'screen-title' }, 'Screen a loan book'),
    h('p', {}, `Up to ${fmt(MAX)} ACNs or ABNs: which have insolvency or deregistration notices?`),
    h('label', { for: 'ids' }, 'Paste identifiers'),
    text,
    h('p', { class: 'help', id: 'ids-help' }, 'One per line, or CSV with a header row and a column named acn, abn or identifier (other columns are ignored). Spaces inside a number are fine.'),
    h('label', { for: 'file' }, 'Or upload a CSV file'), file, info, err,
    h('div', { class: 'row end' }, go));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    fill(err);
    const body = loaded ? loaded.text : text.value;
    if (!body.trim()) {
      fill(err, errorBox({ code: 'empty_request', message: 'paste identifiers or choose a file first' }));
      return;
    }
    go.disabled = true;
    go.textContent = 'Screening…';
    try {
      const sent = body.endsWith('\n') ? body : body + '\n';
      const csv = await api.postCSV('/v1/match', sent);
      const parsed = parse(csv);
      const rows = records(parsed);
      const base = loaded ? loaded.name.replace(/\.[^.]*$/, '') : 'screen';
      last = { text: csv, rows, columns: parsed[0] || [], name: `${base}-result.csv`, body: sent };
      fill(result, resultPanel(last));
      const n = summary(rows);
      say(`Screened ${fmt(rows.length)}: ${fmt(n.matched)} matched, ${fmt(n.unmatched)} unmatched, ${fmt(n.unresolved)} unresolved.`);
    } catch (e) {
      fill(err, errorBox(e));
    } finally {
      go.disabled = false;
      go.textContent = 'Screen';
    }
  });
  fill(box, form, result);
  if (last) fill(result, resultPanel(last));
}
