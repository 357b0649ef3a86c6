// A runner process for the kill test (test/transport/killRunner.redis.test.ts), run with `node --import tsx`: an
// HTTP server on 127.0.0.1 (a free port) that serves `GET /runs/:id` as server-sent events from turnServer over a
// Redis turn log. Each run is a runSteps loop: streamTurn against the provider at PROVIDER_URL (OpenAI Chat
// Completions), the next request built from the run's history with toOpenAIChatMessages, and executeTools on a
// Redis effect ledger. A run taken over from a lost runner goes on from the log's events (`resume`).
//
// The `issue_refund` handler is the effect: it counts its executions (`exec:<key>`), applies the refund at the
// "payment service" once per effect key (`SET service:<key> NX`, as an Idempotency-Key would), then takes a moment
// before its result is recorded.
//
// With BACKGROUND_URL (the `/v1` base of a Responses server in background mode) in place of PROVIDER_URL, each run is
// one step that reads a background response (openaiResponses, openaiBackground), and a run taken over goes on with
// the lost runner's response (`resumeFrom`).
//
// Environment: REDIS_PORT, PROVIDER_URL or BACKGROUND_URL, LEASE_MS, NAME. Writes JSON lines to stdout: `{"listening":port}` once it
// listens; `{"phase":…,"run":…,"step":…}` as a run goes (`reasoning`, `text`, `executing` and `executed` with
// `key`, `step-end`), so that the test can kill the process at each point.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunEvent, runSteps } from 'cleanturn';
import { executeTools } from 'cleanturn/effects';
import { RedisEffectLedger } from 'cleanturn/effects/redis';
import { openaiChat, openaiResponses, toOpenAIChatMessages } from 'cleanturn/providers';
import { openaiBackground, streamTurn, toSSE, turnServer } from 'cleanturn/transport';
import { redisTurnLog } from 'cleanturn/transport/redis';
import { Redis } from 'ioredis';
import { type Subscription, tap } from 'rxjs';

const { REDIS_PORT, PROVIDER_URL, BACKGROUND_URL, LEASE_MS = '500', NAME = 'runner' } = process.env;
if (REDIS_PORT === undefined || (PROVIDER_URL === undefined && BACKGROUND_URL === undefined))
  throw new Error('REDIS_PORT and PROVIDER_URL (or BACKGROUND_URL) are needed');

const print = (line: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ name: NAME, ...line })}\n`);

const client = new Redis({ host: '127.0.0.1', port: Number(REDIS_PORT) });
const leaseMs = Number(LEASE_MS);
const turns = turnServer<RunEvent>({
  log: redisTurnLog<RunEvent>({ client, prefix: 'kill:turn', blockMs: 200, leaseMs }),
  takeover: { max: 6 },
  onLogError: (error, turnId) => print({ logError: String(error), run: turnId }),
});
const ledger = new RedisEffectLedger({ client, prefix: 'kill:ledger', commandTimeoutMs: 1000 });
const handlers = {
  issue_refund: async (_args: unknown, { effectKey, turnId }: { effectKey: string; turnId: string }) => {
    print({ phase: 'executing', key: effectKey, run: turnId });
    await client.incr(`exec:${effectKey}`);
    await client.set(`service:${effectKey}`, NAME, 'NX');
    await sleep(40);
    return { refund_id: `R-${effectKey.slice(0, 6)}` };
  },
};

const run = (runId: string, resume: readonly RunEvent[] | undefined) => {
  const seen = new Set<string>();
  const once = (phase: string, step: number, attempt: number) => {
    const mark = `${phase}:${step}:${attempt}`;
    if (seen.has(mark)) return;
    seen.add(mark);
    print({ phase, run: runId, step });
  };
  return runSteps({
    runId,
    resume,
    maxSteps: 4,
    turn: ({ step, history, resumeFrom }) => {
      if (BACKGROUND_URL !== undefined)
        return streamTurn({
          turnId: runId,
          step,
          adapter: openaiResponses(),
          backoff: false,
          request: ({ signal }) => ({
            url: `${BACKGROUND_URL}/responses`,
            init: {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({
                model: 'gpt-4.1',
                input: `refund ${runId}`,
                background: true,
                stream: true,
              }),
              signal,
            },
          }),
          resume: openaiBackground({ baseUrl: BACKGROUND_URL }),
          resumeFrom,
        });
      const messages: unknown[] = [{ role: 'user', content: `refund ${runId}` }];
      for (const done of history)
        if (done.turn) messages.push(...toOpenAIChatMessages(done.turn, done.results));
      return streamTurn({
        turnId: runId,
        step,
        adapter: openaiChat(),
        backoff: false,
        request: ({ signal }) => ({
          url: PROVIDER_URL as string,
          init: {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'gpt-4o', stream: true, messages }),
            signal,
          },
        }),
      });
    },
    execute: (turn$) =>
      turn$.pipe(executeTools(handlers, { turnId: runId, ledger, leaseMs: 900, pollMs: 50 })),
  }).pipe(
    tap((event) => {
      if (event.type === 'reasoning') once('reasoning', event.step, event.attempt);
      else if (event.type === 'text') once('text', event.step, event.attempt);
      else if (event.type === 'step-end') print({ phase: 'step-end', run: runId, step: event.step });
      // A result comes out once the ledger recorded it.
      else if (event.type === 'tool-result') print({ phase: 'executed', key: event.effectKey });
    }),
  );
};

const server = createServer((req, res) => {
  const match = /^\/runs\/([^/]+)$/.exec(new URL(req.url ?? '/', 'http://localhost').pathname);
  if (req.method !== 'GET' || match === null) {
    res.writeHead(404).end();
    return;
  }
  const runId = decodeURIComponent(match[1] as string);
  const header = req.headers['last-event-id'];
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
  const subscription: Subscription = turns
    .serve({
      turnId: runId,
      lastEventId: typeof header === 'string' ? header : undefined,
      run: ({ takeover }) => {
        if (takeover !== undefined) print({ phase: 'takeover', run: runId, count: takeover.count });
        return run(runId, takeover?.events);
      },
    })
    .subscribe({
      next: (m) => res.write(toSSE(m)),
      complete: () => res.end(),
      error: (error: unknown) => {
        print({ error: String(error), run: runId });
        res.destroy();
      },
    });
  res.on('close', () => subscription.unsubscribe());
});

server.listen(0, '127.0.0.1', () => {
  print({ listening: (server.address() as AddressInfo).port });
});
