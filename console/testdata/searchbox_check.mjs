// Run by TestSearchBox (node): the one search box sends 9 or 11 digits
// (spaces allowed) to the company view and anything else to the search
// (with a company-name lookup when the words have no operators); a month
// bar's range and the Sydney date that marks the partial month.
import assert from 'node:assert/strict';
import { companyID, nameQuery } from '../assets/search.js';
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
console.log('searchbox ok');
