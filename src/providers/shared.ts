// Field readers every decoder uses: each reads one field of a payload and either returns its value or throws a
// ProviderError naming the payload and the field.
import { type ProviderError, providerPayloadError } from './errors.js';

/** Whether a value is an object (a parsed JSON payload or event) rather than a primitive. */
export function isRecord<T>(value: T): value is T & Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** Whether a value is an object that is not an array: what a payload's nested objects (`delta`, `usage`) must be. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A non-empty string as it is; anything else (an empty string, a number, absent) is undefined. */
export function nonEmptyText(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Where a field was read: the operator, the payload and the field's path, for the error if it is wrong. */
export interface FieldSite {
  operator: string;
  payload: unknown;
  field: string;
}

/** What a value that is not what was expected is, for a message: `an array`, `null`, else its `typeof`. */
export function kindOf(value: unknown): string {
  return Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value;
}

/**
 * The `invalid-field` error of a value that is not what the field must be: `expected <expected>, got <its type>`.
 * Every reader below throws it; a decoder with a check of its own (a required field) throws it too.
 */
export function invalidField(site: FieldSite, expected: string, value: unknown): ProviderError {
  return providerPayloadError(site.operator, 'invalid-field', `expected ${expected}, got ${kindOf(value)}`, {
    field: site.field,
    payload: site.payload,
  });
}

/** A position (`index`, `output_index`): a non-negative integer or its decimal string; absent is undefined. */
export function indexField(value: unknown, site: FieldSite): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'string' && /^(0|[1-9]\d{0,8})$/.test(value)) return Number(value);
  throw invalidField(site, 'a non-negative integer', value);
}

/** A string field: absent (or null) is undefined, a string is itself, anything else is an error. */
export function stringField(value: unknown, site: FieldSite): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  throw invalidField(site, 'a string', value);
}

/** A tool name: a non-empty string, or an error naming the field. */
export function nameField(value: unknown, site: FieldSite): string {
  if (typeof value === 'string' && value !== '') return value;
  throw invalidField(site, 'a tool name (a non-empty string)', value);
}

/**
 * Argument text: a string as it is; an object or array as its JSON (some compatible servers send arguments
 * parsed); absent is undefined; a number or boolean is an error, never `{}`.
 */
export function argumentsField(value: unknown, site: FieldSite): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  throw invalidField(site, 'argument JSON text (a string) or an object', value);
}

/** Arguments given whole: an object (absent means `{}`), or an error naming the field. */
export function argsObjectField(value: unknown, site: FieldSite): unknown {
  if (value === undefined || value === null) return {};
  if (typeof value === 'object' && !Array.isArray(value)) return value;
  throw invalidField(site, 'an arguments object', value);
}

/** A nested object (`delta`, `usage`): absent (or null) is undefined, an object is itself, anything else is an error. */
export function objectField(value: unknown, site: FieldSite): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  if (isObject(value)) return value;
  throw invalidField(site, 'an object', value);
}

/** An entry of a list (a choice, a part): an object, or an error naming the field; null is an error too. */
export function entryField(value: unknown, site: FieldSite): Record<string, unknown> {
  if (isObject(value)) return value;
  throw invalidField(site, 'an object', value);
}

/** A list (`choices`, `parts`): absent (or null) is undefined, an array is itself, anything else is an error. */
export function listField(value: unknown, site: FieldSite): readonly unknown[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) return value;
  throw invalidField(site, 'an array', value);
}

/** A token count: absent (or null) is undefined, a finite number is itself, anything else is an error. */
export function countField(value: unknown, site: FieldSite): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  throw invalidField(site, 'a token count (a number)', value);
}

/**
 * The options of an adapter.
 * @inline
 */
export type AdapterOptions<Info> = {
  /**
   * Decides whether an error the provider reported deserves a new attempt, from what the adapter read of it;
   * return `undefined` to keep the default, the table of `isRetryableUpstream`. For servers
   * with error codes of their own.
   */
  retryable?: (error: Info) => boolean | undefined;
};
