/**
 * How results and errors become storable JSON: the rules every ledger applies.
 *
 * @module
 */
import { isRetryable } from '../errors.js';
import { describeError, readProperty, readString } from '../internal/describeError.js';
import { writeJson } from '../internal/jsonData.js';
import { unstorableResultError } from './errors.js';
import type { JsonValue, SerializedError } from './types.js';

/**
 * Encodes an effect result as JSON text for a ledger, or `undefined` when there is no result.
 *
 * JSON data is `null`, booleans, finite numbers, strings, arrays of JSON data and plain objects (prototype
 * `Object.prototype` or `null`) whose values are JSON data, nested at most 256 levels deep. Object properties that
 * are `undefined` are left out, as `JSON.stringify` does. Everything else (a `Date`, a `Map`, a class instance, a
 * function, a `BigInt`, `NaN`, `undefined` inside an array, a cycle, deeper nesting, a text longer than a string
 * can be) is rejected rather than silently changed: a replay in another process must give back what the first run
 * returned. The text is exactly what `JSON.stringify` writes; the check and the writing are one walk with an
 * explicit stack, so no result can overflow the call stack. The same rule of what JSON data is decides what an
 * effect key can be computed for (`effectKey` of `cleanturn`).
 *
 * @param result What a tool handler returned.
 * @returns The JSON text, or `undefined` for an `undefined` result.
 * @throws {EffectError} `unstorable-result` when the result is not JSON data.
 */
export function encodeResult(result: unknown): string | undefined {
  if (result === undefined) return undefined;
  const written = writeJson(result, 'result', false);
  if (!written.ok) throw unstorableResultError(written.path, written.problem, written.cause);
  return written.json;
}

/**
 * Refuses a result whose JSON text is longer, in bytes of UTF-8, than a ledger's storage takes in one value: the one
 * size rule of the ledgers (the SQLite ledger holds at most 536,870,888 bytes in a value on 64-bit Node, the limit
 * better-sqlite3 sets; Redis takes at most its `proto-max-bulk-len`, 512 MB by default). Checked before anything is
 * sent, so that the claim stands and its holder records the failure (`executeTools` does), instead of a driver
 * error that leaves the claim open (or a server that drops the connection). Counts without copying the text, and
 * only when it could be too long (a UTF-16 unit is at most 3 bytes).
 *
 * @param payload The result's JSON text ({@link encodeResult}), `undefined` for none.
 * @param maxBytes The most bytes the storage takes in one value.
 * @param store What refuses it, for the message (`the SQLite ledger`, `the Redis server (proto-max-bulk-len)`).
 * @throws {EffectError} `unstorable-result` when the text is longer than `maxBytes` bytes of UTF-8.
 */
export function checkResultSize(payload: string | undefined, maxBytes: number, store: string): void {
  if (payload === undefined || payload.length * 3 <= maxBytes) return;
  const bytes = utf8Length(payload);
  if (bytes > maxBytes) {
    throw unstorableResultError(
      'result',
      `its JSON text (${bytes} bytes of UTF-8) is too big for ${store}, which takes at most ${maxBytes} bytes in one value`,
    );
  }
}

/** The length of `text` in UTF-8, as `TextEncoder` would write it (a lone surrogate as the 3 bytes of U+FFFD). */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit < 0xdc00 && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next < 0xe000) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Decodes what {@link encodeResult} produced (`null` or `undefined` for no result).
 *
 * @param text The stored JSON text.
 * @returns The result as JSON data.
 */
export function decodeResult(text: string | null | undefined): JsonValue | undefined {
  return text === null || text === undefined ? undefined : (JSON.parse(text) as JsonValue);
}

/**
 * Turns anything a handler threw into a {@link SerializedError}: name, message, whether it is retryable (an
 * error is unless it carries `retryable: false`), and a string or number `code` when it has one.
 *
 * @param error What the handler threw or rejected with.
 * @returns Plain JSON data that a ledger can store and replay.
 */
export function serializeError(error: unknown): SerializedError {
  // A foreign error may have getters or Proxy traps that throw: read through the readers that never do.
  const name = readString(error, 'name') ?? 'Error';
  const message = describeError(error);
  const serialized: SerializedError = { name, message, retryable: isRetryable(error) };
  const code = readProperty(error, 'code');
  if (typeof code === 'string' || (typeof code === 'number' && Number.isFinite(code))) serialized.code = code;
  return serialized;
}

/**
 * Decodes a stored {@link SerializedError}: the one way every ledger reads a failed record. It never throws: a
 * missing or unreadable payload (a row written by hand, a damaged record) gives `Error` / "the recorded error
 * could not be read" / not retryable, a field of the wrong type is replaced by its default (`name` `Error`,
 * `retryable` false) or left out (`code`), and fields that are not part of a {@link SerializedError} are dropped.
 *
 * @param text The stored JSON text (`null` or `undefined` when there is none).
 * @returns A whole {@link SerializedError}.
 */
export function decodeError(text: string | null | undefined): SerializedError {
  let parsed: unknown;
  try {
    parsed = text === null || text === undefined ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const object =
    typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  const error: SerializedError = {
    name: typeof object.name === 'string' ? object.name : 'Error',
    message: typeof object.message === 'string' ? object.message : 'the recorded error could not be read',
    retryable: object.retryable === true,
  };
  const code = object.code;
  if (typeof code === 'string' || (typeof code === 'number' && Number.isFinite(code))) error.code = code;
  return error;
}
