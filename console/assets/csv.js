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
