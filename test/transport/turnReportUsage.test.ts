// The turn report bills every attempt: the cached input and reasoning tokens it reported are summed with the rest.
import { accumulateTurn, type TurnState } from 'cleanturn';
import { at, finish, reset, text } from 'cleanturn/testing';
import { from, lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { toTurnReport } from '../../src/transport/turnReport.js';

describe('toTurnReport', () => {
  it("sums cached input and reasoning tokens over the attempts, the abandoned one's included", async () => {
    const state: TurnState = await lastValueFrom(
      from([
        at(1, text('Refunding the dam')),
        at(1, {
          type: 'usage',
          inputTokens: 400,
          outputTokens: 30,
          cachedInputTokens: 256,
          reasoningTokens: 20,
        }),
        reset(2, 'connection reset'),
        at(2, text('Refund started.')),
        at(2, { type: 'usage', inputTokens: 400, outputTokens: 50, reasoningTokens: 35 }),
        at(2, finish('stop')),
      ] as const).pipe(accumulateTurn()),
    );
    const report = toTurnReport('turn-42', state, { outcome: 'completed' });
    expect(report.attempts.map((a) => a.usage)).toEqual([
      { inputTokens: 400, outputTokens: 30, cachedInputTokens: 256, reasoningTokens: 20 },
      { inputTokens: 400, outputTokens: 50, reasoningTokens: 35 },
    ]);
    expect(report.usage).toEqual({
      inputTokens: 800,
      outputTokens: 80,
      cachedInputTokens: 256,
      reasoningTokens: 55,
    });
  });
});
