/** A lone surrogate: a string with one is not well-formed UTF-16, and has no UTF-8 form. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Whether `text` is well-formed UTF-16: it has no lone surrogate, so it has a UTF-8 form that reads back as the
 * same string (what `String.prototype.isWellFormed` of ES2024 answers).
 */
export function isWellFormed(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}
