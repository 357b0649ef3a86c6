import type { FinishEvent } from './types.js';

/**
 * What an agent loop does after a turn, read from its final attempt's finish alone:
 * - `done`: the model answered (`stop`); nothing needs sending back;
 * - `answer`: the model asked for tools (`tool-calls`); run the released calls and send their results;
 * - `continue`: the model paused (`paused`: Anthropic `pause_turn`, `compaction`); send its output back
 *   unchanged and it goes on;
 * - `failed`: the turn did not end in a usable answer (`length`, `content-filter`, `error`, `other`, or no
 *   finish at all); retrying or reporting it is the loop's choice.
 *
 * @inline
 */
export type NextStep = 'done' | 'answer' | 'continue' | 'failed';

/**
 * Tells an agent loop what a finished turn asks of it, from the final attempt's finish alone: `done`, `answer`
 * the calls, `continue` a paused turn, or `failed`. The adapters of `cleanturn/providers` map each provider's
 * own finishes onto this: a call the provider runs itself (a server tool) never makes a turn `answer`.
 *
 * ## Example
 * ```ts
 * import { last, lastValueFrom } from 'rxjs';
 * import { accumulateTurn, nextStep } from 'cleanturn';
 *
 * const turn = await lastValueFrom(turn$.pipe(accumulateTurn(), last()));
 * switch (nextStep(turn.finish)) {
 *   case 'answer': // run turn.toolCalls, then send the next request with their results
 *   case 'continue': // send the next request with the paused output, no new user message
 *   case 'done': // show the answer
 *   case 'failed': // say why: turn.finish?.reason
 * }
 * ```
 *
 * @param finish The final attempt's finish (`TurnState.finish`), or `undefined` when the turn never finished.
 * @returns The step the loop takes next.
 */
export function nextStep(finish: Pick<FinishEvent, 'reason' | 'paused'> | undefined): NextStep {
  if (finish === undefined) return 'failed';
  if (finish.paused === true) return 'continue';
  if (finish.reason === 'tool-calls') return 'answer';
  return finish.reason === 'stop' ? 'done' : 'failed';
}
