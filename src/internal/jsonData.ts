/**
 * What JSON data is, as one rule: which values an effect key can be computed for (`effectKey` of `cleanturn`,
 * canonical) and which results a ledger can store (`encodeResult` of `cleanturn/effects`), and the JSON text of
 * each. Dependency-free (no errors, no imports), so that every entry point may bundle it: the callers turn a
 * problem into their own typed error.
 *
 * @module
 */

/**
 * How deep JSON data may nest (arrays and objects inside each other) in effect-key arguments and in effect
 * results: 256 levels. Real tool arguments and results nest a few levels; the bound keeps every `JSON.stringify`
 * and `JSON.parse` that later meets the value (a provider's request body, a ledger in another language) far from
 * its stack's end.
 */
export const MAX_JSON_DEPTH = 256;

/** What {@link writeJson} gives: the JSON text, or where the first value that is not JSON data is and why. */
export type JsonWritten =
  | { ok: true; json: string }
  | { ok: false; path: string; problem: string; cause?: unknown };

/** An array or object being written: what is left of it. */
interface Open {
  /** The array or object. */
  value: object;
  /** The object's member names in the order they are written; `undefined` for an array. */
  keys: string[] | undefined;
  /** The index of the next item or member. */
  next: number;
  /** Whether a member was written (an object's next member needs a comma). */
  wrote: boolean;
}

/** Characters that `JSON.stringify` escapes in a string: controls, `"`, `\`, and (when lone) surrogates. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the controls are what JSON escapes
const NEEDS_ESCAPE = /[\u0000-\u001f"\\\ud800-\udfff]/;

/** A string as JSON text, exactly as `JSON.stringify` writes it (without copying a string that needs no escape). */
export function quote(text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
}

/**
 * Writes JSON data as JSON text, or says where the first value that is not JSON data is: the one rule of what JSON
 * data is, for effect keys (canonical) and for stored effect results (`encodeResult` of `cleanturn/effects`).
 *
 * JSON data: `null`, booleans, finite numbers, strings, arrays without holes, `undefined` items or extra
 * properties, and plain objects (prototype `Object.prototype` or `null`); object members that are `undefined`
 * are left out, as `JSON.stringify` does; no cycles; at most {@link MAX_JSON_DEPTH} levels deep. The walk uses an
 * explicit stack, never recursion, so neither depth nor size can overflow the call stack, and reads each value
 * once (a getter runs once); a text longer than a string can be is a problem at `path`, as is an error thrown while
 * reading the value (a getter, a proxy).
 *
 * @param value The value to write.
 * @param path What the value is, for problems (`args`, `result`); nested values extend it (`args.lines[2].sku`).
 * @param canonical `true` for the canonical form of effect keys: members sorted by UTF-16 code units, and integers
 *   beyond `Number.MAX_SAFE_INTEGER` refused (past it, two numbers of the provider's JSON text read as one).
 *   `false` keeps the members' order and writes exactly what `JSON.stringify` writes.
 * @returns The text, or the problem.
 */
export function writeJson(value: unknown, path: string, canonical: boolean): JsonWritten {
  const walk: Walk = { path, canonical, stack: [], json: '', reading: false, item: value, pending: true };
  try {
    for (;;) {
      if (walk.pending) {
        walk.pending = false;
        const wrong = writeValue(walk, walk.item);
        if (wrong !== undefined) return wrong;
      }
      const top = walk.stack[walk.stack.length - 1];
      if (top === undefined) return { ok: true, json: walk.json };
      if (top.keys !== undefined) nextMember(walk, top, top.keys);
      else {
        const wrong = nextItem(walk, top);
        if (wrong !== undefined) return wrong;
      }
    }
  } catch (error) {
    if (!walk.reading) return { ok: false, path, problem: 'too long to write as JSON text', cause: error };
    return problem(path, walk.stack, `reading it threw: ${thrownMessage(error)}`, error);
  }
}

/** Where a {@link writeJson} walk is: the text so far, the open arrays and objects, the value to write next. */
interface Walk {
  /** What the value is, for problems. */
  readonly path: string;
  /** Whether the canonical form is written (see {@link writeJson}'s `canonical`). */
  readonly canonical: boolean;
  /**
   * The arrays and objects being written, outermost first; no more than MAX_JSON_DEPTH, so a cycle is found by
   * looking through it.
   */
  readonly stack: Open[];
  /** The JSON text so far. */
  json: string;
  /** Whether a value is being read (a getter or a proxy may throw), not written. */
  reading: boolean;
  /** The value to write next, while `pending`; then the walk moves on to the next item. */
  item: unknown;
  pending: boolean;
}

/** Writes one value: a primitive whole, an array or object opened; or says what is wrong with it. */
function writeValue(walk: Walk, item: unknown): JsonWritten | undefined {
  switch (typeof item) {
    case 'string':
    case 'boolean':
    case 'number':
      return writePrimitive(walk, item);
    case 'object':
      if (item === null) return writePrimitive(walk, item);
      return openValue(walk, item);
    case 'undefined':
      return problem(walk.path, walk.stack, 'undefined');
    default:
      return problem(walk.path, walk.stack, article(typeof item));
  }
}

