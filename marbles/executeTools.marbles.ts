import type { KeyedToolCall } from 'cleanturn';
import { executeTools, MemoryEffectLedger, type ToolHandlers, type ToolResultEvent } from 'cleanturn/effects';
import { call, defineMarbles, keyed } from 'cleanturn/testing';
import { map, timer } from 'rxjs';
import { serializeError } from '../src/effects/json.js';
import type { JsonValue } from '../src/effects/types.js';
import { keyedK, tagged as t, turnId } from './alphabet.js';

/** Attempt 2's confirmation e-mail, released with the refund. */
const email = keyed(
  turnId,
  2,
  call('c8', 'send_email', { to: 'ada@example.com', template: 'refund-started' }),
);
/** A call to a tool nobody registered. */
const unknown = keyed(turnId, 2, call('c9', 'delete_account', { user: 'ada' }));

/** The refund service's answer: the effect key is its idempotency key. */
const refunded = { refund_id: 're_7781', status: 'pending' };
const mailFailed = Object.assign(new Error('smtp timeout'), { code: 'ETIMEDOUT' });

/** Synchronous handlers: the results come in the frame of their call. */
const handlers: ToolHandlers = {
  issue_refund: () => refunded,
  send_email: () => undefined,
};
/** Handlers that take time (virtual frames): the refund 4 frames, the e-mail 1. */
const slow: ToolHandlers = {
  issue_refund: () => timer(4).pipe(map(() => refunded)),
  send_email: () => timer(1).pipe(map(() => undefined)),
};

const executed = (c: KeyedToolCall, result: JsonValue | undefined): ToolResultEvent => ({
  type: 'tool-result',
  effectKey: c.effectKey,
  call: c,
  outcome: 'executed',
  result,
  reclaimed: false,
});

const v = { B: t.B, K: keyedK, L: email, U: unknown, F: t.F };
// biome-ignore format: an aligned value table
const r = {
  k: executed(keyedK, refunded),
  l: executed(email, undefined),
  p: { type: 'tool-result', effectKey: keyedK.effectKey, call: keyedK, outcome: 'replayed', result: refunded },
  u: {
    type: 'tool-result', effectKey: unknown.effectKey, call: unknown, outcome: 'unknown-tool',
    error: { name: 'UnknownToolError', message: 'no handler for tool delete_account', retryable: false },
  },
  x: {
    type: 'tool-result', effectKey: email.effectKey, call: email, outcome: 'failed',
    error: serializeError(mailFailed), replayed: false, cause: mailFailed,
  },
} satisfies Record<string, ToolResultEvent>;

export default defineMarbles({
  name: 'executeTools',
  summary:
    'Runs the released calls with your handlers, once per effect key, and emits one typed tool-result per call.',
  cases: [
    {
      title: 'each released call runs once; other events are not passed on',
      source: /*   */ '-B-K-L-F-|',
      values: v,
      label: "executeTools({ issue_refund, send_email }, { turnId: 'turn-42' })",
      operator: () => executeTools(handlers, { turnId }),
      expected: /* */ '---k-l---|',
      expectedValues: r,
      subscriptions: '^--------!',
    },
    {
      title: 'a key the ledger has seen completed is replayed, not run again (a duplicate delivery)',
      source: /*   */ '-K-K-|',
      values: v,
      label: "executeTools(handlers, { turnId: 'turn-42', ledger })",
      operator: () => executeTools(handlers, { turnId, ledger: new MemoryEffectLedger() }),
      expected: /* */ '-k-p-|',
      expectedValues: r,
    },
    {
      title: 'an unknown tool and a failing handler are typed results, never a silent drop',
      source: /*   */ '-U-L-|',
      values: v,
      label: "executeTools({ send_email: () => { throw smtpTimeout } }, { turnId: 'turn-42' })",
      operator: () =>
        executeTools(
          {
            send_email: () => {
              throw mailFailed;
            },
          },
          { turnId },
        ),
      expected: /* */ '-u-x-|',
      expectedValues: r,
    },
    {
      title: 'concurrency 1 (default): one handler at a time, results in call order',
      source: /*   */ '-K-L-|',
      values: v,
      label: "executeTools(slowHandlers, { turnId: 'turn-42' })",
      operator: () => executeTools(slow, { turnId }),
      expected: /* */ '-----k(l|)',
      expectedValues: r,
    },
    {
      title: 'concurrency 2: handlers overlap; results still in call order',
      source: /*   */ '-K-L-|',
      values: v,
      label: "executeTools(slowHandlers, { turnId: 'turn-42', concurrency: 2 })",
      operator: () => executeTools(slow, { turnId, concurrency: 2 }),
      expected: /* */ '-----(kl|)',
      expectedValues: r,
    },
    {
      title: "concurrency 2, order 'completion': each result as soon as it is ready",
      source: /*   */ '-K-L-|',
      values: v,
      label: "executeTools(slowHandlers, { turnId: 'turn-42', concurrency: 2, order: 'completion' })",
      operator: () => executeTools(slow, { turnId, concurrency: 2, order: 'completion' }),
      expected: /* */ '----l(k|)',
      expectedValues: r,
    },
    {
      title: 'a source error passes through and cuts off the handler in flight',
      source: /*   */ '-K-#',
      values: v,
      error: new Error('connection reset'),
      label: "executeTools(slowHandlers, { turnId: 'turn-42' })",
      operator: () => executeTools(slow, { turnId }),
      expected: /* */ '---#',
      expectedError: new Error('connection reset'),
      subscriptions: '^--!',
    },
    {
      title: 'unsubscribing early cuts off the handler in flight (its signal aborts)',
      source: /*   */ '-K-L-|',
      values: v,
      label: "executeTools(slowHandlers, { turnId: 'turn-42' })",
      operator: () => executeTools(slow, { turnId }),
      unsubscribe: '---!',
      expected: /* */ '---',
      subscriptions: '^--!',
    },
  ],
});
