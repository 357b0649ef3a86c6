// requireUsable: an attempt that finished but cannot be used (a refusal, an empty answer, a malformed call,
// arguments that fail the tool's schema) errors with a retryable unusable TurnError in place of its finish, so
// that retryAsEvents retries it like a failed connection, under the same cap and budget.
import {
  attemptPipeline,
  CleanturnError,
  cleanTurn,
  isRetryable,
  type ProviderEvent,
  requireFinish,
  requireUsable,
  retryAsEvents,
  retryBudget,
  type TurnError,
  type TurnEvent,
  tagAttempts,
  UsageError,
} from 'cleanturn';
import { executeTools, MemoryEffectLedger, type ToolHandlers } from 'cleanturn/effects';
import { geminiContent } from 'cleanturn/providers';
import { at, call, finish, helpDesk, reasoning, reset, text } from 'cleanturn/testing';
import { defer, from, lastValueFrom, type Observable, share, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import type { AssembledEvent } from '../src/assembleToolCalls.js';
import { unusableAttemptError } from '../src/errors.js';
import type { GeminiChunk } from '../src/providers/geminiContent.js';
import { attemptsOf } from './support/attemptsOf.js';
import { expectTurnError } from './support/errors.js';

const newScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

const refund = call('c1', 'issue_refund', helpDesk.refundArgs);
const badRefund = call('c1', 'issue_refund', { order_id: 'ORD-7781', amount: 'everything' });
const sentence = text('The book arrived damaged, so I have started a full refund.');
const refusal = { type: 'finish', reason: 'content-filter', refusal: "I can't help with that." } as const;

/** The refund tool's schema check, as a user would write it over Ajv or Zod. */
const validateArgs = (c: { name: string; args: unknown }) => {
  if (c.name !== 'issue_refund') return undefined;
  const { amount } = c.args as { amount?: unknown };
  return amount === 'full' || amount === 'partial'
    ? undefined
    : `amount must be "full" or "partial", not ${JSON.stringify(amount)}`;
};

/** The error a stream ends with (fails the test when it completes). */
async function failure(source: Observable<unknown>): Promise<unknown> {
  return lastValueFrom(source.pipe(toArray())).then(
    (values) => {
      throw new Error(`expected an error, got ${JSON.stringify(values)}`);
    },
    (error: unknown) => error,
  );
}

describe('requireUsable: the ready-made checks', () => {
  it('a usable attempt passes through untouched, frame for frame', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const v = { a: text('Checking. '), c: refund, f: finish('tool-calls') };
      const source = cold(' -a-c-f-|', v);
      const sourceSubs = '  ^------!';
      const expected = '    -a-c-f-|';

      expectObservable(source.pipe(requireUsable({ validateArgs }))).toBe(expected, v);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('a refusal becomes a retryable error at the finish, with the refusal text as the reason', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const v = { f: refusal };
      const source = cold(' -f-|', v);
      const sourceSubs = '  ^!';
      const expected = '    -#';
      const error = unusableAttemptError('refusal', 'the model refused: "I can\'t help with that."');

      expectObservable(source.pipe(requireUsable())).toBe(expected, v, error);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('a filtered output without refusal text names the provider’s own reason', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const v = { a: text('Here is'), f: finish('content-filter', 'SAFETY') };
      const error = unusableAttemptError('refusal', 'the model refused or its output was filtered (SAFETY)');
      expectObservable(cold('-a-f-|', v).pipe(requireUsable())).toBe('-a-#', v, error);
    });
  });

  it('an empty answer (no text, whitespace, or reasoning alone) is unusable; any text or call makes it usable', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const v = {
        s: text(' \n'),
        r: reasoning('The customer wants a refund.'),
        f: finish('stop'),
        c: refund,
      };
      const none = 'the model finished with no answer text and no tool call';
      expectObservable(cold('-f-|', v).pipe(requireUsable())).toBe(
        '-#',
        v,
        unusableAttemptError('empty', none),
      );
      expectObservable(cold('-s-f-|', v).pipe(requireUsable())).toBe(
        '-s-#',
        v,
        unusableAttemptError('empty', none),
      );
      expectObservable(cold('-r-f-|', v).pipe(requireUsable())).toBe(
        '-r-#',
        v,
        unusableAttemptError('empty', `${none} (only reasoning)`),
      );
      expectObservable(cold('-c-f-|', v).pipe(requireUsable())).toBe('-c-f-|', v);
      expectObservable(cold('-a-f-|', { ...v, a: text('Done.') }).pipe(requireUsable())).toBe('-a-f-|', {
        ...v,
        a: text('Done.'),
      });
    });
  });

  it('an empty finish of another reason (length, other, a pause) is not the empty check’s business', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const v = { l: finish('length'), p: { type: 'finish', reason: 'other', paused: true } as const };
      expectObservable(cold('-l-|', v).pipe(requireUsable())).toBe('-l-|', v);
      expectObservable(cold('-p-|', v).pipe(requireUsable())).toBe('-p-|', v);
    });
  });

  it('Gemini MALFORMED_FUNCTION_CALL, through the real adapter, is a malformed call', async () => {
    const chunks: GeminiChunk[] = [
      { candidates: [{ content: { parts: [] }, finishReason: 'MALFORMED_FUNCTION_CALL' }] },
    ];
    const error = await failure(from(chunks).pipe(attemptPipeline(geminiContent()), requireUsable()));
    expectTurnError(error, 'unusable');
    expect(error).toMatchObject({ code: 'unusable', check: 'malformed-call', retryable: true });
    expect((error as Error).message).toBe(
      'the attempt is unusable (malformed-call): the provider could not read the tool call the model made (MALFORMED_FUNCTION_CALL)',
    );
    // A plain finish `error` of another provider is not a malformed call.
    const other = await lastValueFrom(from([finish('error')]).pipe(requireUsable(), toArray()));
    expect(other).toEqual([finish('error')]);
  });

  it('arguments that fail the tool’s schema: the first invalid call, in arrival order, is the reason', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const second = call('c2', 'issue_refund', { order_id: 'ORD-1', amount: 12 });
      const v = { a: refund, b: badRefund, c: second, f: finish('tool-calls') };
      const error = unusableAttemptError(
        'invalid-arguments',
        'tool call c1 (issue_refund): amount must be "full" or "partial", not "everything"',
      );
      expectObservable(cold('-a-b-c-f-|', v).pipe(requireUsable({ validateArgs }))).toBe(
        '-a-b-c-#',
        v,
        error,
      );
    });
  });

  it('each ready-made check can be turned off', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const v = { f: refusal, e: finish('stop'), m: finish('error', 'MALFORMED_FUNCTION_CALL') };
      expectObservable(cold('-f-|', v).pipe(requireUsable({ refusal: false }))).toBe('-f-|', v);
      expectObservable(cold('-e-|', v).pipe(requireUsable({ empty: false }))).toBe('-e-|', v);
      expectObservable(cold('-m-|', v).pipe(requireUsable({ malformedCall: false }))).toBe('-m-|', v);
    });
  });

  it('checks of your own run after the ready-made ones, in order; the first verdict wins and names its code', () => {
    const seen: string[] = [];
    newScheduler().run(({ cold, expectObservable }) => {
      const v = { a: text('As an AI language model, I cannot'), f: finish('stop') };
      const usable = requireUsable({
        checks: [
          ({ text: t, finish: f }) => {
            seen.push(`first ${f.reason} ${t.length}`);
            return /^As an AI/.test(t) ? { code: 'boilerplate', reason: 'a canned disclaimer' } : undefined;
          },
          () => {
            seen.push('second');
            return { code: 'never', reason: 'not reached' };
          },
        ],
      });
      expectObservable(cold('-a-f-|', v).pipe(usable)).toBe(
        '-a-#',
        v,
        unusableAttemptError('boilerplate', 'a canned disclaimer'),
      );
    });
    expect(seen).toEqual(['first stop 33']);
  });

  it('a check of your own sees the attempt’s text, reasoning, calls and finish', async () => {
    const seen: unknown[] = [];
    await lastValueFrom(
      from([reasoning('Think. '), text('Refund '), refund, text('started.'), finish('tool-calls')]).pipe(
        requireUsable({
          checks: [
            (attempt) => {
              seen.push(attempt);
              return undefined;
            },
          ],
        }),
        toArray(),
      ),
    );
    expect(seen).toEqual([
      { text: 'Refund started.', reasoning: 'Think. ', calls: [refund], finish: finish('tool-calls') },
    ]);
  });

  it('a check that throws errors the stream with a UsageError (never retried) whose cause is what it threw', async () => {
    const thrown = new Error('schema compiler blew up');
    const error = await failure(
      from([refund, finish('tool-calls')]).pipe(
        requireUsable({
          validateArgs: () => {
            throw thrown;
          },
        }),
      ),
    );
    expect(error).toBeInstanceOf(UsageError);
    expect(error).toMatchObject({
      message: 'requireUsable: validateArgs threw: schema compiler blew up',
      retryable: false,
      cause: thrown,
    });
  });

  it('a check that returns what it must not is a UsageError naming it', async () => {
    const wrong = requireUsable({ validateArgs: (() => false) as unknown as () => undefined });
    const error = await failure(from([refund, finish('tool-calls')]).pipe(wrong));
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toBe(
      'requireUsable: validateArgs must return a string or undefined, not false',
    );
    const verdict = requireUsable({ checks: [(() => 'bad') as unknown as () => undefined] });
    const second = await failure(from([text('Hi.'), finish()]).pipe(verdict));
    expect((second as Error).message).toBe(
      'requireUsable: checks[0] must return undefined or { code, reason } (two strings), not "bad"',
    );
  });

  it('options of the wrong type are a UsageError at once', () => {
    const bad = (options: unknown) => () => requireUsable(options as never);
    expect(bad(null)).toThrow(
      new UsageError('requireUsable', 'options', 'must be an object of checks, not null'),
    );
    expect(bad({ refusal: 'yes' })).toThrow('requireUsable: refusal must be a boolean, not "yes"');
    expect(bad({ empty: 1 })).toThrow('requireUsable: empty must be a boolean, not 1');
    expect(bad({ malformedCall: null })).toThrow('requireUsable: malformedCall must be a boolean, not null');
    expect(bad({ validateArgs: {} })).toThrow(
      'requireUsable: validateArgs must be a function of a tool call, not an object',
    );
    expect(bad({ checks: () => undefined })).toThrow(
      'requireUsable: checks must be an array of check functions, not a function',
    );
    expect(bad({ checks: [5] })).toThrow('requireUsable: checks[0] must be a function, not 5');
    expect(bad({ checks: [5] })).toThrow(UsageError);
  });
});

