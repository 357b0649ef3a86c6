// Rule 4 across the steps of a run: the orchestrator's step number enters every effect key. The same refund retried
// inside step 1 is one effect; the same refund asked for again in step 2 of the same run is a second one.
import { cleanTurn, dedupeByEffectKey, effectKey, type TurnEvent, turnPipeline, UsageError } from 'cleanturn';
import { executeTools, MemoryEffectLedger } from 'cleanturn/effects';
import { finish, helpDesk as h } from 'cleanturn/testing';
import { streamTurn } from 'cleanturn/transport';
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';

const runId = 'run-7';

/** Step `step` of the run: the help-desk turn (retried once), through cleanTurn and the executor. */
async function step(ledger: MemoryEffectLedger, ran: string[], stepNumber: number) {
  const turn = await lastValueFrom(
    from(h.turn).pipe(cleanTurn({ turnId: runId, step: stepNumber, seen: ledger.seen(runId) }), toArray()),
  );
  const results = await lastValueFrom(
    from(turn).pipe(
      executeTools(
        {
          issue_refund: async () => {
            ran.push(`refund in step ${stepNumber}`);
            return { refund_id: `R-${stepNumber}` };
          },
        },
        { turnId: runId, ledger },
      ),
      toArray(),
    ),
  );
  return { turn, results };
}

describe('effect keys of a step', () => {
  it('the refund retried inside step 1 runs once; asked for again in step 2, it runs again under a key of its own', async () => {
    const ledger = new MemoryEffectLedger();
    const ran: string[] = [];
    const first = await step(ledger, ran, 1);
    const second = await step(ledger, ran, 2);
    // Step 1 again (a restarted step): its refund is a repeat, answered from the ledger.
    const again = await step(ledger, ran, 1);

    expect(ran).toEqual(['refund in step 1', 'refund in step 2']);
    const calls = (events: TurnEvent[]) =>
      events
        .filter((e) => e.type === 'tool-call' || e.type === 'tool-call-repeat')
        .map((e) => [e.type, e.effectKey]);
    expect(calls(first.turn)).toEqual([['tool-call', effectKey(runId, h.k, 1)]]);
    expect(calls(second.turn)).toEqual([['tool-call', effectKey(runId, h.k, 2)]]);
    expect(calls(again.turn)).toEqual([['tool-call-repeat', effectKey(runId, h.k, 1)]]);
    expect(effectKey(runId, h.k, 1)).not.toBe(effectKey(runId, h.k, 2));
    expect(effectKey(runId, h.k, 1)).not.toBe(effectKey(runId, h.k));
    const answers = (results: typeof first.results) =>
      results.map((r) => [r.outcome, 'result' in r ? r.result : undefined]);
    expect(answers(first.results)).toEqual([['executed', { refund_id: 'R-1' }]]);
    expect(answers(second.results)).toEqual([['executed', { refund_id: 'R-2' }]]);
    expect(answers(again.results)).toEqual([['replayed', { refund_id: 'R-1' }]]);
  });

  it('without a step the keys are those of [turnId, name, args], as before', async () => {
    const events = await lastValueFrom(from(h.turn).pipe(cleanTurn({ turnId: runId }), toArray()));
    expect(events.find((e) => e.type === 'tool-call')).toMatchObject({ effectKey: effectKey(runId, h.k) });
  });

  it('a key function of your own is given the step', async () => {
    const seen: unknown[] = [];
    await lastValueFrom(
      from([h.k, finish('tool-calls')]).pipe(
        dedupeByEffectKey({
          turnId: runId,
          step: 4,
          key: (turnId, call, stepNumber) => {
            seen.push([turnId, call.name, stepNumber]);
            return `${turnId}/${stepNumber}/${call.name}`;
          },
        }),
        toArray(),
      ),
    );
    expect(seen).toEqual([[runId, 'issue_refund', 4]]);
  });

  it.each([
    ['a negative step', -1],
    ['a fraction', 1.5],
    ['a string', '2'],
    ['NaN', Number.NaN],
    ['past 2^53', 2 ** 53],
  ])('refuses %s with a UsageError, when the operator is made', (_, bad) => {
    const step = bad as number;
    expect(() => dedupeByEffectKey({ turnId: runId, step })).toThrow(UsageError);
    expect(() => cleanTurn({ turnId: runId, step })).toThrow(/^cleanTurn: step must be an integer >= 0/);
    expect(() => turnPipeline({ turnId: runId, step })).toThrow(UsageError);
    expect(() =>
      streamTurn({
        turnId: runId,
        step,
        adapter: (source) => source as never,
        request: () => 'http://127.0.0.1:9/',
      }),
    ).toThrow(/^streamTurn: step must be an integer >= 0/);
  });
});
