// Effect keys are stored in users' ledgers: the key of an input that is valid JSON data must never change, or a
// restarted process would run an effect again. These keys were computed once and are kept as they are.
import { createHash } from 'node:crypto';
import { effectKey } from 'cleanturn';
import fc from 'fast-check';
import stringify from 'fast-json-stable-stringify';
import { describe, expect, it } from 'vitest';
import { encodeResult } from '../src/effects/json.js';

/** `[what, turnId, tool name, args, step?, key]`. */
// biome-ignore format: a table of inputs and their keys
const known: [string, string, string, unknown, number | undefined, string][] = [
  ['the help-desk refund', 'turn-42', 'issue_refund', { order_id: 'ORD-7781', amount: 'full' }, undefined, '4d02b5b61ea1afa1'],
  ['the help-desk email', 'turn-42', 'send_email', { to: 'ada@example.com', template: 'refund-started' }, undefined, '0899a76822582476'],
  ['the help-desk refund, step 2', 'turn-42', 'issue_refund', { order_id: 'ORD-7781', amount: 'full' }, 2, '02a44c306f50b939'],
  ['step 0', 'turn-42', 'issue_refund', { order_id: 'ORD-7781', amount: 'full' }, 0, '68766e5f51ae8d16'],
  ['unicode strings', 't', 'tool', { name: 'Zoë Ünïcödé', city: 'Zürich', note: '配送が遅れた 📦', rtl: 'שלום' }, undefined, 'b3bd4493163699e2'],
  ['escapes and controls', 't', 'tool', { q: 'say "hi"\\ now', tab: 'a\tb', nl: 'a\nb', bell: '\u0007', del: '\u007f', ls: '\u2028' }, undefined, '37efec13fda36c0c'],
  ['keys sorted by UTF-16 code units', 't', 'tool', { '\u20ac': 1, '\r': 2, '\ufb33': 3, '1': 4, '\ud83d\ude00': 5, '\u0080': 6, 'ö': 7, '10': 8, '2': 9, B: 10, a: 11, _: 12 }, undefined, '19a9de16e5c54a38'],
  ['nested objects and arrays', 't', 'tool', { order: { id: 'ORD-1', lines: [{ sku: 'B1', qty: 2 }, { sku: 'B2', qty: 1, tags: [] }] }, meta: {} }, undefined, 'aa314c129ac6aeff'],
  ['top-level array', 't', 'tool', ['ORD-1', ['nested', ['deeper']], { z: 1, y: [true, false, null] }], undefined, '62d3bd5eaed941f7'],
  ['safe numbers', 't', 'tool', { small: 1e-7, tenth: 0.1, sum: 0.1 + 0.2, minusZero: -0, negative: -42.5, max: Number.MAX_SAFE_INTEGER, min: Number.MIN_SAFE_INTEGER, tiny: 5e-324, int: 100, third: 1 / 3, big: 123456789.123 }, undefined, 'a94f73687bf60745'],
  ['-0 as 0', 't', 'tool', [-0, 0], undefined, '29eb4303e347da64'],
  ['a lone string', 't', 'tool', 'ORD-7781', undefined, 'fd01622d8ac33863'],
  ['a lone number', 't', 'tool', 42, undefined, '0e18884e7b8411c6'],
  ['true', 't', 'tool', true, undefined, '98b28dce77b2b98d'],
  ['null', 't', 'tool', null, undefined, '1faf1ac784e8e073'],
  ['empty object', 't', 'tool', {}, undefined, '6fb6aacb496437fb'],
  ['empty array', 't', 'tool', [], undefined, 'b295471e7c9236a8'],
  ['a lone surrogate', 't', 'tool', { s: '\ud800x', t: 'y\udfff' }, undefined, '6d1526caa16197b5'],
  ['an object without prototype', 't', 'tool', Object.assign(Object.create(null), { b: 2, a: 1 }), undefined, '4e3bf6f6881bb31b'],
  ['an undefined member, left out', 't', 'tool', { order_id: 'ORD-7781', note: undefined }, undefined, 'eb5731a1e990a6d8'],
  ['a shared, non-cyclic reference', 't', 'tool', (() => { const s = { sku: 'B1' }; return { first: s, second: s }; })(), undefined, 'de7370b087255b4b'],
  ['__proto__ as a member name', 't', 'tool', JSON.parse('{"__proto__":{"x":1},"a":2}'), undefined, '12fb5ee3517f43fb'],
  ['a turn id and name that need escaping', 'turn "42"\n', 'tool\\ü', {}, undefined, 'affc528f750dfd2d'],
  ['an empty turn id and name', '', '', {}, undefined, '69258e064c5b0aa6'],
  ['64 levels of nesting', 't', 'tool', (() => { let v: unknown = 'leaf'; for (let i = 0; i < 64; i++) v = i % 2 ? [v] : { k: v }; return v; })(), undefined, '24fee011cbcdbbb5'],
  ['a long string', 't', 'tool', { text: 'abc'.repeat(10_000) }, undefined, '08e05c72792a9bff'],
];

describe('effectKey: keys already stored in ledgers stay the same', () => {
  for (const [what, turnId, name, args, step, key] of known) {
    it(what, () => {
      expect(effectKey(turnId, { name, args }, step)).toBe(key);
    });
  }

  it('the same keys for the arguments as JSON.parse gives them back from their JSON text', () => {
    for (const [what, turnId, name, args, step, key] of known) {
      const parsed: unknown = JSON.parse(JSON.stringify(args));
      expect(effectKey(turnId, { name, args: parsed }, step), what).toBe(key);
    }
  });
});

/** Whether JSON data holds a number beyond Number.MAX_SAFE_INTEGER (which keys refuse). */
function hasUnsafeNumber(value: unknown): boolean {
  if (typeof value === 'number') return Math.abs(value) > Number.MAX_SAFE_INTEGER;
  if (typeof value !== 'object' || value === null) return false;
  return Object.values(value).some(hasUnsafeNumber);
}

/** JSON data with strings of any UTF-16 code units, lone surrogates too. */
const anyJson = fc.jsonValue({ stringUnit: 'binary', maxDepth: 6 });

describe('the canonical JSON is the one keys were always made of', () => {
  it('for any JSON data that can be keyed, the key is the SHA-256 of fast-json-stable-stringify, as it always was', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary' }),
        fc.string({ unit: 'binary' }),
        anyJson,
        (turnId, name, args) => {
          fc.pre(!hasUnsafeNumber(args));
          const before = createHash('sha256')
            .update(stringify([turnId, name, args]), 'utf8')
            .digest('hex')
            .slice(0, 16);
          expect(effectKey(turnId, { name, args })).toBe(before);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('for any JSON data, encodeResult writes what JSON.stringify writes', () => {
    fc.assert(
      fc.property(anyJson, (value) => {
        expect(encodeResult(value)).toBe(JSON.stringify(value));
      }),
      { numRuns: 2000 },
    );
  });
});
