// The executor's results as the renderers and ACP read them (the `tool-result` events of cleanturn/effects).

import type { ToolResultLike } from 'cleanturn';
import type { ReleasedCall } from '../../src/types.js';

/** The result of running `call`: its outcome, and what the tool returned or why it failed (`more`). */
export function toolResult(
  call: ReleasedCall,
  outcome: string,
  more: Partial<ToolResultLike> = {},
): ToolResultLike {
  return { type: 'tool-result', effectKey: call.effectKey, call, outcome, ...more };
}
