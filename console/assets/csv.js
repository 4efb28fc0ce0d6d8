// RFC 4180 parsing of the API's CSV answers (quoted fields, doubled quotes,
// CRLF or LF line ends).

/** parse returns the rows of text as arrays of strings. */
export function parse(text) {
  const rows = [];
  let row = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
    } else if (c === '"') {
      quoted = true;
    } else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else {
      field += c;
    }
  }
  if (field !== '' || row.length) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

/** records turns parsed rows (header first) into objects keyed by the header. */
export function records(rows) {
  const [head, ...rest] = rows;
  return rest.map((r) => Object.fromEntries(head.map((k, i) => [k, r[i] ?? ''])));
}

const ID_COLUMNS = ['acn', 'abn', 'identifier'];

/**
 * identifiers reads a list the way POST /v1/match reads CSV: a header row naming a column
 * acn, abn or identifier (any case; other columns kept aside), else one identifier per line.
 * It returns { column, header, ids, rows }: column is the header's name of the identifier
 * column (null without a header), ids the identifiers in order (blank cells dropped), rows
 * the number of data rows (blank lines and the header row not counted).
 */
export function identifiers(text) {
  const all = parse(text).filter((r) => r.some((c) => c.trim() !== ''));
  if (!all.length) return { column: null, header: null, ids: [], rows: 0 };
  const head = all[0].map((c) => c.trim().replace(/^\uFEFF/, '').toLowerCase());
  const at = head.findIndex((c) => ID_COLUMNS.includes(c));
  if (at < 0) return { column: null, header: null, ids: all.map((r) => r.join(',').trim()).filter(Boolean), rows: all.length };
  const data = all.slice(1);
  return { column: all[0][at].trim().replace(/^\uFEFF/, ''), header: all[0], ids: data.map((r) => (r[at] || '').trim()).filter(Boolean), rows: data.length };
}
