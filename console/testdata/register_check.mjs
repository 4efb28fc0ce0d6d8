// Run by TestRegisterCodes (node): the register's codes in plain English
// with the code beside; an unknown code is shown as it is.
import assert from 'node:assert/strict';
import { describe, meaning } from '../assets/register.js';

for (const [field, code, want] of [
  ['status', 'EXAD', 'Under external administration (EXAD)'],
  ['status', 'REGD', 'Registered (REGD)'],
  ['status', 'DRGD', 'Deregistered (DRGD)'],
  ['status', 'SOFF', 'Strike-off action in progress (SOFF)'],
  ['type', 'APTY', 'Australian proprietary company (APTY)'],
  ['type', 'APUB', 'Australian public company (APUB)'],
  ['class', 'LMSH', 'Limited by shares (LMSH)'],
  ['class', 'LMGT', 'Limited by guarantee (LMGT)'],
  ['sub_class', 'PROP', 'Proprietary company (PROP)'],
  ['sub_class', 'HUNT', 'Proprietary home unit company (HUNT)'],
  ['status', 'ZZZZ', 'ZZZZ'],
  ['status', 'constructor', 'constructor'],
  ['name', 'APTY', 'APTY'],
]) {
  assert.equal(describe(field, code), want, `${field} ${code}`);
}
// Every code the sample register uses has a meaning.
for (const [field, codes] of Object.entries({ status: ['REGD', 'DRGD', 'SOFF', 'EXAD'], type: ['APTY', 'APUB'], class: ['LMSH', 'LMGT', 'UNLM'], sub_class: ['PROP', 'PSTC', 'HUNT', 'ULSN', 'NLTD', 'ULST', 'LIST'] })) {
  for (const c of codes) assert.ok(meaning(field, c), `${field} ${c} has no meaning`);
}
console.log('register ok');
