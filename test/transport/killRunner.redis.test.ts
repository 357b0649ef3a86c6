// Runs that survive the process that runs them. Two runner processes (test/support/runServerProcess.ts) share one
// real redis-server: turnServer over redisTurnLog, each run a runSteps loop of two steps (step 1 reasons, writes,
// and asks for a refund; step 2 answers), with executeTools on a Redis effect ledger. 200 runs are read by
// fromTurnSSE clients, which reconnect to whichever process is alive. Meanwhile the test kills a runner with SIGKILL
// at the points a run can be cut (mid-reasoning, mid-text, after the refund was applied and before its result was
// recorded, right after a step ended) and starts a new process in its place (a restarted instance). A reader of
// the dead runner's run takes it over on another process once the lease lapses.
//
// Checked for every run: it completes once, or fails typed (TransportError runner-lost) past its takeover budget; each step's
// text and reasoning, as the reader ends with it, are exactly one attempt's (the final one), never two glued; the
// refund's effect is applied once per effect key, and its handler runs again only for a key whose run was killed
// between the effect and its record; no provider request repeats a step whose end the log held; and no reader
// waits longer than the lease plus a few seconds for its next event.
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { accumulateTurn, type RunEvent, type TurnEvent } from 'cleanturn';
import { fromTurnSSE, TransportError } from 'cleanturn/transport';
import { from, lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, redisTests, startRedisServer } from '../effects/redisServer.js';
import { prng, seed } from '../support/random.js';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { type Line, RunnerPool } from '../support/runners.js';

const RUNS = 200;
const CONCURRENT = 12;
const LEASE_MS = 500;
const CHUNK_MS = 25;

/** What the provider says in each step of run `runId`: reasoning and text in pieces, and step 1's refund call. */
const script = (runId: string) => ({
  reasoning: ['The user wants ', 'a refund ', `of ${runId}.`],
  text1: ['I will ', 'refund ', `order ${runId} `, 'now.'],
  text2: ['The refund ', `of ${runId} `, 'has started.'],
});

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-k', object: 'chat.completion.chunk', model: 'gpt-4o', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** The SSE events of one answer: step 1 (reasoning, text, a refund call with a fresh call id) or step 2. */
function answer(runId: string, step: number, request: number): string[] {
  const s = script(runId);
  const events = [chunk({ role: 'assistant', content: '' })];
  if (step === 1) {
    for (const r of s.reasoning) events.push(chunk({ reasoning_content: r }));
    for (const t of s.text1) events.push(chunk({ content: t }));
    const id = `call_${request}`;
    const args = JSON.stringify({ order_id: runId });
    events.push(
      chunk({
        tool_calls: [{ index: 0, id, type: 'function', function: { name: 'issue_refund', arguments: '' } }],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(0, 8) } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(8) } }] }),
      chunk({}, 'tool_calls'),
    );
  } else {
    for (const t of s.text2) events.push(chunk({ content: t }));
    events.push(chunk({}, 'stop'));
  }
  events.push('data: [DONE]\n\n');
  return events;
}

interface ProviderRequest {
  runId: string;
  step: number;
  at: number;
}

interface Provider {
  url: string;
  requests: ProviderRequest[];
  close(): Promise<void>;
}

