import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { CleanturnError, effectKey, isRetryable, type TurnError } from 'cleanturn';
import { call, helpDesk } from 'cleanturn/testing';
import { describe, expect, it } from 'vitest';
import { expectTurnError } from './support/errors.js';

/** Plain JSON data: what RFC 8785 canonicalizes. */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * RFC 8785 (JSON Canonicalization Scheme) for plain JSON data, written from the RFC, independently of the
 * library: object members sorted by the UTF-16 code units of their names, no whitespace, numbers as ECMAScript
 * writes them, strings with the minimal JSON escapes.
 */
function canonicalize(value: Json): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError('JCS has no representation for NaN or Infinity');
    // RFC 8785 §3.2.2.3: the ECMAScript Number-to-String algorithm; -0 is written as 0.
    return Object.is(value, -0) ? '0' : String(value);
  }
  if (typeof value === 'string') return canonicalString(value);
  if (Array.isArray(value)) return `[${value.map(canonicalize).join(',')}]`;
  const names = Object.keys(value).sort(compareUtf16);
  return `{${names.map((name) => `${canonicalString(name)}:${canonicalize(value[name] as Json)}`).join(',')}}`;
}

/** Compares two strings by their UTF-16 code units (RFC 8785 §3.2.3). */
function compareUtf16(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const difference = a.charCodeAt(i) - b.charCodeAt(i);
    if (difference !== 0) return difference;
  }
  return a.length - b.length;
}

/** The two-character escapes of RFC 8785 §3.2.2.2. */
const SHORT_ESCAPES: Readonly<Record<number, string>> = {
  8: '\\b',
  9: '\\t',
  10: '\\n',
  12: '\\f',
  13: '\\r',
  34: '\\"',
  92: '\\\\',
};

function canonicalString(text: string): string {
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    const short = SHORT_ESCAPES[unit];
    if (short !== undefined) out += short;
    else if (unit < 0x20) out += `\\u${unit.toString(16).padStart(4, '0')}`;
    else out += text[i];
  }
  return `${out}"`;
}

/** The key as the design defines it, computed with node:crypto. */
function expectedKey(turnId: string, name: string, args: Json, step?: number): string {
  const data: Json = step === undefined ? [turnId, name, args] : [turnId, name, args, step];
  return createHash('sha256').update(canonicalize(data), 'utf8').digest('hex').slice(0, 16);
}

