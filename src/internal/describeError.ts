// Reading errors that are not ours: what a source, a fetch, an SDK or a tool threw. Such a value may have a getter
// that throws (`message`, `name`), be a Proxy whose traps throw (also for `instanceof`), or be a revoked Proxy on
// which every operation throws. Every place that reads a foreign error goes through these readers, which never
// throw: a field that cannot be read is absent.

/**
 * A property of a foreign value, or `undefined` when the value is not an object or reading the property throws (a
 * getter, a Proxy trap, a revoked Proxy).
 *
 * @param value Anything.
 * @param key The property.
 */
export function readProperty(value: unknown, key: PropertyKey): unknown {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return undefined;
  try {
    return (value as Record<PropertyKey, unknown>)[key];
  } catch {
    return undefined;
  }
}

/**
 * `value instanceof type`, and `false` when the check itself throws (a Proxy whose `getPrototypeOf` trap throws, a
 * revoked Proxy, a class whose `Symbol.hasInstance` throws).
 *
 * @param value Anything.
 * @param type The class.
 */
export function isInstance<T>(value: unknown, type: abstract new (...args: never[]) => T): value is T {
  try {
    return value instanceof type;
  } catch {
    return false;
  }
}

/**
 * A string property of a foreign value (`message`, `name`, `code`), or `undefined` when it is absent, not a string,
 * or cannot be read.
 *
 * @param value Anything.
 * @param key The property.
 */
export function readString(value: unknown, key: PropertyKey): string | undefined {
  const read = readProperty(value, key);
  return typeof read === 'string' ? read : undefined;
}

/**
 * The name of an error (`TypeError`, `APIError`), for a client or a log: its `name` when that is a non-empty string
 * that can be read, else `fallback`.
 *
 * @param error Anything.
 * @param fallback The name of an error that has none. Default `Error`.
 */
export function errorName(error: unknown, fallback = 'Error'): string {
  const name = readString(error, 'name');
  return name === undefined || name === '' ? fallback : name;
}

/**
 * Text as one line for an error message: every run of white space and control characters (line breaks, tabs, a
 * terminal escape) becomes one space, the ends are trimmed, and text longer than `max` characters is cut, with `…`.
 *
 * @param text Anything a message quotes: a provider's message, the start of a body, a reason.
 * @param max The most characters kept. Default: no limit.
 */
export function oneLine(text: string, max = Number.POSITIVE_INFINITY): string {
  const line = text.replace(/[\s\p{Cc}]+/gu, ' ').trim();
  if (line.length <= max) return line;
  // Cut before a lone high surrogate, so that a character outside the BMP is not split in two.
  return `${line.slice(0, max - 1).replace(/[\uD800-\uDBFF]$/, '')}…`;
}

/**
 * An error as one line of text for people and logs: the `reason` of a `retry` event, a failed call's line, a
 * report. One rule everywhere:
 * - an `Error`, or any object with a string `message`: that message, or its `name` when the message is empty or
 *   cannot be read;
 * - a string: itself;
 * - `undefined` or `null`, or an empty string: `unknown error`;
 * - a number, boolean, bigint or symbol: `String(value)`;
 * - any other object: its JSON text (shortened to 200 characters), or `String(value)` when it has none.
 *
 * It never throws: a getter that throws, a Proxy whose traps throw, a `toJSON` or `toString` that throws are read
 * as absent, down to `unreadable error` for a value of which nothing can be read.
 *
 * @param error Whatever was thrown or sent as an error notification.
 * @returns A non-empty line of text.
 */
export function describeError(error: unknown): string {
  if (typeof error === 'string') return error === '' ? UNKNOWN : error;
  if (error === undefined || error === null) return UNKNOWN;
  if (typeof error !== 'object') return printed(error) ?? UNREADABLE;
  const message = readProperty(error, 'message');
  if (typeof message === 'string' && message !== '') return message;
  if (typeof message === 'string' || isInstance(error, Error) || hasOwnGetter(error, 'message')) {
    const name = readString(error, 'name');
    return name === undefined || name === '' ? UNKNOWN : name;
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(error);
  } catch {
    json = undefined;
  }
  if (json === undefined) return printed(error) ?? UNREADABLE;
  return json.length <= 200 ? json : `${json.slice(0, 199)}…`;
}

const UNKNOWN = 'unknown error';
const UNREADABLE = 'unreadable error';

/** `String(value)`, or undefined when the conversion throws (a `toString` or `Symbol.toPrimitive` that throws). */
function printed(value: unknown): string | undefined {
  try {
    const text = String(value);
    return text === '' ? undefined : text;
  } catch {
    try {
      return Object.prototype.toString.call(value);
    } catch {
      return undefined;
    }
  }
}

/** Whether `value` has `key` as an accessor of its own (an error whose `message` getter threw). */
function hasOwnGetter(value: object, key: PropertyKey): boolean {
  try {
    return typeof Object.getOwnPropertyDescriptor(value, key)?.get === 'function';
  } catch {
    return false;
  }
}
