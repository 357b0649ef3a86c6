import type { ToolResultLike } from './types.js';

/**
 * Why a run's effect may have happened twice:
 * - `reclaimed`: the run took over a claim whose holder stopped renewing it (a crash, a lost connection), and
 *   that earlier run may have performed the effect before it stopped;
 * - `lease-lost`: this run's lease was lost while its handler ran, so another holder may have run it too.
 *
 * @inline
 */
export type ToolResultDoubt = 'reclaimed' | 'lease-lost';

/**
 * What a tool result means to a screen, as {@link toolResultStatus} reads it.
 *
 * @inline
 */
export interface ToolResultStatus {
  /**
   * `completed`: the effect happened (it ran now, or its recorded result was replayed); `running`: another
   * process runs it; `failed`: it did not happen here (the tool failed, or no tool has its name).
   */
  status: 'running' | 'completed' | 'failed';
  /** Set when the effect may have happened twice; a screen shows the result with a warning. */
  inDoubt?: ToolResultDoubt;
}

/**
 * Reads an executor's result the way every renderer of this package shows it: its status, and whether its
 * effect is in doubt. A renderer of your own can use it to agree with the shipped ones.
 *
 * ## Example
 * ```ts
 * import { toolResultStatus } from 'cleanturn';
 *
 * const { status, inDoubt } = toolResultStatus(result);
 * const icon = status === 'completed' ? (inDoubt ? '⚠' : '✓') : status === 'failed' ? '✗' : '…';
 * ```
 *
 * @param result A `tool-result` event (the executor's outcome for one call).
 * @returns Its status, and `inDoubt` when the effect may have happened twice.
 */
export function toolResultStatus(result: ToolResultLike): ToolResultStatus {
  const { outcome } = result;
  const status =
    outcome === 'executed' || outcome === 'replayed'
      ? 'completed'
      : outcome === 'in-progress'
        ? 'running'
        : 'failed';
  if (result.leaseLost === true) return { status, inDoubt: 'lease-lost' };
  if (outcome === 'executed' && result.reclaimed === true) return { status, inDoubt: 'reclaimed' };
  return { status };
}
