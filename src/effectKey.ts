import stringify from 'fast-json-stable-stringify';
import { EffectKeyError } from './errors.js';
import { sha256Hex16 } from './internal/sha256.js';
import type { ToolCallMeaning } from './types.js';

/**
 * The idempotency key of a tool call's effect: the same for the same meaning, whichever attempt or
 * process produced the call.
 *
 * The key is the first 16 hex characters (64 bits) of the SHA-256 of the canonical JSON of
 * `[turnId, name, args]`, or `[turnId, name, args, step]` when a step is given. Canonical JSON sorts object
 * keys by UTF-16 code units and writes numbers and strings as `JSON.stringify` does; for plain JSON data
 * (finite numbers, well-formed strings) this is exactly the RFC 8785 (JCS) canonical form, so a service in
 * any language with a JCS library and SHA-256 computes the same key.
 *
 * Provider call ids are not part of the key: they change with every attempt. Where one turn may hold two
 * genuinely equal effects (two identical refunds), the orchestrator passes a `step` — never the model.
 *
 * Pure and synchronous; the same answer in Node and in browsers. Node computes the hash with its native
 * `crypto` (found at run time, never imported, so browser bundles stay free of Node built-ins), other runtimes
 * with `@noble/hashes`.
 *
 * ## Example
 * ```ts
 * import { effectKey } from 'cleanturn';
 *
 * const a = effectKey('turn-42', { name: 'issue_refund', args: { order_id: 'ORD-7781', amount: 'full' } });
 * const b = effectKey('turn-42', { name: 'issue_refund', args: { amount: 'full', order_id: 'ORD-7781' } });
 * a === b; // true: key order does not matter
 * ```
 *
 * @param turnId The orchestrator's id for the turn, stable across retries and restarts.
 * @param call The tool's name and parsed arguments (a whole `tool-call` event will do).
 * @param step An orchestrator-supplied step number that separates equal effects within one turn.
 * @returns 16 lowercase hex characters.
 * @throws {EffectKeyError} when the arguments are not JSON data (a cycle, a BigInt).
 */
export function effectKey(turnId: string, call: ToolCallMeaning, step?: number): string {
  let json: string;
  try {
    json = stringify(
      step === undefined ? [turnId, call.name, call.args] : [turnId, call.name, call.args, step],
    );
  } catch (error) {
    throw new EffectKeyError(call.name, error);
  }
  return sha256Hex16(json);
}
