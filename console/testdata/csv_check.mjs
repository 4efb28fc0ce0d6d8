// Run by TestCSVParse (node): the console's CSV reader against RFC 4180 cases.
import { parse, records } from '../assets/csv.js';
import assert from 'node:assert/strict';

assert.deepEqual(parse('a,b\r\n1,2\r\n'), [['a', 'b'], ['1', '2']]);
assert.deepEqual(parse('a,b\n1,2'), [['a', 'b'], ['1', '2']]);
assert.deepEqual(parse('x\n"Smith, Jones ""&"" Co",\n'), [['x'], ['Smith, Jones "&" Co', '']]);
assert.deepEqual(parse('a\n"two\nlines"\n'), [['a'], ['two\nlines']]);
assert.deepEqual(parse('a,b,c\n,,\n'), [['a', 'b', 'c'], ['', '', '']]);
assert.deepEqual(records(parse('identifier,result\n123456780,unresolved\n')), [{ identifier: '123456780', result: 'unresolved' }]);
console.log('csv ok');
