// Small helpers every adapter uses.

/** Whether a value is an object (a parsed JSON payload or event) rather than a primitive. */
export function isRecord<T>(value: T): value is T & Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** Whether an HTTP-like status says that a new attempt could succeed: 408, 409, 429 and 5xx. */
export function isTransientStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}
