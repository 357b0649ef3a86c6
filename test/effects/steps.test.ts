// Step numbers: one turn may hold two genuinely separate, equal effects (two €10 refunds of one order: a broken
// cup and a late delivery), proposed in two steps of the agent loop. Keyed by meaning alone they collide and the
// second is replayed instead of run; with the orchestrator's step number in the key both run, and retries within
// a step still collapse.

import { cleanTurn, effectKey, type ProviderEvent } from 'cleanturn';
import { executeTools, MemoryEffectLedger, type ToolHandlers, type ToolResultEvent } from 'cleanturn/effects';
import { call, finish, retrying, text } from 'cleanturn/testing';
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { AssembledEvent } from '../../src/assembleToolCalls.js';

const turnId = 'turn-77';
const tenEuros = { order_id: 'ORD-7781', amount: '10.00' };

/** Step 1 of the loop: the model refunds the broken cup. */
const step1: AssembledEvent<ProviderEvent>[] = [
  text('Refunding €10 for the broken cup. '),
  call('c1', 'issue_refund', tenEuros),
  finish('tool-calls'),
];
/** Step 2: the late delivery, the same call; its first attempt is cut off after the call and retried. */
const step2: AssembledEvent<ProviderEvent>[] = [
  text('And €10 for the late deli'),
  call('c2', 'issue_refund', tenEuros),
  retrying('connection reset'),
  text('And €10 for the late delivery.'),
  call('c3', 'issue_refund', tenEuros),
  finish('tool-calls'),
];

/** A payment service that is idempotent on the key, and counts the refunds it made. */
function paymentService() {
  const refunds = new Map<string, { refund_id: string }>();
  const handlers: ToolHandlers = {
    issue_refund: (_args, { effectKey: key }) => {
      let refund = refunds.get(key);
      if (refund === undefined) {
        refund = { refund_id: `re_${refunds.size + 1}` };
        refunds.set(key, refund);
      }
      return refund;
    },
  };
  return { refunds, handlers };
}

/** Runs the turn's steps one after the other, as the agent loop does; `withSteps` puts the step in the key. */
async function runTurn(
  ledger: MemoryEffectLedger,
  handlers: ToolHandlers,
  withSteps: boolean,
): Promise<ToolResultEvent[]> {
  const results: ToolResultEvent[] = [];
  for (const [index, events] of [step1, step2].entries()) {
    const step = index + 1;
    const key = withSteps
      ? (t: string, c: { name: string; args: unknown }) => effectKey(t, c, step)
      : undefined;
    const clean = key === undefined ? cleanTurn({ turnId }) : cleanTurn({ turnId, key });
    results.push(
      ...(await lastValueFrom(
        from(events).pipe(clean, executeTools(handlers, { turnId, ledger }), toArray()),
      )),
    );
  }
  return results;
}

describe('two equal refunds in one turn', () => {
  it('without step numbers they collide: the second is replayed, one refund is made', async () => {
    const { refunds, handlers } = paymentService();
    const results = await runTurn(new MemoryEffectLedger(), handlers, false);
    expect(results.map((r) => r.outcome)).toEqual(['executed', 'replayed']);
    expect(results[0]?.effectKey).toBe(results[1]?.effectKey);
    expect(refunds.size).toBe(1);
  });

  it('with the step number from the orchestrator both run; the retry inside step 2 still runs once', async () => {
    const { refunds, handlers } = paymentService();
    const ledger = new MemoryEffectLedger();
    const results = await runTurn(ledger, handlers, true);
    expect(results.map((r) => [r.outcome, r.call.id])).toEqual([
      ['executed', 'c1'],
      ['executed', 'c3'],
    ]);
    expect(results[0]?.effectKey).toBe(effectKey(turnId, { name: 'issue_refund', args: tenEuros }, 1));
    expect(results[1]?.effectKey).toBe(effectKey(turnId, { name: 'issue_refund', args: tenEuros }, 2));
    expect(refunds.size).toBe(2);

    // The whole turn again (a restart): both replayed, still two refunds.
    const again = await runTurn(ledger, handlers, true);
    expect(again.map((r) => r.outcome)).toEqual(['replayed', 'replayed']);
    expect(again.map((r) => (r.outcome === 'replayed' ? r.result : undefined))).toEqual([
      { refund_id: 're_1' },
      { refund_id: 're_2' },
    ]);
    expect(refunds.size).toBe(2);
  });
});
