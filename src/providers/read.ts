// Field readers every decoder uses, imported as one namespace (`read.string(value, site)`): each reads one
// field of a payload and either returns its value or throws a ProviderError naming the payload and the field.
import { type ProviderError, providerPayloadError } from './errors.js';
import { isObject } from './shared.js';

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
export function invalid(site: FieldSite, expected: string, value: unknown): ProviderError {
  return providerPayloadError(site.operator, 'invalid-field', `expected ${expected}, got ${kindOf(value)}`, {
    field: site.field,
    payload: site.payload,
  });
}

/** A position (`index`, `output_index`): a non-negative integer or its decimal string; absent is undefined. */
export function index(value: unknown, site: FieldSite): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'string' && /^(0|[1-9]\d{0,8})$/.test(value)) return Number(value);
  throw invalid(site, 'a non-negative integer', value);
}

/** A string field: absent (or null) is undefined, a string is itself, anything else is an error. */
export function string(value: unknown, site: FieldSite): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  throw invalid(site, 'a string', value);
}

/** A tool name: a non-empty string, or an error naming the field. */
export function name(value: unknown, site: FieldSite): string {
  if (typeof value === 'string' && value !== '') return value;
  throw invalid(site, 'a tool name (a non-empty string)', value);
}

/**
 * Argument text: a string as it is; an object or array as its JSON (some compatible servers send arguments
 * parsed); absent is undefined; a number or boolean is an error, never `{}`.
 */
export function args(value: unknown, site: FieldSite): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  throw invalid(site, 'argument JSON text (a string) or an object', value);
}

/** Arguments given whole: an object (absent means `{}`), or an error naming the field. */
export function argsObject(value: unknown, site: FieldSite): unknown {
  if (value === undefined || value === null) return {};
  if (typeof value === 'object' && !Array.isArray(value)) return value;
  throw invalid(site, 'an arguments object', value);
}

/** A nested object (`delta`, `usage`): absent (or null) is undefined, an object is itself, anything else is an error. */
export function object(value: unknown, site: FieldSite): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  if (isObject(value)) return value;
  throw invalid(site, 'an object', value);
}

/** An entry of a list (a choice, a part): an object, or an error naming the field; null is an error too. */
export function entry(value: unknown, site: FieldSite): Record<string, unknown> {
  if (isObject(value)) return value;
  throw invalid(site, 'an object', value);
}

/** A list (`choices`, `parts`): absent (or null) is undefined, an array is itself, anything else is an error. */
export function list(value: unknown, site: FieldSite): readonly unknown[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) return value;
  throw invalid(site, 'an array', value);
}

/** A token count: absent (or null) is undefined, a finite number is itself, anything else is an error. */
export function count(value: unknown, site: FieldSite): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  throw invalid(site, 'a token count (a number)', value);
}
