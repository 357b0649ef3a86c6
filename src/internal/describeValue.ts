// What a value a caller passed is, for the `not <what it was>` end of a UsageError's message.
import { readProperty } from './describeError.js';

/**
 * What a value is, for a message: itself when it is short (a number, a boolean, a string of up to 40 characters,
 * quoted), else its kind (`a string`, `an array`, `a function`, `a Promise`, `an object`). Never throws: a
 * `then` that cannot be read is absent.
 *
 * @param value Anything: an option, a callback's result, a clock reading.
 * @returns A short text: `5`, `"fast"`, `null`, `an array`.
 */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'undefined':
      return 'undefined';
    case 'string':
      return value.length <= 40 ? JSON.stringify(value) : 'a string';
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(value);
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
    default:
      return typeof readProperty(value, 'then') === 'function' ? 'a Promise' : 'an object';
  }
}
