import { sha256 } from '@noble/hashes/sha2';

/** SHA-256 of a string's UTF-8 bytes, as lowercase hex; only the first `hexChars` characters are needed. */
export type Sha256Hex = (text: string) => string;

const encoder = new TextEncoder();
/** Two hex characters for every byte value. */
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/**
 * The first 16 hex characters (8 bytes) of the SHA-256 of `text`'s UTF-8 bytes, in portable JavaScript
 * (`@noble/hashes`): the implementation for browsers and other runtimes without Node's crypto.
 */
export function sha256Hex16Portable(text: string): string {
  const digest = sha256(encoder.encode(text));
  let hex = '';
  for (let i = 0; i < 8; i++) hex += HEX[digest[i] as number];
  return hex;
}

/** The part of `node:crypto` this file uses. */
interface NodeCrypto {
  /** One-shot hash (Node ≥ 20.12, 21.7). A string is hashed as UTF-8, lone surrogates as U+FFFD, as `TextEncoder` does. */
  hash?: (algorithm: string, data: string, outputEncoding: 'hex') => string;
  createHash?: (algorithm: string) => {
    update(data: string, encoding: 'utf8'): { digest(encoding: 'hex'): string };
  };
}

/**
 * The same function on Node's native SHA-256, or undefined outside Node (or on a Node too old for
 * `process.getBuiltinModule`, before 20.16 / 22.3).
 *
 * Found at run time through `process.getBuiltinModule`, not imported: the core imports no Node built-in, so a
 * browser bundle never sees `node:crypto`, and the sources run unchanged in Node, in tests and in bundlers.
 */
export function nodeSha256Hex16(): Sha256Hex | undefined {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  let crypto: NodeCrypto | undefined;
  try {
    crypto = proc?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined;
  } catch {
    return undefined;
  }
  const { hash, createHash } = crypto ?? {};
  if (typeof hash === 'function') return (text) => hash('sha256', text, 'hex').slice(0, 16);
  if (typeof createHash === 'function') {
    return (text) => createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16);
  }
  return undefined;
}

/** The implementation in use, chosen on first use. */
let chosen: Sha256Hex | undefined;

/**
 * The first 16 hex characters of the SHA-256 of `text`'s UTF-8 bytes: Node's native hash where there is one
 * (about 3× faster for effect-key-sized inputs), the portable one elsewhere. Both give the same result; the
 * native one is checked against the portable one on a sample before it is trusted.
 */
export function sha256Hex16(text: string): string {
  if (chosen === undefined) chosen = choose();
  return chosen(text);
}

function choose(): Sha256Hex {
  const native = nodeSha256Hex16();
  if (native === undefined) return sha256Hex16Portable;
  const sample = '["turn-42","issue_refund",{"amount":"full","order_id":"ORD-7781"}]\u00e9\u20ac\ud83d\ude00';
  try {
    if (native(sample) === sha256Hex16Portable(sample)) return native;
  } catch {
    // A stand-in `process` (a bundler's polyfill) that only looks like Node's.
  }
  return sha256Hex16Portable;
}
