// The API client: the key lives in sessionStorage only (gone when the tab
// closes) and travels in the X-API-Key header, never in a URL.

const KEY = 'noticesd.key';

export function key() {
  return sessionStorage.getItem(KEY);
}

export function setKey(k) {
  sessionStorage.setItem(KEY, k);
}

export function forget() {
  sessionStorage.removeItem(KEY);
}

/** ApiError carries the API's error code and message (SPEC error shape). */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** query builds a query string from an object; arrays become comma lists, empty values are left out. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    if (Array.isArray(v)) {
      if (v.length) q.set(k, v.join(','));
    } else {
      q.set(k, String(v));
    }
  }
  const s = q.toString();
  return s ? '?' + s : '';
}

async function fail(res) {
  let code = 'http_' + res.status;
  let message = res.statusText || 'request failed';
  try {
    const body = await res.json();
    if (body && body.error) {
      code = body.error.code;
      message = body.error.message;
    }
  } catch {
    // not JSON: keep the status
  }
  if (res.status === 401) window.dispatchEvent(new CustomEvent('noticesd:unauthorised', { detail: message }));
  return new ApiError(res.status, code, message);
}

/** call sends a request with the key; it resolves to the Response or throws ApiError. */
export async function call(path, opts = {}) {
  const headers = Object.assign({ 'X-API-Key': key() || '' }, opts.headers || {});
  let res;
  try {
    res = await fetch(path, { method: opts.method || 'GET', headers, body: opts.body, cache: 'no-store', credentials: 'omit', signal: opts.signal });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network_error', 'the service could not be reached: ' + e.message);
  }
  if (!res.ok) throw await fail(res);
  return res;
}

/** get fetches JSON. */
export async function get(path, signal) {
  return (await call(path, { signal })).json();
}

/** getCSV fetches a CSV export (Accept: text/csv) as text. */
export async function getCSV(path) {
  return (await call(path, { headers: { Accept: 'text/csv' } })).text();
}

/** postCSV sends a CSV body and asks for CSV back. */
export async function postCSV(path, text) {
  return (await call(path, { method: 'POST', body: text, headers: { 'Content-Type': 'text/csv', Accept: 'text/csv' } })).text();
}

/** postCSVBlob is postCSV with the answer's bytes as they came (text() would drop a byte-order mark). */
export async function postCSVBlob(path, text) {
  return (await call(path, { method: 'POST', body: text, headers: { 'Content-Type': 'text/csv', Accept: 'text/csv' } })).blob();
}

/** send sends a JSON body (or none) with method; it resolves to the answer's JSON, or null for 204. */
export async function send(method, path, body) {
  const opts = { method };
  if (body !== undefined) {
    opts.body = JSON.stringify(body);
    opts.headers = { 'Content-Type': 'application/json' };
  }
  const res = await call(path, opts);
  return res.status === 204 ? null : res.json();
}

/**
 * missingRoute is true for the 404 a server answers when it has no such route at all (an
 * older version): the console says the feature is not available instead of showing an error.
 */
export function missingRoute(e) {
  return e instanceof ApiError && e.status === 404 && /no route/i.test(e.message);
}
