// What every decoder shares besides its field readers (`read.ts`): type guards, a JSON copy, the adapter options.

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

/** A copy of JSON data an output owns, so that the payload's objects stay the source's. */
export const jsonCopy = (value: unknown): unknown => JSON.parse(JSON.stringify(value) ?? 'null');
