// effectKey hashes with Node's native SHA-256 in Node and with @noble/hashes elsewhere: both must give the
// same 16 hex characters for every input, or keys would differ between a server and a browser.
import { createHash } from 'node:crypto';
import { effectKey } from 'cleanturn';
import fc from 'fast-check';
import stringify from 'fast-json-stable-stringify';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeSha256Hex16, sha256Hex16, sha256Hex16Portable } from '../src/internal/sha256.js';
import { expectTurnError } from './support/errors.js';

/** The reference: node:crypto over the UTF-8 bytes, as the design defines the key. */
const reference = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16);

/** Any UTF-16 code unit, lone surrogates included. */
const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));
const anyString = fc.string({ unit: anyUnit, maxLength: 300 });

/**
 * A number an effect key can stand for: any finite double except the integers beyond `Number.MAX_SAFE_INTEGER`
 * (`fc.double` favours the edges: `-0`, `5e-324`, `Number.MAX_VALUE`, `2^53`…).
 */
const keyableNumber = fc
  .double({ noNaN: true, noDefaultInfinity: true })
  .filter((n) => !(Number.isInteger(n) && Math.abs(n) > Number.MAX_SAFE_INTEGER));

/** JSON data that an effect key can stand for (what `JSON.parse` gives, without integers past 2^53). */
const keyable: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    keyableNumber,
    fc.maxSafeInteger(),
    anyString,
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(anyString, tie('value'), { maxKeys: 5 }),
  ),
})).value;

/** A value that no key can stand for: not JSON data, or a number JSON text cannot tell from its neighbour. */
const unkeyableLeaf = fc.oneof(
  fc.bigInt({ min: 2n ** 53n, max: 2n ** 80n }).map((n) => Number(n)),
  fc.bigInt({ min: 2n ** 53n, max: 2n ** 80n }).map((n) => -Number(n)),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e21, -1e300),
  fc.bigInt().map((n) => n as unknown),
  fc
    .constantFrom<() => unknown>(
      () => new Map(),
      () => new Set([1]),
      () => new Date(0),
      () => new Uint8Array(2),
      () => () => 1,
      () => Symbol('s'),
      () => Object(1),
    )
    .map((make) => make()),
);

/** Keyable data with one value that cannot be keyed somewhere inside, and the path `effect-key TurnError` names. */
const unkeyable: fc.Arbitrary<{ args: unknown; path: string }> = fc.letrec<{
  bad: { args: unknown; path: string };
}>((tie) => ({
  bad: fc.oneof(
    { depthSize: 'small', maxDepth: 6 },
    unkeyableLeaf.map((args) => ({ args, path: 'args' })),
    // `undefined` is left out as an object member (as JSON.stringify leaves it out), refused in an array.
    fc
      .tuple(fc.array(keyable, { maxLength: 3 }), fc.array(keyable, { maxLength: 3 }))
      .map(([before, after]) => ({
        args: [...before, undefined, ...after],
        path: `args[${before.length}]`,
      })),
    fc
      .tuple(fc.array(keyable, { maxLength: 3 }), tie('bad'), fc.array(keyable, { maxLength: 3 }))
      .map(([before, inner, after]) => ({
        args: [...before, inner.args, ...after],
        path: inner.path.replace(/^args/, `args[${before.length}]`),
      })),
    fc
      .tuple(fc.dictionary(anyString, keyable, { maxKeys: 3 }), anyString, tie('bad'))
      .map(([members, name, inner]) => ({
        args: { ...members, [name]: inner.args },
        path: inner.path.replace(/^args/, `args.${name}`),
      })),
  ),
})).bad;

const getBuiltinModule = process.getBuiltinModule;
afterEach(() => {
  process.getBuiltinModule = getBuiltinModule;
});

describe('SHA-256 for effect keys: native and portable', () => {
  const native = nodeSha256Hex16();

  it('finds the native hash on this Node', () => {
    expect(native).toBeTypeOf('function');
  });

  it('gives the same 16 hex characters for any string, lone surrogates included', () => {
    if (native === undefined) throw new Error('no native hash');
    fc.assert(
      fc.property(anyString, (text) => {
        const portable = sha256Hex16Portable(text);
        expect(native(text)).toBe(portable);
        expect(portable).toBe(reference(text));
      }),
      { numRuns: 2000 },
    );
  });

  it('gives the same result for long inputs (1 MiB of mixed text)', () => {
    if (native === undefined) throw new Error('no native hash');
    const text = 'Refund ORD-7781 — café 😀 '.repeat(40_000);
    expect(native(text)).toBe(sha256Hex16Portable(text));
    expect(native(text)).toBe(reference(text));
  });

  it('effectKey equals the portable computation for any arguments that can be keyed', () => {
    fc.assert(
      fc.property(anyString, anyString, keyable, (turnId, name, args) => {
        const portable = sha256Hex16Portable(stringify([turnId, name, args]));
        expect(effectKey(turnId, { name, args })).toBe(portable);
      }),
      { numRuns: 1000 },
    );
  });

  it('effectKey refuses arguments with a value that cannot be keyed, with effect-key TurnError naming where it is', () => {
    fc.assert(
      fc.property(anyString, anyString, unkeyable, (turnId, name, { args, path }) => {
        let thrown: unknown;
        try {
          effectKey(turnId, { name, args });
        } catch (error) {
          thrown = error;
        }
        expectTurnError(thrown, 'effect-key');
        expect(thrown).toMatchObject({ toolName: name, path, retryable: false });
      }),
      { numRuns: 1000 },
    );
  });

  it('uses createHash where the one-shot hash is missing (Node before 20.12), with the same result', () => {
    process.getBuiltinModule = ((id: string) =>
      id === 'node:crypto' ? { createHash } : undefined) as typeof process.getBuiltinModule;
    const fallback = nodeSha256Hex16();
    expect(fallback).toBeTypeOf('function');
    for (const text of ['', 'a', '["turn-42","issue_refund",{"amount":"full"}]', '\ud800x😀']) {
      expect(fallback?.(text)).toBe(sha256Hex16Portable(text));
    }
  });

  it('is undefined outside Node (no process.getBuiltinModule), so the portable hash is used', () => {
    process.getBuiltinModule = undefined as unknown as typeof process.getBuiltinModule;
    expect(nodeSha256Hex16()).toBeUndefined();
  });

  it('the hash in use agrees with both', () => {
    for (const text of ['', 'x', '["t","n",{}]']) expect(sha256Hex16(text)).toBe(reference(text));
  });
});