describe('the canonical JSON of this test (checked against RFC 8785 examples)', () => {
  it('sorts member names by UTF-16 code units (RFC 8785 §3.2.3)', () => {
    const input = JSON.parse(
      '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One",' +
        '"\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
    ) as Json;
    expect(canonicalize(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","ö":"Latin Small Letter O With Diaeresis",' +
        '"€":"Euro Sign","😀":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it('writes numbers, strings and literals as the RFC example (§3.2.2)', () => {
    const input = JSON.parse(
      '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],' +
        String.raw`"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`,
    ) as Json;
    expect(canonicalize(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        String.raw`"string":"€$\u000f\nA'B\"\\\\\"/"}`,
    );
  });
});

describe('effectKey', () => {
  it('is 16 lowercase hex characters', () => {
    for (const args of [helpDesk.refundArgs, {}, [], 'text', 0, null]) {
      expect(effectKey('turn-42', { name: 'issue_refund', args })).toMatch(/^[0-9a-f]{16}$/);
    }
  });

  it('has a fixed value for the help-desk refund (computed with node:crypto)', () => {
    const key = effectKey('turn-42', {
      name: 'issue_refund',
      args: { order_id: 'ORD-7781', amount: 'full' },
    });
    expect(key).toBe('4d02b5b61ea1afa1');
    expect(
      createHash('sha256')
        .update('["turn-42","issue_refund",{"amount":"full","order_id":"ORD-7781"}]')
        .digest('hex')
        .slice(0, 16),
    ).toBe(key);
  });

  it('is the same for the same meaning proposed by two attempts with different provider ids', () => {
    expect(effectKey('turn-42', call('c1', 'issue_refund', helpDesk.refundArgs))).toBe(
      effectKey('turn-42', call('c7', 'issue_refund', helpDesk.refundArgs)),
    );
  });

  it('does not depend on the order of object keys, at any depth', () => {
    const a = {
      order_id: 'ORD-7781',
      refund: { amount: 'full', currency: 'EUR' },
      lines: [{ sku: 'B1', qty: 1 }],
    };
    const b = {
      lines: [{ qty: 1, sku: 'B1' }],
      refund: { currency: 'EUR', amount: 'full' },
      order_id: 'ORD-7781',
    };
    expect(effectKey('turn-42', { name: 'issue_refund', args: a })).toBe(
      effectKey('turn-42', { name: 'issue_refund', args: b }),
    );
  });

  it('depends on the order of array items', () => {
    expect(effectKey('t', { name: 'f', args: [1, 2] })).not.toBe(effectKey('t', { name: 'f', args: [2, 1] }));
  });

  it('changes with the step, and a step differs from no step', () => {
    const meaning = { name: 'issue_refund', args: helpDesk.refundArgs };
    const keys = [
      effectKey('turn-42', meaning),
      effectKey('turn-42', meaning, 0),
      effectKey('turn-42', meaning, 1),
      effectKey('turn-42', meaning, 2),
    ];
    expect(new Set(keys).size).toBe(4);
    expect(effectKey('turn-42', meaning, 2)).toBe(keys[3]);
  });

  it('differs for different turn ids, tool names and arguments', () => {
    const keys = [
      effectKey('turn-42', { name: 'issue_refund', args: helpDesk.refundArgs }),
      effectKey('turn-43', { name: 'issue_refund', args: helpDesk.refundArgs }),
      effectKey('turn-42', { name: 'cancel_order', args: helpDesk.refundArgs }),
      effectKey('turn-42', { name: 'issue_refund', args: { ...helpDesk.refundArgs, amount: 'partial' } }),
    ];
    expect(new Set(keys).size).toBe(4);
  });

  it('does not confuse the parts of the key (no ambiguous concatenation)', () => {
    expect(effectKey('turn-4', { name: '2issue', args: {} })).not.toBe(
      effectKey('turn-42', { name: 'issue', args: {} }),
    );
  });

  // biome-ignore format: a table of arguments
  const samples: [string, Json][] = [
    ['the help-desk refund', { order_id: 'ORD-7781', amount: 'full' }],
    ['unicode strings', { name: 'Zoë Ünïcödé', city: 'Zürich', note: '配送が遅れた 📦', rtl: 'שלום' }],
    ['escapes and controls', { q: 'say "hi"\\ now', tab: 'a\tb', nl: 'a\nb', bell: '\u0007', del: '\u007f', ls: '\u2028' }],
    ['keys sorted by UTF-16 code units', { '\u20ac': 1, '\r': 2, '\ufb33': 3, '1': 4, '\ud83d\ude00': 5, '\u0080': 6, 'ö': 7, '10': 8, '2': 9, B: 10, a: 11, _: 12 }],
    ['nested objects and arrays', { order: { id: 'ORD-1', lines: [{ sku: 'B1', qty: 2 }, { sku: 'B2', qty: 1, tags: [] }] }, meta: {} }],
    ['top-level array', ['ORD-1', ['nested', ['deeper']], { z: 1, y: [true, false, null] }]],
    ['numbers', { fraction: 4503599627370495.5, small: 1e-7, tenth: 0.1, sum: 0.1 + 0.2, minusZero: -0, negative: -42.5, max: Number.MAX_SAFE_INTEGER, min: Number.MIN_SAFE_INTEGER, tiny: 5e-324, int: 100, big: 123456789.123 }],
    ['a lone string', 'ORD-7781'],
    ['a lone number', 1e-21],
    ['null', null],
    ['empty object', {}],
  ];

  for (const [what, args] of samples) {
    it(`equals the first 16 hex of sha256 over the RFC 8785 form: ${what}`, () => {
      expect(effectKey('turn-42', { name: 'tool', args })).toBe(expectedKey('turn-42', 'tool', args));
      expect(effectKey('turn-42', { name: 'tool', args }, 3)).toBe(expectedKey('turn-42', 'tool', args, 3));
    });
  }

  it('writes -0 as 0 and 1e-7 in exponent form, as RFC 8785 does', () => {
    expect(effectKey('t', { name: 'f', args: -0 })).toBe(effectKey('t', { name: 'f', args: 0 }));
    expect(canonicalize([1e-7, 0.1, -0])).toBe('[1e-7,0.1,0]');
    expect(effectKey('t', { name: 'f', args: [1e-7, 0.1, -0] })).toBe(
      createHash('sha256').update('["t","f",[1e-7,0.1,0]]').digest('hex').slice(0, 16),
    );
  });

  it('handles a turn id and a tool name that need escaping', () => {
    expect(effectKey('turn "42"\n', { name: 'tool\\ü', args: {} })).toBe(
      expectedKey('turn "42"\n', 'tool\\ü', {}),
    );
  });

  describe('arguments that are not JSON data', () => {
    function keyError(args: unknown): unknown {
      try {
        effectKey('turn-42', { name: 'issue_refund', args });
      } catch (error) {
        return error;
      }
      return undefined;
    }

    it('throws a non-retryable effect-key TurnError for an object cycle, naming the tool and where the cycle is', () => {
      const args: Record<string, unknown> = { order_id: 'ORD-7781', lines: [{}] };
      ((args.lines as unknown[])[0] as Record<string, unknown>).order = args;
      const error = keyError(args);
      expectTurnError(error, 'effect-key');
      expect(error).toBeInstanceOf(CleanturnError);
      expect(error).toMatchObject({
        name: 'TurnError',
        retryable: false,
        toolName: 'issue_refund',
        path: 'args.lines[0].order',
        reason: 'a cycle',
      });
      expect((error as TurnError).message).toContain('issue_refund');
      expect((error as TurnError).message).toContain('args.lines[0].order: a cycle');
      expect(isRetryable(error)).toBe(false);
    });

    it('throws an effect-key TurnError for an array cycle', () => {
      const args: unknown[] = ['ORD-7781'];
      args.push(args);
      expect(keyError(args)).toMatchObject({ path: 'args[1]', reason: 'a cycle' });
    });

    // What is not JSON data, or not JSON data that one key can stand for, and where it is.
    const symbol = Symbol('s');
    class Order {
      id = 'ORD-7781';
    }
    const withExtra = Object.assign(['ORD-7781'], { note: 'x' });
    const holey: unknown[] = [1];
    holey[2] = 3;
    // biome-ignore format: a table of arguments
    const refused: [string, unknown, string, RegExp][] = [
      ['undefined arguments (the same text as null)', undefined, 'args', /^undefined$/],
      ['undefined in an array (written as null)', ['ORD-7781', undefined], 'args[1]', /undefined in an array/],
      ['a hole in an array (written as null)', holey, 'args[1]', /a hole/],
      ['an array with properties (left out)', withExtra, 'args', /an array with properties/],
      ['NaN (written as null)', { amount: Number.NaN }, 'args.amount', /NaN is not a finite number/],
      ['Infinity (written as null)', { amount: Number.POSITIVE_INFINITY }, 'args.amount', /Infinity is not a finite number/],
      ['-Infinity (written as null)', [Number.NEGATIVE_INFINITY], 'args[0]', /-Infinity is not a finite number/],
      ['2^53: 9007199254740993 in JSON reads as it too', { order_id: 2 ** 53 }, 'args.order_id', /beyond Number.MAX_SAFE_INTEGER/],
      ['-(2^53)', { n: -(2 ** 53) }, 'args.n', /beyond Number.MAX_SAFE_INTEGER/],
      ['an id of 20 digits', JSON.parse('{"account":12345678901234567891}'), 'args.account', /beyond Number.MAX_SAFE_INTEGER/],
      ['1e21', [1e21], 'args[0]', /beyond Number.MAX_SAFE_INTEGER/],
      ['a Map (written as {})', { lines: new Map([['B1', 1]]) }, 'args.lines', /a Map/],
      ['a Set (written as {})', { tags: new Set(['x']) }, 'args.tags', /a Set/],
      ['a Date (written as its ISO string)', { at: new Date(0) }, 'args.at', /a Date/],
      ['a class instance (written as its fields)', { order: new Order() }, 'args.order', /an? Order/],
      ['a typed array', { bytes: new Uint8Array([1]) }, 'args.bytes', /a Uint8Array/],
      ['a boxed string', { s: new String('x') }, 'args.s', /a String/],
      ['a function (left out)', { callback: () => 1 }, 'args.callback', /a function/],
      ['a toJSON method (called)', { toJSON: () => 'x' }, 'args.toJSON', /a function/],
      ['a symbol (left out)', { s: symbol }, 'args.s', /a symbol/],
      ['a bigint', { amount: 10n }, 'args.amount', /a bigint/],
    ];
    for (const [what, args, path, problem] of refused) {
      it(`throws an effect-key TurnError for ${what}, at ${path}`, () => {
        const error = keyError(args);
        expectTurnError(error, 'effect-key');
        expect(error).toMatchObject({ retryable: false, toolName: 'issue_refund', path });
        expect((error as TurnError).reason).toMatch(problem);
        expect((error as Error).message).toContain(path);
      });
    }

    it('refuses nesting deeper than 256 levels, also 20,000 levels, and accepts 256', () => {
      const nest = (levels: number) => {
        let value: unknown = 'ORD-7781';
        for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { inner: value };
        return value;
      };
      expect(effectKey('t', { name: 'f', args: nest(256) })).toMatch(/^[0-9a-f]{16}$/);
      for (const levels of [257, 20_000]) {
        const error = keyError(nest(levels));
        expectTurnError(error, 'effect-key');
        expect((error as TurnError).reason).toBe('nested deeper than 256 levels');
      }
    });

    it('refuses a step that is not a safe number', () => {
      for (const step of [Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
        const error = (() => {
          try {
            effectKey('t', { name: 'f', args: {} }, step);
          } catch (e) {
            return e;
          }
          return undefined;
        })();
        expectTurnError(error, 'effect-key');
        expect(error).toMatchObject({ path: 'step' });
      }
    });

    it('gives no two different provider numbers one key: two ids that JSON.parse reads as one double are refused', () => {
      const a: unknown = JSON.parse('{"order_id":9007199254740993}');
      const b: unknown = JSON.parse('{"order_id":9007199254740992}');
      expect(a).toEqual(b);
      expectTurnError(keyError(a), 'effect-key');
      expectTurnError(keyError(b), 'effect-key');
      // The largest safe integers stay keys of their own.
      expect(effectKey('t', { name: 'f', args: [2 ** 53 - 1] })).not.toBe(
        effectKey('t', { name: 'f', args: [2 ** 53 - 2] }),
      );
    });

    it('throws an effect-key TurnError for a BigInt', () => {
      const error = keyError({ amount: 10n });
      expectTurnError(error, 'effect-key');
      expect(error).toMatchObject({ path: 'args.amount', reason: 'a bigint' });
    });

    it('an object member that is undefined is left out, as JSON.stringify does: the key of the object without it', () => {
      expect(effectKey('t', { name: 'f', args: { order_id: 'ORD-7781', note: undefined } })).toBe(
        effectKey('t', { name: 'f', args: { order_id: 'ORD-7781' } }),
      );
    });

    it("an error of a getter is an effect-key TurnError with the getter's error as its cause", () => {
      const boom = new Error('boom');
      const args = {
        get order_id(): string {
          throw boom;
        },
      };
      const error = keyError(args);
      expectTurnError(error, 'effect-key');
      expect(error).toMatchObject({ path: 'args.order_id' });
      expect((error as Error).cause).toBe(boom);
    });

    it('accepts a shared, non-cyclic reference', () => {
      const shared = { sku: 'B1' };
      const args = { first: shared, second: shared };
      expect(effectKey('t', { name: 'f', args })).toBe(
        expectedKey('t', 'f', { first: shared, second: shared }),
      );
    });
  });
});

describe('the core imports no Node built-ins', () => {
  const src = fileURLToPath(new URL('../src/', import.meta.url));
  // The core: the event model and operators, and the marble helpers beside them.
  const coreFiles = [
    ...readdirSync(src)
      .filter((f) => f.endsWith('.ts'))
      .map((f) => `${src}${f}`),
    ...readdirSync(`${src}testing`)
      .filter((f) => f.endsWith('.ts'))
      .map((f) => `${src}testing/${f}`),
  ];
  const builtins = new Set(builtinModules);

  /** Every module specifier that a source text imports, re-exports or requires. */
  function specifiers(code: string): string[] {
    const found: string[] = [];
    const patterns = [
      /\bfrom\s*['"]([^'"]+)['"]/g,
      /\bimport\s*['"]([^'"]+)['"]/g,
      /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
      /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    ];
    for (const pattern of patterns)
      for (const match of code.matchAll(pattern)) found.push(match[1] as string);
    return found;
  }
  const isBuiltin = (specifier: string) =>
    specifier.startsWith('node:') ||
    builtins.has(specifier) ||
    builtins.has(specifier.split('/')[0] as string);

  it('finds the imports it looks for (the check can fail)', () => {
    const sample = [
      "import { createHash } from 'node:crypto';",
      "import 'fs';",
      "export { x } from './x.js';",
      "const p = await import('node:path');",
      "const u = require('util');",
    ].join('\n');
    expect(specifiers(sample).filter(isBuiltin).sort()).toEqual(['fs', 'node:crypto', 'node:path', 'util']);
  });

  it('has core files to check', () => {
    expect(coreFiles.map((f) => f.slice(src.length))).toEqual(
      expect.arrayContaining(['effectKey.ts', 'index.ts', 'retryAsEvents.ts', 'testing/index.ts']),
    );
  });

  it('no core file imports node: or another Node built-in', () => {
    const offending = coreFiles.flatMap((file) =>
      specifiers(readFileSync(file, 'utf8'))
        .filter(isBuiltin)
        .map((specifier) => `${file.slice(src.length)}: ${specifier}`),
    );
    expect(offending).toEqual([]);
  });
});
