// The options the renderers share: how a reset presents the abandoned attempt, read and checked in one place.
import { UsageError } from 'cleanturn';

/**
 * How a view presents what an abandoned attempt showed, once its `reset` arrives:
 * - `rollback`: it disappears at once;
 * - `mark`: it stays in view, apart from the live attempt and marked interrupted, until the new attempt shows its
 *   own text or reasoning.
 *
 * @inline
 */
export type ResetPresentation = 'rollback' | 'mark';

/** A value as an error message names it: strings quoted, objects by their kind. */
function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null) return 'null';
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  return String(value);
}

/**
 * The presentation that `options.onReset` asks for: `rollback` when absent.
 *
 * @throws UsageError naming `operator` when `options` is not an object, or `onReset` is neither presentation.
 */
export function resetPresentation(operator: string, options: unknown): ResetPresentation {
  if (options === undefined) return 'rollback';
  if (typeof options !== 'object' || options === null)
    throw new UsageError(operator, 'options', `must be an object, not ${describe(options)}`);
  const onReset = (options as { onReset?: unknown }).onReset;
  if (onReset === undefined || onReset === 'rollback') return 'rollback';
  if (onReset === 'mark') return 'mark';
  throw new UsageError(operator, 'onReset', `must be 'rollback' or 'mark', not ${describe(onReset)}`);
}
