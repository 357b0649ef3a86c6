// streamTurn({ budget }): one retry budget shared by many turns over real sockets. A loopback server fails half of
// all requests with a 503 that asks for a wait (retry-after-ms): the budget bounds the retries of the whole run,
// every turn that can still succeed does, and a refused turn fails at once, without the wait it was asked for.
import { performance } from 'node:perf_hooks';
import { retryBudget, TurnError, type TurnEvent } from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import { streamTurn, type TurnReport } from 'cleanturn/transport';
import { describe, expect, it } from 'vitest';
import { chatTranscript } from '../support/chatTranscript.js';
import { type ScriptedResponse, startServer, type TestServer } from '../support/httpServer.js';
import { prng, seed } from '../support/random.js';
import { expectNoLeftoverHandles } from '../support/resources.js';

const cleanText = 'Refund started.';
const whole: ScriptedResponse = { body: chatTranscript([{ text: cleanText }]).body };
/** The wait the server asks for before a retry: a refused turn must not wait it. */
const RETRY_AFTER_MS = 3_000;
const overloaded: ScriptedResponse = {
  status: 503,
  headers: { 'content-type': 'application/json', 'retry-after-ms': String(RETRY_AFTER_MS) },
  body: '{"error":{"message":"overloaded","type":"server_error"}}',
};

let server: TestServer | undefined;
expectNoLeftoverHandles(async () => {
  await server?.close();
  server = undefined;
});

/** What one turn did, as its consumer saw it. */
interface Outcome {
  text: string;
  resets: number;
  completed: boolean;
  error: unknown;
  report: TurnReport | undefined;
  /** When the last response of the turn arrived (its headers), and when the turn ended: `performance.now()`. */
  respondedAt: number;
  endedAt: number;
}

/** Runs turn `t` against `/turn/<t>/<attempt>` of the server and resolves when it ends. */
function runTurn(
  url: string,
  t: number,
  options: Partial<Parameters<typeof streamTurn>[0]> = {},
): Promise<Outcome> {
  return new Promise((resolve) => {
    const outcome: Outcome = {
      text: '',
      resets: 0,
      completed: false,
      error: undefined,
      report: undefined,
      respondedAt: Number.NaN,
      endedAt: Number.NaN,
    };
    const end = () => {
      outcome.endedAt = performance.now();
      resolve(outcome);
    };
    streamTurn({
      turnId: `turn-${t}`,
      adapter: openaiChat(),
      retry: 3,
      backoff: false,
      ...options,
      request: ({ attempt, signal }) => ({
        url: `${url}/turn/${t}/${attempt}`,
        init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', signal },
      }),
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        outcome.respondedAt = performance.now();
        return response;
      },
      onReport: (report) => {
        outcome.report = report;
      },
    }).subscribe({
      next(event: TurnEvent) {
        if (event.type === 'reset') {
          outcome.resets++;
          outcome.text = '';
        } else if (event.type === 'text') {
          outcome.text += event.text;
        }
      },
      error(error) {
        outcome.error = error;
        end();
      },
      complete() {
        outcome.completed = true;
        end();
      },
    });
  });
}

/** The attempts the server saw per turn, from `/turn/<t>/<attempt>`, each with whether it was failed. */
function attemptsByTurn(requests: TestServer['requests'], failed: ReadonlySet<number>) {
  const byTurn = new Map<number, { attempt: number; failed: boolean }[]>();
  requests.forEach((request, n) => {
    const [, turn, attempt] = /^\/turn\/(\d+)\/(\d+)$/.exec(request.url) ?? [];
    const list = byTurn.get(Number(turn)) ?? [];
    list.push({ attempt: Number(attempt), failed: failed.has(n) });
    byTurn.set(Number(turn), list);
  });
  for (const list of byTurn.values()) list.sort((a, b) => a.attempt - b.attempt);
  return byTurn;
}

describe('streamTurn({ budget })', () => {
  it('a refused retry fails the turn with TurnError retries-exhausted after one request; the report has its reason', async () => {
    server = await startServer([overloaded, whole]);
    const budget = retryBudget({ percentCanRetry: 0, minRetriesPerSec: 0 });
    const turn = await runTurn(server.url, 0, { budget });
    expect(turn.error).toBeInstanceOf(TurnError);
    expect(turn.error).toMatchObject({ code: 'retries-exhausted', limit: 'budget' });
    expect((turn.error as TurnError).attempts?.map((a) => a.attempt)).toEqual([1]);
    expect((turn.error as Error).message).toMatch(/^retry budget exhausted: gave up after 1 attempt\(s\): /);
    expect(server.requests).toHaveLength(1);
    expect(turn.endedAt - turn.respondedAt).toBeLessThan(RETRY_AFTER_MS);
    expect(turn.report?.outcome).toBe('failed');
    expect(turn.report?.attempts.map((a) => a.outcome)).toEqual(['failed']);
    // The attempt's own reason, not the wrapper's message.
    expect(turn.report?.attempts[0]?.reason).not.toMatch(/retry budget/);
    expect(budget.state()).toEqual({ deposits: 1, withdrawals: 0, available: 0, refusals: 1 });
  });

  it('an allowed retry is withdrawn and the turn completes', async () => {
    server = await startServer([{ ...overloaded, headers: { 'content-type': 'application/json' } }, whole]);
    const budget = retryBudget({ percentCanRetry: 0, minRetriesPerSec: 0.1 });
    const turn = await runTurn(server.url, 0, { budget });
    expect(turn.error).toBeUndefined();
    expect(turn.text).toBe(cleanText);
    expect(turn.resets).toBe(1);
    expect(server.requests).toHaveLength(2);
    expect(budget.state()).toEqual({ deposits: 1, withdrawals: 1, available: 0, refusals: 0 });
  });

  it('with retry 0 a turn still deposits: its first attempt is load the budget is a share of', async () => {
    server = await startServer([overloaded]);
    const budget = retryBudget({ percentCanRetry: 1, minRetriesPerSec: 0 });
    const turn = await runTurn(server.url, 0, { budget, retry: 0 });
    expect(turn.error).not.toMatchObject({ code: 'retries-exhausted' });
    expect(budget.state()).toEqual({ deposits: 1, withdrawals: 0, available: 1, refusals: 0 });
  });
});