/** A loopback Chat Completions provider that streams each answer an event every CHUNK_MS. */
async function startProvider(): Promise<Provider> {
  const sockets = new Set<Socket>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const provider: Provider = { url: '', requests: [], close: async () => {} };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      const { messages } = JSON.parse(body) as { messages: { role: string; content: unknown }[] };
      const runId = String(messages[0]?.content).slice('refund '.length);
      const step = 1 + messages.filter((m) => m.role === 'assistant').length;
      provider.requests.push({ runId, step, at: performance.now() });
      const events = answer(runId, step, provider.requests.length);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let i = 0;
      const next = () => {
        if (res.destroyed) return;
        const event = events[i++];
        if (event === undefined) {
          res.end();
          return;
        }
        res.write(event);
        const timer = setTimeout(() => {
          timers.delete(timer);
          next();
        }, CHUNK_MS);
        timers.add(timer);
      };
      next();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  provider.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`;
  provider.close = async () => {
    for (const timer of timers) clearTimeout(timer);
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return provider;
}

/** The points at which a runner is killed, and how many kills of each the test makes at most. */
const KILLS = ['reasoning', 'text', 'executing', 'step-end'] as const;
type KillPoint = (typeof KILLS)[number];
/** How many rounds of the four kills the test makes. */
const ROUNDS = 2;

describe.skipIf(redisTests.skip)(
  'runs that survive a runner killed with SIGKILL',
  { timeout: 240_000 },
  () => {
    let redis: RedisServer;
    let provider: Provider;
    let pool: RunnerPool | undefined;
    beforeAll(async () => {
      redis = await startRedisServer();
      provider = await startProvider();
    });
    afterAll(async () => {
      await provider?.close();
      await redis?.stop();
    });
    // The runners go before the check: their keep-alive connections are the test's sockets too.
    expectNoLeftoverHandles(async () => {
      await pool?.stop();
    });

    it(`${RUNS} runs of two steps, two runners killed at random points: every run once, every effect once`, async () => {
      const random = prng(seed);
      const env = { REDIS_PORT: String(redis.port), PROVIDER_URL: provider.url, LEASE_MS: String(LEASE_MS) };
      const kills: Record<KillPoint, number> = { reasoning: 0, text: 0, executing: 0, 'step-end': 0 };
      let killed = 0;
      let takeovers = 0;
      /** Per runner, the refunds it started whose result it did not record (yet, or ever: it was killed). */
      const running = new Map<string, Set<string>>();
      const inflight = (name: string) => {
        const keys = running.get(name) ?? new Set<string>();
        running.set(name, keys);
        return keys;
      };
      /** When a reader received each run's step ends. */
      const stepEnds = new Map<string, number[]>();
      const onLine = (line: Line) => {
        if (line.phase === 'takeover') takeovers++;
        if (line.phase === 'executing') inflight(line.name).add(String(line.key));
        if (line.phase === 'executed') inflight(line.name).delete(String(line.key));
        // The points in turn, each at a random line of its kind, one kill at a time, half a second apart.
        const point = KILLS[killed % KILLS.length] as KillPoint;
        if (runners.killing || killed >= ROUNDS * KILLS.length || line.phase !== point || random() > 0.3)
          return;
        if (!runners.kill(line.name)) return;
        kills[point]++;
        killed++;
      };
      const runners = new RunnerPool('R', env, onLine, 500, random);
      pool = runners;
      await runners.start(2);

      interface Outcome {
        runId: string;
        events: RunEvent[];
        error?: unknown;
        longestWait: number;
      }
      const read = (runId: string): Promise<Outcome> => {
        const events: RunEvent[] = [];
        let last = performance.now();
        let longestWait = 0;
        return new Promise((resolve) => {
          fromTurnSSE<RunEvent>(() => `${runners.live()?.url}/runs/${runId}`, {
            reconnect: { delay: 20, count: 50 },
          }).subscribe({
            next: (event) => {
              const now = performance.now();
              longestWait = Math.max(longestWait, now - last);
              last = now;
              events.push(event);
              if (event.type === 'step-end') {
                const ends = stepEnds.get(runId) ?? [];
                ends[event.step] = now;
                stepEnds.set(runId, ends);
              }
            },
            error: (error: unknown) => resolve({ runId, events, error, longestWait }),
            complete: () => resolve({ runId, events, longestWait }),
          });
        });
      };

      const ids = Array.from({ length: RUNS }, (_, i) => `run-${i}`);
      // CONCURRENT runs at a time, a new one as each ends.
      const outcomes: Outcome[] = [];
      const queue = [...ids];
      await Promise.all(
        Array.from({ length: CONCURRENT }, async () => {
          for (let runId = queue.shift(); runId !== undefined; runId = queue.shift())
            outcomes.push(await read(runId));
        }),
      );

      // Every kill point was hit, and the dead runners' runs were taken over.
      expect(takeovers).toBeGreaterThanOrEqual(killed);
      for (const point of KILLS) expect(kills[point], point).toBeGreaterThan(0);

      const failed = outcomes.filter((o) => o.error !== undefined);
      for (const o of failed) {
        expect(o.error, o.runId).toBeInstanceOf(TransportError);
        expect(o.error, o.runId).toMatchObject({ code: 'remote-turn' });
        expect((o.error as TransportError).remoteName, o.runId).toBe('RunnerLostError');
      }
      expect(failed.length).toBeLessThan(RUNS / 20);

      const client = redis.client();
      for (const o of outcomes) {
        const s = script(o.runId);
        const steps = o.events.filter((e) => e.type === 'step-end').map((e) => e.step);
        if (o.error === undefined) expect(steps, o.runId).toEqual([1, 2]);
        // What the reader ends with in each step: one attempt's text and reasoning, exactly.
        const expected = [
          { text: s.text1.join(''), reasoning: s.reasoning.join('') },
          { text: s.text2.join(''), reasoning: '' },
        ];
        for (const step of steps) {
          const turn = o.events.filter(
            (e) => e.step === step && e.type !== 'step-end' && e.type !== 'tool-result',
          );
          const states = await lastValueFrom(from(turn as TurnEvent[]).pipe(accumulateTurn()));
          expect({ text: states.text, reasoning: states.reasoning }, `${o.runId} step ${step}`).toEqual(
            expected[step - 1],
          );
        }
        // No provider request repeats a step whose end a reader had.
        const ends = stepEnds.get(o.runId) ?? [];
        for (const request of provider.requests.filter((r) => r.runId === o.runId)) {
          const end = ends[request.step];
          if (end !== undefined) expect(request.at, `${o.runId} step ${request.step}`).toBeLessThan(end);
        }
        // A reader never waits past the lease plus a few seconds.
        expect(o.longestWait, o.runId).toBeLessThan(LEASE_MS + 3_000);
      }

      // Every refund: applied once per effect key; run again only where its runner died mid-effect (every line of a
      // killed runner has arrived by now: its pipe was drained when it exited).
      const cutMidEffect = new Set(
        runners.runners.filter((r) => !r.alive).flatMap((r) => [...inflight(r.name)]),
      );
      const keys = (await client.keys('service:*')).map((k) => k.slice('service:'.length));
      const completed = outcomes.filter((o) => o.error === undefined).length;
      expect(keys.length).toBeGreaterThanOrEqual(completed);
      expect(keys.length).toBeLessThanOrEqual(RUNS);
      for (const key of keys) {
        const runs = Number(await client.get(`exec:${key}`));
        if (cutMidEffect.has(key)) expect(runs, key).toBeGreaterThanOrEqual(1);
        else expect(runs, key).toBe(1);
      }
      client.disconnect();
      console.log(
        `seed ${seed}; kills ${JSON.stringify(kills)}; ${takeovers} takeovers; ${failed.length} run(s) failed typed; ` +
          `${provider.requests.length} provider requests for ${RUNS} runs; ` +
          `longest wait of a reader ${Math.round(Math.max(...outcomes.map((o) => o.longestWait)))} ms`,
      );
    });
  },
);
