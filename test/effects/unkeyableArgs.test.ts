// A tool call whose arguments cannot be keyed (an id of 20 digits that JSON.parse rounded to a double another id
// shares, or a user's own Map, undefined or NaN) never runs: dedupeByEffectKey fails the turn with the typed
// TurnError (code effect-key) at that call, so executeTools never sees it. No colliding key is made up for it.
import { assembleToolCalls, cleanTurn, dedupeByEffectKey, type ProviderEvent, TurnError } from 'cleanturn';
import { executeTools, MemoryEffectLedger, type ToolHandlers } from 'cleanturn/effects';
import { call, delta, finish, retrying, text } from 'cleanturn/testing';
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';

const turnId = 'turn-42';

/** Handlers that count their runs. */
function counting() {
  const ran: string[] = [];
  const handlers: ToolHandlers = {
    issue_refund: async (args) => {
      ran.push(`issue_refund ${JSON.stringify(args)}`);
      return { refund_id: 're_1' };
    },
    send_email: async () => {
      ran.push('send_email');
    },
  };
  return { ran, handlers };
}

/** The error a stream ends with (fails the test when it completes). */
async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected an error, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

describe('a call whose arguments cannot be keyed', () => {
  it('a 20-digit id from the provider: the turn fails with TurnError effect-key and the refund never runs', async () => {
    // The model wrote an account number as a JSON number; JSON.parse keeps only the nearest double.
    const events: ProviderEvent[] = [
      text('Refunding to account 12345678901234567891. '),
      delta(0, '{"account":12345678901234567891,', { id: 'c1', name: 'issue_refund' }),
      delta(0, '"amount":"full"}'),
      finish('tool-calls'),
    ];
    const { ran, handlers } = counting();
    const ledger = new MemoryEffectLedger();
    const error = await failure(
      lastValueFrom(
        from(events).pipe(
          assembleToolCalls(),
          cleanTurn({ turnId }),
          executeTools(handlers, { turnId, ledger }),
          toArray(),
        ),
      ),
    );
    expect(error).toBeInstanceOf(TurnError);
    expect(error).toMatchObject({ code: 'effect-key' });
    expect(error).toMatchObject({ retryable: false, toolName: 'issue_refund', path: 'args.account' });
    expect((error as Error).message).toMatch(/MAX_SAFE_INTEGER/);
    expect(ran).toEqual([]);
  });

  it('two ids that read as one double never share a key: neither call runs as the repeat of the other', async () => {
    const first = JSON.parse('{"account":9007199254740993}') as unknown;
    const second = JSON.parse('{"account":9007199254740992}') as unknown;
    for (const args of [first, second]) {
      const { ran, handlers } = counting();
      const error = await failure(
        lastValueFrom(
          from([call('c1', 'issue_refund', args), finish('tool-calls')]).pipe(
            cleanTurn({ turnId }),
            executeTools(handlers, { turnId }),
            toArray(),
          ),
        ),
      );
      expect(error).toBeInstanceOf(TurnError);
      expect(error).toMatchObject({ code: 'effect-key' });
      expect(ran).toEqual([]);
    }
  });

  it('dedupeByEffectKey: the calls before it are keyed and released; the error comes in its place; nothing after it', () => {
    const collected: unknown[] = [];
    const errors: unknown[] = [];
    from([
      call('c1', 'send_email', { to: 'ada@example.com' }),
      call('c2', 'issue_refund', { lines: new Map([['B1', 1]]) }),
      call('c3', 'issue_refund', { order_id: 'ORD-7781' }),
      finish('tool-calls'),
    ])
      .pipe(dedupeByEffectKey({ turnId }))
      .subscribe({ next: (e) => collected.push(e), error: (e: unknown) => errors.push(e) });
    expect(collected).toMatchObject([{ type: 'tool-call', id: 'c1', effectKey: expect.any(String) }]);
    expect(collected).toHaveLength(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(TurnError);
    expect(errors[0]).toMatchObject({ code: 'effect-key' });
    expect(errors[0]).toMatchObject({ toolName: 'issue_refund', path: 'args.lines', reason: 'a Map' });
  });

  it('an abandoned attempt with such a call does not matter: only released calls are keyed', async () => {
    const { ran, handlers } = counting();
    const results = await lastValueFrom(
      from([
        call('c1', 'issue_refund', JSON.parse('{"account":12345678901234567891}')),
        retrying('connection reset'),
        call('c2', 'issue_refund', { account: '12345678901234567891' }),
        finish('tool-calls'),
      ]).pipe(cleanTurn({ turnId }), executeTools(handlers, { turnId }), toArray()),
    );
    expect(results).toMatchObject([{ outcome: 'executed', call: { id: 'c2' } }]);
    expect(ran).toEqual(['issue_refund {"account":"12345678901234567891"}']);
  });
});
