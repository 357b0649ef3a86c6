// An event an operator cannot read (null, a fragment without its text) is an error notification for the
// consumer, as a `map` would send it; never an unhandled error while the stream completes as if all went well.
import {
  accumulateTurn,
  assembleToolCalls,
  bufferUntilFinish,
  dedupeByEffectKey,
  requireFinish,
  resetOnRetry,
  tagAttempts,
} from 'cleanturn';
import { from, lastValueFrom, type OperatorFunction, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';

const text = { type: 'text', text: 'Refunding', attempt: 1 };
const finish = { type: 'finish', reason: 'stop', attempt: 1 };

// biome-ignore format: an aligned table
const cases: [string, () => OperatorFunction<never, unknown>, unknown[]][] = [
  ['tagAttempts',       () => tagAttempts(),                          [text, null, finish]],
  ['resetOnRetry',      () => resetOnRetry(),                         [text, null, finish]],
  ['bufferUntilFinish', () => bufferUntilFinish(),                    [text, null, finish]],
  ['dedupeByEffectKey', () => dedupeByEffectKey({ turnId: 'turn-42' }), [text, null, finish]],
  ['requireFinish',     () => requireFinish(),                        [text, null, finish]],
  ['accumulateTurn',    () => accumulateTurn(),                       [text, null, finish]],
  ['assembleToolCalls', () => assembleToolCalls(),                    [{ type: 'tool-call-delta', index: 0, id: 'c1', name: 'issue_refund' }, finish]],
];

describe('a malformed event errors the stream', () => {
  it.each(cases)('%s', async (_name, operator, events) => {
    const result = await lastValueFrom(from(events as never[]).pipe(operator(), toArray())).then(
      (values) => ({ values }),
      (error: unknown) => ({ error }),
    );
    expect(result).toEqual({ error: expect.any(TypeError) });
  });
});
