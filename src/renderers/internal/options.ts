// The options the renderers share: how a reset presents the abandoned attempt, read and checked in one place.
import { checkOneOf, checkOption } from '../../internal/options.js';

/**
 * How a view presents what an abandoned attempt showed, once its `reset` arrives:
 * - `rollback`: it disappears at once;
 * - `mark`: it stays in view, apart from the live attempt and marked interrupted, until the new attempt shows its
 *   own text or reasoning.
 *
 * @inline
 */
export type ResetPresentation = 'rollback' | 'mark';

/**
 * The presentation that `options.onReset` asks for: `rollback` when absent.
 *
 * @throws UsageError naming `operator` when `options` is not an object, or `onReset` is neither presentation.
 */
export function resetPresentation(operator: string, options: unknown): ResetPresentation {
  if (options === undefined) return 'rollback';
  checkOption(typeof options === 'object' && options !== null, operator, 'options', 'an object', options);
  const { onReset = 'rollback' } = options as { onReset?: unknown };
  checkOneOf(operator, 'onReset', onReset, ['rollback', 'mark']);
  return onReset;
}
