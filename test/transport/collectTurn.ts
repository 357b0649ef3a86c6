// Runs one turn through streamTurn and records what every party saw: the user (text, resets), the tools
// (executed calls and keys) and billing (the turn report).
import { effectKey, type KeyedToolCall, type ResetEvent } from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import { type StreamTurnOptions, streamTurn, type TurnReport } from 'cleanturn/transport';
import type { ReleasedCall } from '../../src/types.js';

export interface TurnOutcome {
  /** What a renderer shows at the end: text appended, cleared on every reset. */
  text: string;
  resets: ResetEvent[];
  /** Calls that reached the tools and ran, in order: repeats of a key that already ran are answered, not run. */
  executed: KeyedToolCall[];
  /** Every released call, repeats included, in order. */
  released: ReleasedCall[];
  report: TurnReport | undefined;
  error: unknown;
}

export function collectTurn(
  url: string,
  options: Partial<Omit<StreamTurnOptions<unknown>, 'request' | 'adapter' | 'onReport'>> = {},
): Promise<TurnOutcome> {
  return new Promise((resolve) => {
    const outcome: TurnOutcome = {
      text: '',
      resets: [],
      executed: [],
      released: [],
      report: undefined,
      error: undefined,
    };
    streamTurn({
      turnId: 'turn-42',
      adapter: openaiChat(),
      retry: 2,
      backoff: false,
      stallTimeout: 5_000,
      ...options,
      request: ({ signal }) => ({
        url: `${url}/v1/chat/completions`,
        init: {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"stream":true}',
          signal,
        },
      }),
      onReport: (report) => {
        outcome.report = report;
      },
    }).subscribe({
      next(event) {
        if (event.type === 'reset') {
          outcome.resets.push(event);
          outcome.text = '';
        } else if (event.type === 'text') {
          outcome.text += event.text;
        } else if (event.type === 'tool-call' || event.type === 'tool-call-repeat') {
          if (event.effectKey !== effectKey('turn-42', event))
            throw new Error('a released call has a wrong key');
          outcome.released.push(event);
          if (event.type === 'tool-call') outcome.executed.push(event);
        }
      },
      error(error) {
        outcome.error = error;
        resolve(outcome);
      },
      complete: () => resolve(outcome),
    });
  });
}
