// Runs that read a background response survive the process that runs them without a second generation. Two runner
// processes (test/support/runServerProcess.ts with BACKGROUND_URL) share one real redis-server; each run is one step
// that reads an OpenAI Responses background response from a loopback server in this process, which goes on
// generating while no runner reads it. The test kills a runner with SIGKILL mid-text, a few times, and starts a new
// process in its place; a reader of each dead runner's run takes it over on another process once the lease lapses,
// and the new runner reads the same response again from its start (`resumeFrom`).
//
// Checked for every run: it completes; no reader saw a reset, and each reader read one response, the run's last,
// every fragment once; a run has a second response only where its runner died before the log held its first
// event (then nothing of the first reached anyone); no response is cancelled.
import { accumulateTurn, type RunEvent, type TurnEvent } from 'cleanturn';
import { fromTurnSSE } from 'cleanturn/transport';
import { from, lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, redisTests, startRedisServer } from '../effects/redisServer.js';
import { type BackgroundServer, startBackgroundResponses } from '../support/backgroundResponses.js';
import { prng, seed } from '../support/random.js';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { type Line, RunnerPool } from '../support/runners.js';

const RUNS = 80;
/** Runs go on past RUNS (up to this many) until every kill was made: a restart may be slow on a busy machine. */
const MAX_RUNS = 400;
const CONCURRENT = 8;
const LEASE_MS = 400;
const KILLS = 4;

describe.skipIf(redisTests.skip)(
  'runs that read a background response survive a runner killed with SIGKILL',
  { timeout: 120_000 },
  () => {
    let redis: RedisServer;
    let provider: BackgroundServer;
    let pool: RunnerPool | undefined;
    beforeAll(async () => {
      redis = await startRedisServer();
      // About 20 fragments a response, one every 20 ms: a runner is killed while many responses are mid-text.
      provider = await startBackgroundResponses({ seed, deltas: 20, interval: 20 });
    });
    afterAll(async () => {
      await provider?.close();
      await redis?.stop();
    });
    expectNoLeftoverHandles(async () => {
      await pool?.stop();
    });

    it(`${RUNS} runs or more, ${KILLS} runners killed mid-text: one generation per run, no reset, every fragment once`, async () => {
      const random = prng(seed);
      const env = {
        REDIS_PORT: String(redis.port),
        BACKGROUND_URL: provider.baseUrl,
        LEASE_MS: String(LEASE_MS),
      };
      let killed = 0;
      let takeovers = 0;
      const onLine = (line: Line) => {
        if (line.phase === 'takeover') takeovers++;
        if (runners.killing || killed >= KILLS || line.phase !== 'text' || random() > 0.3) return;
        if (runners.kill(line.name)) killed++;
      };
      const runners = new RunnerPool('B', env, onLine, 300, random);
      pool = runners;
      await runners.start(2);
      const read = (runId: string) =>
        new Promise<{ runId: string; events: RunEvent[]; error?: unknown }>((resolve) => {
          const events: RunEvent[] = [];
          fromTurnSSE<RunEvent>(() => `${runners.live()?.url}/runs/${runId}`, {
            reconnect: { delay: 20, count: 50 },
          }).subscribe({
            next: (event) => events.push(event),
            error: (error: unknown) => resolve({ runId, events, error }),
            complete: () => resolve({ runId, events }),
          });
        });
      let produced = 0;
      const nextRun = () =>
        produced < RUNS || (killed < KILLS && produced < MAX_RUNS) ? `run-${produced++}` : undefined;
      const outcomes: Awaited<ReturnType<typeof read>>[] = [];
      await Promise.all(
        Array.from({ length: CONCURRENT }, async () => {
          for (let runId = nextRun(); runId !== undefined; runId = nextRun())
            outcomes.push(await read(runId));
        }),
      );

      expect(killed).toBe(KILLS);
      expect(takeovers).toBeGreaterThanOrEqual(KILLS);
      // No response is cancelled; the runners that took over read responses again from the start.
      expect(provider.cancels).toEqual([]);
      const fromStart = provider.requests.filter((r) => r.kind === 'retrieve' && r.after === -1);
      expect(fromStart.length).toBeGreaterThan(0);
      const responses = [...provider.responses.values()];
      // A second generation of a run only where its runner died before the log held anything of the first (its
      // `resumable` event had not been written): nothing of it reached a reader, so nothing needs a reset.
      let unlogged = 0;
      for (const o of outcomes) {
        expect(o.error, o.runId).toBeUndefined();
        expect(
          o.events.filter((e) => e.type === 'reset'),
          o.runId,
        ).toEqual([]);
        const named = new Set(o.events.flatMap((e) => (e.type === 'resumable' ? [e.responseId] : [])));
        expect(named.size, o.runId).toBe(1);
        const response = provider.response([...named][0] as string);
        expect(response.body.input, o.runId).toBe(`refund ${o.runId}`);
        const created = responses.filter((r) => r.body.input === `refund ${o.runId}`);
        expect(created.at(-1), o.runId).toBe(response);
        unlogged += created.length - 1;
        const texts = o.events.filter((e) => e.type === 'text').map((e) => (e as { text: string }).text);
        expect(texts, o.runId).toEqual(response.deltas);
        const turn = o.events.filter((e) => e.type !== 'step-end' && e.type !== 'tool-result') as TurnEvent[];
        const state = await lastValueFrom(from(turn).pipe(accumulateTurn()));
        expect(state.text, o.runId).toBe(response.text);
        expect(o.events.at(-1)).toMatchObject({ type: 'step-end', end: 'done' });
      }
      // Each kill cuts at most the runs its runner held.
      expect(provider.counts.create).toBe(produced + unlogged);
      expect(unlogged).toBeLessThanOrEqual(KILLS * CONCURRENT);
      console.log(
        `seed ${seed}; ${killed} kills; ${takeovers} takeovers; ${provider.counts.create} creates for ${produced} runs ` +
          `(${unlogged} more, for runs cut before their first entry); ${fromStart.length} reads from the start`,
      );
    });
  },
);