describe('requireUsable on a tagged stream', () => {
  it('checks each attempt on its own and names it; a straggler of an older attempt is passed on, not counted', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const v = {
        a: at(1, text('Refunding the dam')),
        x: reset(2, 'connection reset'),
        s: at(1, text('aged book.')),
        f: at(2, finish('stop')),
      };
      const error = unusableAttemptError(
        'empty',
        'the model finished with no answer text and no tool call',
        2,
      );
      expectObservable(cold('-a-x-s-f-|', v).pipe(requireUsable())).toBe('-a-x-s-#', v, error);
    });
  });
});

describe('unusable TurnError', () => {
  it('says which check failed and why, and that a new attempt could succeed', () => {
    const error = unusableAttemptError('empty', 'nothing', 3);
    expect(error).toBeInstanceOf(CleanturnError);
    expect(error).toMatchObject({
      name: 'TurnError',
      code: 'unusable',
      check: 'empty',
      reason: 'nothing',
      attempt: 3,
    });
    expect(error.message).toBe('attempt 3 is unusable (empty): nothing');
    expect(isRetryable(error)).toBe(true);
  });
});

describe('requireUsable with retryAsEvents and cleanTurn', () => {
  it('a check that throws is not retried: one attempt, the UsageError', async () => {
    let attempts = 0;
    const error = await lastValueFrom(
      defer(() => {
        attempts++;
        return from([refund, finish('tool-calls')]);
      }).pipe(
        requireUsable({
          checks: [
            (attempt) => {
              (attempt.finish as unknown as { missing: { field: unknown } }).missing.field;
              return undefined;
            },
          ],
        }),
        retryAsEvents({ count: 2 }),
        toArray(),
      ),
    ).catch((thrown: unknown) => thrown);
    expect(attempts).toBe(1);
    expect(error).toBeInstanceOf(UsageError);
  });

  /** A ledger-backed executor that records the calls it ran. */
  function tools() {
    const ran: string[] = [];
    const handlers: ToolHandlers = {
      issue_refund: async (args) => {
        ran.push(JSON.stringify(args));
        return { refund_id: 're_1' };
      },
    };
    return { ran, handlers };
  }

  it('an invalid call is retried: the consumer sees a reset with the reason, and only the valid call runs', async () => {
    const attempts = attemptsOf(
      from([text('Refunding everything. '), badRefund, finish('tool-calls')]),
      from([sentence, call('c7', 'issue_refund', helpDesk.refundArgs), finish('tool-calls')]),
    );
    const { ran, handlers } = tools();
    const turn$ = attempts.pipe(
      requireFinish(),
      requireUsable({ validateArgs }),
      retryAsEvents({ count: 2 }),
      cleanTurn({ turnId: 'turn-42' }),
      share(),
    );
    const [events, results] = await Promise.all([
      lastValueFrom(turn$.pipe(toArray())),
      lastValueFrom(
        turn$.pipe(
          executeTools(handlers, { turnId: 'turn-42', ledger: new MemoryEffectLedger() }),
          toArray(),
        ),
      ),
    ]);
    const resets = events.filter((e): e is Extract<TurnEvent, { type: 'reset' }> => e.type === 'reset');
    expect(resets).toHaveLength(1);
    expect(resets[0]).toMatchObject({
      attempt: 2,
      reason:
        'the attempt is unusable (invalid-arguments): tool call c1 (issue_refund): amount must be "full" or "partial", not "everything"',
    });
    // The invalid call was held and discarded with its attempt: it never reached the consumer or the tool.
    expect(events.filter((e) => e.type === 'tool-call').map((e) => (e as { id: string }).id)).toEqual(['c7']);
    expect(ran).toEqual([JSON.stringify(helpDesk.refundArgs)]);
    expect(results.map((r) => r.call.id)).toEqual(['c7']);
    expect(events.at(-1)).toEqual(at(2, finish('tool-calls')));
  });

  it('an attempt that stays unusable past the cap ends the turn with retries-exhausted TurnError whose records say why', async () => {
    const source = attemptsOf<AssembledEvent<ProviderEvent>>(
      from([refusal]),
      from([text(' ')]),
      from([finish('stop')]),
    );
    const error = await failure(source.pipe(requireFinish(), requireUsable(), retryAsEvents({ count: 2 })));
    expectTurnError(error, 'retries-exhausted');
    const records = (error as TurnError).attempts;
    expect(records?.map((r) => [r.attempt, (r.error as { check?: string }).check ?? r.reason])).toEqual([
      [1, 'refusal'],
      [2, 'the stream completed without a finish event'],
      [3, 'empty'],
    ]);
    expect(records?.[0]?.reason).toBe(
      'the attempt is unusable (refusal): the model refused: "I can\'t help with that."',
    );
    expect((error as Error).message).toBe(
      'gave up after 3 attempt(s): the attempt is unusable (empty): the model finished with no answer text and no tool call',
    );
  });

  it('the retries of unusable attempts draw on the same retry budget as other retries', async () => {
    // A budget with nothing to lend: the first retry is refused.
    const budget = retryBudget({ percentCanRetry: 0, minRetriesPerSec: 0 });
    const source = attemptsOf(from([finish('stop')]), from([sentence, finish('stop')]));
    const error = await failure(source.pipe(requireUsable(), retryAsEvents({ count: 2, budget })));
    expectTurnError(error, 'retries-exhausted');
    expect(error.limit).toBe('budget');
    expectTurnError((error as TurnError).attempts?.[0]?.error, 'unusable');
    expect(budget.state().refusals).toBe(1);
  });

  it('inside a tagged pipeline, the reset reason names the attempt', async () => {
    const attempts = attemptsOf(from([finish('stop')]), from([sentence, finish('stop')]));
    const events = await lastValueFrom(
      attempts.pipe(requireUsable(), retryAsEvents({ count: 1 }), tagAttempts(), toArray()),
    );
    expect(events.map((e) => e.type)).toEqual(['retry', 'text', 'finish']);
    expect(events[0]).toMatchObject({
      type: 'retry',
      attempt: 2,
      reason: 'the attempt is unusable (empty): the model finished with no answer text and no tool call',
    });
  });
});
