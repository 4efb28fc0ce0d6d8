// Run by TestCSVParse (node): the console's CSV reader against RFC 4180 cases.
import { parse, records, identifiers } from '../assets/csv.js';
import assert from 'node:assert/strict';

assert.deepEqual(parse('a,b\r\n1,2\r\n'), [['a', 'b'], ['1', '2']]);
assert.deepEqual(parse('a,b\n1,2'), [['a', 'b'], ['1', '2']]);
assert.deepEqual(parse('x\n"Smith, Jones ""&"" Co",\n'), [['x'], ['Smith, Jones "&" Co', '']]);
assert.deepEqual(parse('a\n"two\nlines"\n'), [['a'], ['two\nlines']]);
assert.deepEqual(parse('a,b,c\n,,\n'), [['a', 'b', 'c'], ['', '', '']]);
assert.deepEqual(records(parse('identifier,result\n123456780,unresolved\n')), [{ identifier: '123456780', result: 'unresolved' }]);
// identifiers counts data rows, not lines: a header and 903 rows is 903 (it once said "904 lines").
const book = 'acn,loan_ref\n' + Array.from({ length: 903 }, (_, i) => `${String(100000000 + i)},L${i}`).join('\n') + '\n\n';
const got = identifiers(book);
assert.equal(got.rows, 903);
assert.equal(got.ids.length, 903);
assert.equal(got.column, 'acn');
assert.deepEqual(identifiers('\uFEFFLoan,ABN\r\nx,"51 824 753 556"\r\ny,\r\n'), { column: 'ABN', header: ['\uFEFFLoan', 'ABN'], ids: ['51 824 753 556'], rows: 2 });
assert.deepEqual(identifiers('000000019\n\n 51 824 753 556 \n'), { column: null, header: null, ids: ['000000019', '51 824 753 556'], rows: 2 });
assert.deepEqual(identifiers('\n'), { column: null, header: null, ids: [], rows: 0 });
console.log('csv ok');
