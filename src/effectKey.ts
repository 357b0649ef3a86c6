import { effectKeyError } from './errors.js';
import { quote, writeJson } from './internal/jsonData.js';
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
 * **What can be keyed.** The arguments must be JSON data that one key can stand for, the values `JSON.parse`
 * gives: `null`, booleans, strings, numbers, arrays and plain objects (prototype `Object.prototype` or `null`),
 * at most 256 levels deep (the one bound of JSON data, for results too). An object member whose value is `undefined` is left out, as
 * `JSON.stringify` leaves it out: `{ note: undefined }` has the key of `{}`. Everything else would either share
 * its key with another value or lose what tells two values apart, so it is refused with an `effect-key` {@link TurnError}
 * instead, naming where it is:
 * - `undefined` as the arguments or in an array (JSON would write `null`), a hole in an array, an array with
 *   properties besides its items;
 * - `NaN`, `Infinity` and `-Infinity` (JSON would write `null`);
 * - integers beyond `Number.MAX_SAFE_INTEGER` (2^53 − 1) in magnitude: past it, two different numbers in the
 *   provider's JSON text (`9007199254740993` and `9007199254740992`, or two 20-digit account numbers) read as
 *   one double, so the arguments no longer tell them apart, and the handler would get the rounded number too.
 *   Tools should declare such values (ids, account numbers, amounts in minor units past 2^53) as strings.
 *   Decimals with more than 17 significant digits are rounded by `JSON.parse` in the same way; the key sees the
 *   double, as the handler does;
 * - a `Map`, a `Set`, a `Date`, a typed array, a boxed primitive, any class instance; a function, a symbol, a
 *   `bigint`; a cycle; nesting deeper than 256 levels.
 *
 * `-0` is written `0`, as RFC 8785 says. A string with a lone surrogate is written with a `\u` escape, as
 * `JSON.stringify` writes it (RFC 8785 assumes well-formed strings). The key of every value that can be keyed is
 * the same as it always was: keys stored in a ledger keep matching.
 *
 * Pure and synchronous; the same answer in Node and in browsers. Node computes the hash with its native
 * `crypto` (found at run time, never imported, so browser bundles stay free of Node built-ins), other runtimes
 * with `@noble/hashes`. The canonical JSON is written without recursion, so no argument can overflow the stack.
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
 * @throws {TurnError} (code `effect-key`) when the arguments (or the step) cannot be keyed, as listed above.
 */
export function effectKey(turnId: string, call: ToolCallMeaning, step?: number): string {
  const { name } = call;
  const json =
    step === undefined
      ? `[${keyPart(name, turnId, 'turnId')},${keyPart(name, name, 'name')},${keyPart(name, call.args, 'args')}]`
      : `[${keyPart(name, turnId, 'turnId')},${keyPart(name, name, 'name')},${keyPart(name, call.args, 'args')},${keyPart(name, step, 'step')}]`;
  return sha256Hex16(json);
}

/** One part of the key's canonical JSON; an `effect-key` {@link TurnError} when it cannot be keyed. */
function keyPart(toolName: string, value: unknown, path: string): string {
  if (typeof value === 'string') return quote(value);
  const written = writeJson(value, path, true);
  if (!written.ok)
    throw effectKeyError(toolName, written.cause, { path: written.path, problem: written.problem });
  return written.json;
}