/** Writes a string, a boolean, a number (unless it is not JSON data) or `null`. */
function writePrimitive(walk: Walk, item: string | boolean | number | null): JsonWritten | undefined {
  if (typeof item === 'string') walk.json += quote(item);
  else if (typeof item === 'boolean') walk.json += item ? 'true' : 'false';
  else if (item === null) walk.json += 'null';
  else {
    const wrong = numberProblem(item, walk.canonical);
    if (wrong !== undefined) return problem(walk.path, walk.stack, wrong);
    walk.json += String(item);
  }
  return undefined;
}

/** Opens an array or object: its bracket is written, and it becomes the innermost open one. */
function openValue(walk: Walk, item: object): JsonWritten | undefined {
  walk.reading = true;
  const open = openContainer(item, walk.stack, walk.canonical);
  walk.reading = false;
  if (typeof open === 'string') return problem(walk.path, walk.stack, open);
  walk.stack.push(open);
  walk.json += open.keys === undefined ? '[' : '{';
  return undefined;
}

/**
 * The next item of the innermost open array (a hole or an `undefined` is a problem), or its end: its bracket
 * closes it, unless it has properties besides its items.
 */
function nextItem(walk: Walk, top: Open): JsonWritten | undefined {
  const array = top.value as readonly unknown[];
  walk.reading = true;
  if (top.next < array.length) {
    const index = top.next++;
    if (!(index in array)) return problem(walk.path, walk.stack, 'a hole in an array');
    const item = array[index];
    walk.reading = false;
    if (item === undefined) return problem(walk.path, walk.stack, 'undefined in an array');
    if (index > 0) walk.json += ',';
    walk.item = item;
    walk.pending = true;
    return undefined;
  }
  if (Object.keys(array).length !== array.length) {
    return problem(walk.path, walk.stack.slice(0, -1), 'an array with properties besides its items');
  }
  walk.reading = false;
  walk.json += ']';
  walk.stack.pop();
  return undefined;
}

/** The next member of the innermost open object (its name written; `undefined` members left out), or its end. */
function nextMember(walk: Walk, top: Open, keys: readonly string[]): void {
  const object = top.value as Record<string, unknown>;
  while (top.next < keys.length) {
    const key = keys[top.next++] as string;
    walk.reading = true;
    const item = object[key];
    walk.reading = false;
    if (item === undefined) continue;
    walk.json += `${top.wrote ? ',' : ''}${quote(key)}:`;
    top.wrote = true;
    walk.item = item;
    walk.pending = true;
    return;
  }
  walk.json += '}';
  walk.stack.pop();
}

/** What is wrong with a number as JSON data, or `undefined` when nothing is (see {@link writeJson}'s `canonical`). */
function numberProblem(number: number, canonical: boolean): string | undefined {
  if (!Number.isFinite(number)) return `${number} is not a finite number`;
  if (canonical && Math.abs(number) > Number.MAX_SAFE_INTEGER) {
    return `${number} is an integer beyond Number.MAX_SAFE_INTEGER (2^53 - 1), where two different numbers of JSON text read as one; send it as a string`;
  }
  return undefined;
}

/**
 * Opens an array or a plain object for writing (its members sorted when `canonical`), or says what is wrong with
 * it: a cycle (it is open already in `stack`), one level too deep, or an object that is not plain. Reads the value
 * (a proxy's traps may throw): the caller counts what it throws as an error while reading.
 */
function openContainer(value: object, stack: readonly Open[], canonical: boolean): Open | string {
  const nesting = nestingProblem(value, stack);
  if (nesting !== undefined) return nesting;
  if (Array.isArray(value)) return { value, keys: undefined, next: 0, wrote: false };
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return describeObject(value);
  const keys = Object.keys(value);
  if (canonical) keys.sort();
  return { value, keys, next: 0, wrote: false };
}

/** What is wrong with opening `value` inside `stack`: a cycle (it is open already), or one level too deep. */
function nestingProblem(value: object, stack: readonly Open[]): string | undefined {
  for (const open of stack) if (open.value === value) return 'a cycle';
  return stack.length >= MAX_JSON_DEPTH ? `nested deeper than ${MAX_JSON_DEPTH} levels` : undefined;
}

/** The message of what a getter threw, which may itself throw when read (no describeError: this module imports nothing). */
function thrownMessage(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return 'an error that cannot be read';
  }
}

/**
 * The problem with the value at the end of `stack`: the item each open array or object is at (`next - 1`) makes
 * the path below `path`.
 */
function problem(path: string, stack: readonly Open[], what: string, cause?: unknown): JsonWritten {
  let at = path;
  for (const open of stack)
    at += open.keys === undefined ? `[${open.next - 1}]` : `.${open.keys[open.next - 1]}`;
  return cause === undefined
    ? { ok: false, path: at, problem: what }
    : { ok: false, path: at, problem: what, cause };
}

/** What a non-plain object is: `a Map`, `an Order`, or `a non-plain object` when its constructor has no name. */
function describeObject(object: object): string {
  let name: unknown;
  try {
    name = (object as { constructor?: { name?: unknown } }).constructor?.name;
  } catch {
    name = undefined;
  }
  return typeof name === 'string' && name !== '' ? article(name) : 'a non-plain object';
}

/** `a Map`, `an Order`, `a Uint8Array`: a name with its indefinite article (by its first letter). */
function article(name: string): string {
  return /^[aeio]/i.test(name) ? `an ${name}` : `a ${name}`;
}
