// effectKey hashes with Node's native SHA-256 in Node and with @noble/hashes elsewhere: both must give the
// same 16 hex characters for every input, or keys would differ between a server and a browser.
import { createHash } from 'node:crypto';
import { effectKey } from 'cleanturn';
import fc from 'fast-check';
import stringify from 'fast-json-stable-stringify';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeSha256Hex16, sha256Hex16, sha256Hex16Portable } from '../src/internal/sha256.js';

/** The reference: node:crypto over the UTF-8 bytes, as the design defines the key. */
const reference = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16);

/** Any UTF-16 code unit, lone surrogates included. */
const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));
const anyString = fc.string({ unit: anyUnit, maxLength: 300 });

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

  it('effectKey equals the portable computation for any JSON arguments', () => {
    fc.assert(
      fc.property(anyString, anyString, fc.jsonValue(), (turnId, name, args) => {
        const portable = sha256Hex16Portable(stringify([turnId, name, args]));
        expect(effectKey(turnId, { name, args })).toBe(portable);
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
