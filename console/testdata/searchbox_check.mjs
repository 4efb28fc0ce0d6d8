// Run by TestSearchBox (node): the one search box sends 9 or 11 digits
// (spaces allowed) to the company view and anything else to the search
// (with a company-name lookup when the words have no operators); a month
// bar's range and the Sydney date that marks the partial month; a
// notice's highlight read as text with <mark> parts.
import assert from 'node:assert/strict';
import { companyID, nameQuery, highlightParts } from '../assets/search.js';
import { monthRange, sydneyToday } from '../assets/chart.js';

for (const [text, want] of [
  ['173783867', '173783867'], [' 173 783 867 ', '173783867'], ['31 365 411 981', '31365411981'], ['31365411981', '31365411981'],
  ['1737838', ''], ['1737838670', ''], ['123456789012', ''], ['ACN 173783867', ''], ['173-783-867', ''], ['', ''], ['liquidator', ''],
]) {
  assert.equal(companyID(text), want, `companyID(${JSON.stringify(text)})`);
}
for (const [q, want] of [
  ['example holdings', true], ['liquidator', true], ['', false], ['173783867', false],
  ['"creditors voluntary"', false], ['administrat*', false], ['a -receiver', false], ['a OR b', false], ['(a b)', false],
]) {
  assert.equal(nameQuery(q), want, `nameQuery(${JSON.stringify(q)})`);
}
assert.deepEqual(monthRange('2024-02'), ['2024-02-01', '2024-02-29']);
assert.deepEqual(monthRange('2026-12'), ['2026-12-01', '2026-12-31']);
// 14:00 UTC on 30 November is already 1 December in Sydney (UTC+11).
assert.equal(sydneyToday(new Date('2026-11-30T14:00:00Z')), '2026-12-01');
assert.equal(sydneyToday(new Date('2026-11-30T12:00:00Z')), '2026-11-30');
// A notice's highlight: HTML fragments whose only markup read is <mark>; entities decoded
// into text (never parsed as HTML), fragments joined by a space.
assert.deepEqual(highlightParts({ highlight: ['…a <mark>deed</mark> <mark>of</mark> x &amp; y &lt;b&gt; &#34;q&#39;…', 'two <mark>deed</mark>'] }), [
  { text: '…a ', mark: false }, { text: 'deed', mark: true }, { text: ' ', mark: false }, { text: 'of', mark: true },
  { text: ' x & y <b> "q\'…', mark: false }, { text: ' ', mark: false }, { text: 'two ', mark: false }, { text: 'deed', mark: true },
]);
assert.deepEqual(highlightParts({ highlight: ['<script>alert(1)</script> <mark>x</mark>'] }), [
  { text: '<script>alert(1)</script> ', mark: false }, { text: 'x', mark: true },
]);
assert.deepEqual(highlightParts({ highlight: [] }), []);
assert.deepEqual(highlightParts({}), []);
console.log('searchbox ok');
