/**
 * How results and errors become storable JSON: the rules every ledger applies, exported for people who write a
 * ledger of their own (Postgres, DynamoDB).
 *
 * @module
 */
import { describeError, isRetryable } from 'cleanturn';
import { EffectResultError } from './errors.js';
import type { JsonValue, SerializedError } from './types.js';

/**
 * Encodes an effect result as JSON text for a ledger, or `undefined` when there is no result.
 *
 * JSON data is `null`, booleans, finite numbers, strings, arrays of JSON data and plain objects (prototype
 * `Object.prototype` or `null`) whose values are JSON data. Object properties that are `undefined` are left
 * out, as `JSON.stringify` does. Everything else (a `Date`, a `Map`, a class instance, a function, a `BigInt`,
 * `NaN`, `undefined` inside an array, a cycle) is rejected rather than silently changed: a replay in another
 * process must give back what the first run returned.
 *
 * @param result What a tool handler returned.
 * @returns The JSON text, or `undefined` for an `undefined` result.
 * @throws {EffectResultError} when the result is not JSON data.
 */
export function encodeResult(result: unknown): string | undefined {
  if (result === undefined) return undefined;
  checkJson(result, 'result', []);
  return JSON.stringify(result);
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
  const object = typeof error === 'object' && error !== null ? (error as Record<string, unknown>) : {};
  const name = typeof object.name === 'string' ? object.name : 'Error';
  const message = describeError(error);
  const serialized: SerializedError = { name, message, retryable: isRetryable(error) };
  const code = object.code;
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

/** Throws an {@link EffectResultError} at the first value under `value` that is not JSON data. */
function checkJson(value: unknown, path: string, ancestors: object[]): void {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new EffectResultError(path, `${value} is not a finite number`);
      return;
    case 'object': {
      if (value === null) return;
      if (ancestors.includes(value)) throw new EffectResultError(path, 'a cycle');
      ancestors.push(value);
      if (Array.isArray(value)) {
        // An index loop, not forEach: a hole would become null in JSON, a silent change.
        for (let index = 0; index < value.length; index++) {
          if (!(index in value)) throw new EffectResultError(`${path}[${index}]`, 'a hole in an array');
          const item: unknown = value[index];
          if (item === undefined) throw new EffectResultError(`${path}[${index}]`, 'undefined in an array');
          checkJson(item, `${path}[${index}]`, ancestors);
        }
        if (Object.keys(value).length !== value.length) {
          throw new EffectResultError(path, 'an array with properties besides its items');
        }
      } else {
        const prototype: unknown = Object.getPrototypeOf(value);
        if (prototype !== Object.prototype && prototype !== null) {
          const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
          throw new EffectResultError(path, `a ${typeof name === 'string' ? name : 'non-plain object'}`);
        }
        for (const [key, item] of Object.entries(value)) {
          if (item !== undefined) checkJson(item, `${path}.${key}`, ancestors);
        }
      }
      ancestors.pop();
      return;
    }
    default:
      throw new EffectResultError(path, `a ${typeof value}`);
  }
}