describe('1,000 concurrent turns share one budget while the provider fails half of all requests', () => {
  const TURNS = 1_000;
  // A window longer than the run, so that the whole run is one window: the bound is then exact.
  const options = { ttlMs: 60_000, percentCanRetry: 0.2, minRetriesPerSec: 1 };
  const bound = options.percentCanRetry * TURNS + (options.minRetriesPerSec * options.ttlMs) / 1000;

  it(`retries stay within ${bound}, the turns that can succeed do, refused turns fail at once (seed ${seed})`, async () => {
    const random = prng(seed);
    const failed = new Set<number>();
    server = await startServer((n) => {
      if (random() >= 0.5) return whole;
      failed.add(n);
      return overloaded;
    });
    const budget = retryBudget(options);
    const started = performance.now();
    const outcomes = await Promise.all(
      Array.from({ length: TURNS }, (_, t) => runTurn(server?.url ?? '', t, { budget })),
    );
    const elapsed = performance.now() - started;
    // The bound below holds for one window: a run longer than 9/10 of the ttl would need one per window.
    expect(elapsed).toBeLessThan(0.9 * options.ttlMs);

    const requests = server.requests;
    const retries = requests.length - TURNS;
    const state = budget.state();
    const attempts = attemptsByTurn(requests, failed);
    const exhausted = (error: unknown, limit: 'cap' | 'budget') =>
      error instanceof TurnError && error.code === 'retries-exhausted' && error.limit === limit;
    const refused = outcomes.filter((o) => exhausted(o.error, 'budget'));
    const capped = outcomes.filter((o) => exhausted(o.error, 'cap') && !refused.includes(o));
    const completed = outcomes.filter((o) => o.completed);
    const retriedAndCompleted = completed.filter((o) => o.resets > 0);
    const gaps = refused.map((o) => o.endedAt - o.respondedAt);
    console.log(
      `retry budget run (seed ${seed}): ${TURNS} turns in ${Math.round(elapsed)} ms, ${failed.size} of ${requests.length} requests failed; ` +
        `${retries} retries (bound ${bound}), ${completed.length} completed (${retriedAndCompleted.length} after a retry), ` +
        `${refused.length} refused by the budget, ${capped.length} past the cap; refused turns ended ` +
        `${Math.max(0, ...gaps).toFixed(1)} ms at most after their last response (a retry would have waited ${RETRY_AFTER_MS} ms)`,
    );

    // The bound: retries ≤ percentCanRetry × first attempts + minRetriesPerSec × the window in seconds.
    expect(retries).toBeLessThanOrEqual(bound);
    // The budget saw every first attempt and every retry, and refused exactly the refused turns.
    expect(state.deposits).toBe(TURNS);
    expect(state.withdrawals).toBe(retries);
    expect(state.refusals).toBe(refused.length);
    // Half the requests failed, so the budget had to refuse; it refused only when it was spent.
    expect(refused.length).toBeGreaterThan(0);
    expect(retries).toBe(bound);
    expect(retriedAndCompleted.length).toBeGreaterThan(0);

    const problems: string[] = [];
    for (const [t, outcome] of outcomes.entries()) {
      const seen = attempts.get(t) ?? [];
      const last = seen[seen.length - 1];
      const fail = (what: string) => problems.push(`turn ${t} (${seen.length} requests): ${what}`);
      if (seen.map((a) => a.attempt).join() !== seen.map((_, i) => i + 1).join())
        fail('attempts out of order');
      if (last === undefined) {
        fail('no request');
        continue;
      }
      if (!last.failed) {
        // Its last attempt succeeded: the turn completed with that attempt's text, after one reset per failure.
        if (!outcome.completed) fail(`did not complete: ${String(outcome.error)}`);
        if (outcome.text !== cleanText) fail(`text ${JSON.stringify(outcome.text)}`);
        if (outcome.resets !== seen.length - 1) fail(`${outcome.resets} resets`);
        continue;
      }
      if (outcome.completed) {
        fail('completed after a failed last attempt');
        continue;
      }
      const error = outcome.error instanceof TurnError ? outcome.error : undefined;
      if (error?.code === 'retries-exhausted' && error.limit === 'budget') {
        // Refused: no request after the refusal, the records of every failed attempt, and no wait.
        if (error.failures !== seen.length) fail(`${error.failures} failures recorded`);
        if (error.attempts?.length !== seen.length) fail(`${error.attempts?.length} records`);
        if (!seen.every((a) => a.failed)) fail('a refused turn had a successful attempt');
        if (!(outcome.endedAt - outcome.respondedAt < RETRY_AFTER_MS)) fail('waited before failing');
      } else if (error?.code === 'retries-exhausted') {
        if (seen.length !== 4) fail('past the cap before 4 attempts');
      } else {
        fail(`failed with ${String(outcome.error)}`);
      }
    }
    expect(problems).toEqual([]);
    expect(completed.length + refused.length + capped.length).toBe(TURNS);
  }, 120_000);
});
