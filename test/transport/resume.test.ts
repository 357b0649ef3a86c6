// streamTurn({ resume: openaiBackground(…) }) against a loopback server that implements OpenAI Responses in
// background mode: the server generates each response on its own timers, whether a client is connected or not, and
// cuts connections as each test chooses. A cut is resumed (GET …?stream=true&starting_after=n) and the same
// generation goes on, with no reset; when resuming is impossible an ordinary retry (a reset) takes over, its reason
// saying why, and the abandoned response is cancelled.
import type { ResetEvent, TurnEvent } from 'cleanturn';
import { openaiResponses } from 'cleanturn/providers';
import { openaiBackground, streamTurn, TransportError, type TurnReport } from 'cleanturn/transport';
import { filter, lastValueFrom, take, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { resumeError } from '../../src/transport/errors.js';
import type { ResumeRequests } from '../../src/transport/openaiBackground.js';
import {
  type BackgroundServer,
  type BackgroundServerOptions,
  type Fault,
  type FaultContext,
  startBackgroundResponses,
} from '../support/backgroundResponses.js';
import { prng, seed } from '../support/random.js';
import { expectNoLeftoverHandles } from '../support/resources.js';

type ResumeTurnEvent = Extract<TurnEvent, { type: 'resume' }>;

let server: BackgroundServer | undefined;
expectNoLeftoverHandles(async () => {
  await server?.close();
  server = undefined;
});

async function start(options: BackgroundServerOptions = {}): Promise<BackgroundServer> {
  server = await startBackgroundResponses({ seed, ...options });
  return server;
}

/** What one turn did, as its consumer saw it. */
interface Outcome {
  events: TurnEvent[];
  /** The text the user reads: text events, emptied at each reset. */
  text: string;
  resets: ResetEvent[];
  resumes: ResumeTurnEvent[];
  report: TurnReport | undefined;
  completed: boolean;
  error: unknown;
  /** Every request the client made (`METHOD url`), the cancel included. */
  fetched: string[];
}

/** The create request of turn `t`: a background, streamed response. */
const bodyOf = (t: number) => ({ model: 'gpt-4.1', input: `turn ${t}`, background: true, stream: true });

/** The turn a response was created for, from its input. */
const turnOf = (body: Record<string, unknown>): number =>
  Number(/^turn (\d+)$/.exec(String(body.input))?.[1]);

/**
 * Runs turn `t` against the server and resolves when it ends (completed or failed); a turn that has not ended after
 * `limitMs` is unsubscribed and resolves with an error, so that its test fails with its seed instead of timing out.
 */
function runTurn(
  srv: BackgroundServer,
  t: number,
  options: { retry?: number; resume?: ResumeRequests; limitMs?: number } = {},
): Promise<Outcome> {
  return new Promise((resolve) => {
    const outcome: Outcome = {
      events: [],
      text: '',
      resets: [],
      resumes: [],
      report: undefined,
      completed: false,
      error: undefined,
      fetched: [],
    };
    let guard: ReturnType<typeof setTimeout> | undefined;
    let ended = false;
    const end = () => {
      ended = true;
      clearTimeout(guard);
      resolve(outcome);
    };
    const subscription = streamTurn({
      turnId: `turn-${t}`,
      adapter: openaiResponses(),
      request: ({ signal }) => ({
        url: `${srv.baseUrl}/responses`,
        init: {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(bodyOf(t)),
          signal,
        },
      }),
      resume: options.resume ?? openaiBackground({ baseUrl: srv.baseUrl }),
      backoff: false,
      retry: options.retry ?? 2,
      fetch: (input, init) => {
        const url = input instanceof Request ? input.url : String(input);
        outcome.fetched.push(`${init?.method ?? 'GET'} ${url.slice(srv.url.length)}`);
        return fetch(input, init);
      },
      onReport: (report) => {
        outcome.report = report;
      },
    }).subscribe({
      next(event) {
        outcome.events.push(event);
        if (event.type === 'reset') {
          outcome.resets.push(event);
          outcome.text = '';
        } else if (event.type === 'resume') outcome.resumes.push(event);
        else if (event.type === 'text') outcome.text += event.text;
      },
      error(error: unknown) {
        outcome.error = error;
        end();
      },
      complete() {
        outcome.completed = true;
        end();
      },
    });
    if (ended) return;
    const limitMs = options.limitMs ?? 20_000;
    guard = setTimeout(() => {
      subscription.unsubscribe();
      outcome.error = new Error(`turn ${t} did not end within ${limitMs} ms`);
      resolve(outcome);
    }, limitMs);
  });
}

/** Waits until `check()` is true, polling; fails after `limitMs` (a bound, never an assertion on time). */
async function until(check: () => boolean, what: string, limitMs = 5_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > limitMs) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Lets pending callbacks and microtasks run (a cancel would be fetched by then). */
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** Faults for resp_1 only, by connection: `create` for its first connection, `retrieve` for every resume. */
function onFirst(faults: { create?: Fault; retrieve?: (ctx: FaultContext) => Fault | undefined }) {
  return (ctx: FaultContext): Fault | undefined => {
    if (ctx.responseId !== 'resp_1') return undefined;
    return ctx.kind === 'create' ? faults.create : faults.retrieve?.(ctx);
  };
}

/** Runs `work` for 0 … count - 1, at most `limit` at once. */
async function pool<T>(count: number, limit: number, work: (i: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await work(i);
      }
    }),
  );
  return results;
}

describe('streamTurn({ resume: openaiBackground }) against a background-mode server', () => {
  it('1,000 turns with random cuts: each resumes to one generation, exactly, with no reset', async () => {
    const TURNS = 1_000;
    const MAX_FAULTED_CONNECTIONS = 6;
    const random = new Map<string, () => number>();
    const srv = await start({
      faults: ({ kind, responseId, connection, after, response }) => {
        let next = random.get(responseId);
        if (next === undefined) {
          // Per turn, so that the faults of a turn depend on the seed, not on how the turns interleave.
          next = prng((seed + Math.imul(turnOf(response.body) + 1, 7919)) >>> 0);
          random.set(responseId, next);
        }
        if (connection >= MAX_FAULTED_CONNECTIONS || next() >= 0.75) return undefined;
        // A resume may first get a few events again (at or below starting_after); the fault comes after at least one
        // new event, so that every connection moves the response on.
        const replay =
          kind === 'retrieve' && next() < 0.25 ? 1 + Math.floor(next() * Math.min(3, after + 1)) : 0;
        const remaining = response.total - (after + 1);
        const k = replay + 1 + Math.floor(next() * Math.max(1, remaining - 1));
        // A cut (FIN, or a TCP reset) or a clean close of the HTTP response before its end.
        const how = next();
        const fault: Fault =
          how < 0.35 ? { cutAfter: k } : how < 0.6 ? { cutAfter: k, rst: true } : { endAfter: k };
        if (replay > 0) fault.replay = replay;
        return fault;
      },
    });

    const outcomes = await pool(TURNS, 20, (t) => runTurn(srv, t));

    const responsesOf = new Map<number, string[]>();
    for (const r of srv.responses.values()) {
      const t = turnOf(r.body);
      responsesOf.set(t, [...(responsesOf.get(t) ?? []), r.id]);
    }
    let resumes = 0;
    let fromCuts = 0;
    let fromCloses = 0;
    outcomes.forEach((turn, t) => {
      const at = `seed ${seed} (CLEANTURN_SEED=${seed} replays it), turn ${t}`;
      expect(turn.error, at).toBeUndefined();
      expect(turn.completed, at).toBe(true);
      expect(turn.resets, at).toEqual([]);
      const ids = responsesOf.get(t) ?? [];
      expect(ids, at).toHaveLength(1);
      const response = srv.response(ids[0] as string);
      expect(response.status, at).toBe('completed');
      expect(turn.text, at).toBe(response.text);
      expect(turn.report?.text, at).toBe(response.text);
      // One create, then one retrieve per resume; nothing cancelled.
      expect(response.retrieves, at).toBe(turn.resumes.length);
      expect(turn.fetched, at).toEqual([
        'POST /v1/responses',
        ...turn.resumes.map(
          (resume) => `GET /v1/responses/${response.id}?stream=true&starting_after=${resume.after}`,
        ),
      ]);
      // Every resume moved on: each starts after a later event than the one before.
      const afters = turn.resumes.map((resume) => resume.after);
      expect(
        afters.every((after, i) => i === 0 || after > (afters[i - 1] as number)),
        at,
      ).toBe(true);
      expect(turn.report?.outcome, at).toBe('completed');
      expect(turn.report?.attempts, at).toHaveLength(1);
      expect(turn.report?.attempts[0]?.resumes, at).toBe(turn.resumes.length);
      expect(turn.report?.resumes, at).toBe(turn.resumes.length);
      expect(turn.report?.usage.outputTokens, at).toBe(response.deltas.length);
      resumes += turn.resumes.length;
      fromCloses += turn.resumes.filter(
        (r) => r.reason === 'the stream closed before the response ended',
      ).length;
      fromCuts += turn.resumes.filter(
        (r) => r.reason !== 'the stream closed before the response ended',
      ).length;
    });

    const at = `seed ${seed}`;
    expect(srv.counts.create, at).toBe(TURNS);
    expect(srv.counts.retrieve, at).toBe(resumes);
    expect(srv.counts.cancel, at).toBe(0);
    expect(srv.cancels, at).toEqual([]);
    expect(srv.counts.other, at).toBe(0);
    // The faults did happen, of every kind, about two per turn.
    expect(resumes, at).toBeGreaterThan(1.5 * TURNS);
    expect(fromCuts, at).toBeGreaterThan(TURNS / 2);
    expect(fromCloses, at).toBeGreaterThan(TURNS / 2);
    const resets = srv.requests.filter((r) => r.fault?.rst && r.status === undefined);
    expect(resets.length, at).toBeGreaterThan(TURNS / 4);
    const duplicates = srv.requests.filter((r) => r.sent?.some((n) => n <= (r.after as number)));
    expect(duplicates.length, at).toBeGreaterThan(TURNS / 10);
    expect(
      [...srv.responses.values()].every((r) => !r.generating),
      at,
    ).toBe(true);
  }, 60_000);

  describe('resuming is impossible: an ordinary retry takes over, the first response is cancelled', () => {
    // resp_1, the response abandoned, is long, so that the cancel reaches it while it is still generating.
    const long = ({ n }: { n: number }) => (n === 1 ? 500 : 12);

    /** Checks the reset, the text of resp_2 only, and the report of a fallback after resp_1's resumes. */
    async function expectFallback(
      srv: BackgroundServer,
      turn: Outcome,
      resumes: number,
    ): Promise<ResetEvent> {
      expect(turn.error).toBeUndefined();
      expect(turn.completed).toBe(true);
      expect(srv.counts.create).toBe(2);
      expect(turn.resumes.map((r) => r.attempt)).toEqual(Array.from({ length: resumes }, () => 1));
      expect(turn.resets).toHaveLength(1);
      const reset = turn.resets[0] as ResetEvent;
      expect(reset.attempt).toBe(2);
      expect(turn.text).toBe(srv.response('resp_2').text);
      expect(turn.report?.text).toBe(srv.response('resp_2').text);
      expect(turn.report?.outcome).toBe('completed');
      expect(turn.report?.attempts.map((a) => [a.attempt, a.outcome, a.resumes])).toEqual([
        [1, 'abandoned', resumes],
        [2, 'completed', 0],
      ]);
      expect(turn.report?.attempts[0]?.reason).toBe(reset.reason);
      expect(turn.report?.resumes).toBe(resumes);
      // The abandoned response is cancelled; the one that completed is not.
      await until(() => srv.cancels.includes('resp_1'), 'the cancel of resp_1');
      expect(srv.cancels).toEqual(['resp_1']);
      expect(turn.fetched.filter((f) => f.startsWith('POST /v1/responses/'))).toEqual([
        'POST /v1/responses/resp_1/cancel',
      ]);
      expect(srv.response('resp_1').generating).toBe(false);
      return reset;
    }

    it('404 on the retrieve: the server does not know the response any more', async () => {
      const srv = await start({
        deltas: long,
        faults: onFirst({
          create: { cutAfter: 6 },
          retrieve: ({ responseId }) => {
            srv.forget(responseId);
            return undefined;
          },
        }),
      });
      const turn = await runTurn(srv, 0);
      const reset = await expectFallback(srv, turn, 1);
      const after = turn.resumes[0]?.after as number;
      expect(reset.reason).toContain(resumeError('not-found', 'resp_1', after).message);
      expect(reset.reason).toContain("Response with id 'resp_1' not found.");
      expect(reset.reason).toContain('HTTP 404');
      expect(srv.requests.filter((r) => r.kind === 'retrieve').map((r) => [r.url, r.status])).toEqual([
        [`/v1/responses/resp_1?stream=true&starting_after=${after}`, 404],
      ]);
      // The cancel arrived, for a response the server forgot: 404.
      expect(srv.requests.filter((r) => r.kind === 'cancel').map((r) => r.status)).toEqual([404]);
    });

    it('404 on the retrieve, chosen as a fault: the response is then cancelled on the server', async () => {
      const srv = await start({
        deltas: long,
        faults: onFirst({ create: { endAfter: 5 }, retrieve: () => ({ status: 'not-found' }) }),
      });
      const turn = await runTurn(srv, 0);
      const reset = await expectFallback(srv, turn, 1);
      expect(turn.resumes[0]?.reason).toBe('the stream closed before the response ended');
      expect(reset.reason).toContain('the server does not know it');
      expect(reset.reason).toContain('not found');
      await until(() => srv.response('resp_1').cancelled, 'resp_1 cancelled');
      expect(srv.response('resp_1').status).toBe('cancelled');
    });

    it('expired (400 response_expired) on the retrieve', async () => {
      const srv = await start({
        deltas: long,
        faults: onFirst({ create: { cutAfter: 7 }, retrieve: () => ({ status: 'expired' }) }),
      });
      const turn = await runTurn(srv, 0);
      const reset = await expectFallback(srv, turn, 1);
      const after = turn.resumes[0]?.after as number;
      expect(reset.reason).toContain(resumeError('expired', 'resp_1', after).message);
      expect(reset.reason).toContain('no longer streams');
      expect(reset.reason).toContain('response_expired');
      expect(srv.response('resp_1').status).toBe('cancelled');
    });

    it('expired: the server no longer streams it (expire())', async () => {
      const srv = await start({
        deltas: long,
        faults: onFirst({
          create: { cutAfter: 5 },
          retrieve: ({ responseId }) => {
            srv.expire(responseId);
            return undefined;
          },
        }),
      });
      const turn = await runTurn(srv, 0);
      const reset = await expectFallback(srv, turn, 1);
      expect(reset.reason).toContain('the server no longer streams it');
      expect(srv.requests.filter((r) => r.kind === 'retrieve').map((r) => r.status)).toEqual([400]);
    });

    it('a gap in the resumed stream: an event is missing', async () => {
      const srv = await start({
        deltas: long,
        faults: onFirst({ create: { cutAfter: 6 }, retrieve: () => ({ skip: 1 }) }),
      });
      const turn = await runTurn(srv, 0);
      const reset = await expectFallback(srv, turn, 1);
      const after = turn.resumes[0]?.after as number;
      const gap = resumeError('gap', 'resp_1', after, { next: after + 2 });
      expect(gap.message).toContain(`events ${after + 1} to ${after + 1} are missing`);
      expect(reset.reason).toBe(gap.message);
      // No text of the events after the gap reached the user before the reset.
      const beforeReset = turn.events.slice(0, turn.events.indexOf(reset));
      const first = srv.response('resp_1');
      const read = beforeReset.flatMap((e) => (e.type === 'text' ? [e.text] : [])).join('');
      expect(read).toBe(
        first.events
          .slice(0, after + 1)
          .flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta as string] : []))
          .join(''),
      );
    });

    /** The text of `response`'s events up to sequence number `last`: what the user may read of it. */
    const textUpTo = (srv: BackgroundServer, id: string, last: number) =>
      srv
        .response(id)
        .events.slice(0, last + 1)
        .flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta as string] : []))
        .join('');
    /** What the user read before `reset`. */
    const readBefore = (turn: Outcome, reset: ResetEvent) =>
      turn.events
        .slice(0, turn.events.indexOf(reset))
        .flatMap((e) => (e.type === 'text' ? [e.text] : []))
        .join('');

    it.each([
      ['strips sequence_number and streams from event 0', { strip: true, fromStart: true } as Fault],
      ['strips sequence_number (from the right event)', { strip: true } as Fault],
    ])('a resume through a proxy that %s: unverifiable, and nothing is read twice', async (_, fault) => {
      const srv = await start({
        deltas: long,
        faults: onFirst({ create: { cutAfter: 7 }, retrieve: () => fault }),
      });
      const turn = await runTurn(srv, 0);
      const reset = await expectFallback(srv, turn, 1);
      const after = turn.resumes[0]?.after as number;
      expect(reset.reason).toBe(resumeError('unverifiable', 'resp_1', after).message);
      expect(reset.reason).toContain('without a sequence_number');
      // The user read resp_1 up to the cut, once, then resp_2 only.
      expect(readBefore(turn, reset)).toBe(textUpTo(srv, 'resp_1', after));
      // The proxy did send events again, without their numbers.
      const [retrieve] = srv.requests.filter((r) => r.kind === 'retrieve');
      expect(retrieve?.sent?.length).toBeGreaterThan(0);
    });

    it('the create stream skips a sequence number: a gap, and an ordinary retry; no text after the hole', async () => {
      const srv = await start({ deltas: long, faults: onFirst({ create: { lose: 6 } }) });
      const turn = await runTurn(srv, 0);
      const reset = await expectFallback(srv, turn, 0);
      const gap = resumeError('gap', 'resp_1', 5, { next: 7, resumed: false });
      expect(gap).toMatchObject({ code: 'resume-gap', resumed: false, retryable: true });
      expect(reset.reason).toBe(gap.message);
      expect(reset.reason).toContain('events 6 to 6 are missing');
      expect(readBefore(turn, reset)).toBe(textUpTo(srv, 'resp_1', 5));
      expect(srv.counts.retrieve).toBe(0);
    });
    it.each([
      ['a 500', { status: 500 } as Fault],
      ['a cut before any event', { cutAfter: 0 } as Fault],
      ['a hang-up before the headers', { hangup: true } as Fault],
      ['a clean close before any event', { endAfter: 0 } as Fault],
    ])('repeated failure: every retrieve fails with %s, maxResumes times', async (_, fault) => {
      const srv = await start({
        deltas: long,
        faults: onFirst({ create: { cutAfter: 6 }, retrieve: () => fault }),
      });
      const turn = await runTurn(srv, 0, {
        resume: openaiBackground({ baseUrl: srv.baseUrl, maxResumes: 2, delay: 0 }),
      });
      const reset = await expectFallback(srv, turn, 2);
      const after = turn.resumes[0]?.after as number;
      // Both resumes start after the same event: neither delivered anything.
      expect(turn.resumes.map((r) => r.after)).toEqual([after, after]);
      expect(reset.reason).toContain(resumeError('repeated', 'resp_1', after, { resumes: 2 }).message);
      expect(reset.reason).toContain('2 resumes in a row delivered nothing');
      expect(srv.response('resp_1').retrieves).toBe(2);
      expect(srv.counts.retrieve).toBe(2);
    });

    it.each([
      ['a cut after the headers', { cutAfter: 0 } as Fault, /^the stream broke: /],
      ['a hang-up before the headers', { hangup: true } as Fault, /^request failed: /],
      ['a clean close', { endAfter: 0 } as Fault, /completed without a finish event/],
    ])(
      'the create is cut before the response id is known (%s): an ordinary retry, no retrieve, no cancel',
      async (_, fault, reason) => {
        const srv = await start({ deltas: long, faults: onFirst({ create: fault }) });
        const turn = await runTurn(srv, 0);
        expect(turn.error).toBeUndefined();
        expect(turn.completed).toBe(true);
        expect(turn.resumes).toEqual([]);
        expect(turn.resets).toHaveLength(1);
        expect(turn.resets[0]?.attempt).toBe(2);
        expect(turn.resets[0]?.reason).toMatch(reason);
        expect(turn.resets[0]?.reason).not.toContain('cannot resume');
        expect(turn.text).toBe(srv.response('resp_2').text);
        expect(srv.counts).toEqual({ create: 2, retrieve: 0, cancel: 0, other: 0 });
        expect(turn.fetched).toEqual(['POST /v1/responses', 'POST /v1/responses']);
        expect(turn.report?.attempts.map((a) => [a.outcome, a.resumes])).toEqual([
          ['abandoned', 0],
          ['completed', 0],
        ]);
        await settle();
        // The client never learnt resp_1's id: nothing could cancel it, it goes on generating on the server.
        expect(srv.cancels).toEqual([]);
        expect(srv.response('resp_1').cancelled).toBe(false);
      },
    );
  });

  it('a create stream without sequence numbers (a proxy strips them) fails at once, unverifiable, not retried', async () => {
    const srv = await start({ deltas: 500, faults: onFirst({ create: { strip: true } }) });
    const turn = await runTurn(srv, 0);
    expect(turn.error).toBeInstanceOf(TransportError);
    expect(turn.error).toMatchObject({
      code: 'resume-unverifiable',
      resumed: false,
      retryable: false,
      responseId: 'resp_1',
      after: -1,
    });
    expect(turn.events.filter((e) => e.type === 'text')).toEqual([]);
    expect(srv.counts.create).toBe(1);
    expect(srv.counts.retrieve).toBe(0);
    // The response it cannot read is cancelled, so that it stops costing money.
    await until(() => srv.cancels.includes('resp_1'), 'the cancel of resp_1');
    expect(srv.response('resp_1').status).toBe('cancelled');
  });

  it('duplicates: a resume that replays events at or below starting_after yields the text once', async () => {
    const srv = await start({
      deltas: 16,
      faults: ({ kind, connection, after }) => {
        if (kind === 'create') return { cutAfter: 9 };
        // The first resume replays everything it had, the second all but one event; each then cuts again.
        if (connection === 1) return { replay: after + 1, cutAfter: after + 1 + 4 };
        if (connection === 2) return { replay: 3, endAfter: 3 + 2 };
        return { replay: 2 };
      },
    });
    const turn = await runTurn(srv, 0);
    expect(turn.error).toBeUndefined();
    expect(turn.resets).toEqual([]);
    expect(turn.resumes).toHaveLength(3);
    expect(turn.text).toBe(srv.response('resp_1').text);
    expect(turn.report?.resumes).toBe(3);
    expect(srv.counts).toEqual({ create: 1, retrieve: 3, cancel: 0, other: 0 });
    // The server did send the duplicates: each retrieve wrote events at or below its starting_after first.
    const retrieves = srv.requests.filter((r) => r.kind === 'retrieve');
    expect(retrieves.map((r) => r.after)).toEqual(turn.resumes.map((r) => r.after));
    expect(retrieves.map((r) => r.sent?.filter((n) => n <= (r.after as number)).length)).toEqual([
      (turn.resumes[0]?.after as number) + 1,
      3,
      2,
    ]);
  });

  it('cancel on unsubscribe: the response is cancelled on the server and its generation stops', async () => {
    const srv = await start({ deltas: 400, interval: 2 });
    const texts = await lastValueFrom(
      streamTurn({
        turnId: 'turn-cancel',
        adapter: openaiResponses(),
        request: ({ signal }) => ({
          url: `${srv.baseUrl}/responses`,
          init: { method: 'POST', body: JSON.stringify(bodyOf(0)), signal },
        }),
        resume: openaiBackground({ baseUrl: srv.baseUrl }),
        backoff: false,
      }).pipe(
        filter((e) => e.type === 'text'),
        take(3),
        toArray(),
      ),
    );
    expect(texts).toHaveLength(3);
    const response = srv.response('resp_1');
    await until(() => srv.cancels.includes('resp_1'), 'the cancel of resp_1');
    expect(srv.cancels).toEqual(['resp_1']);
    expect(srv.requests.filter((r) => r.kind === 'cancel').map((r) => [r.method, r.url, r.status])).toEqual([
      ['POST', '/v1/responses/resp_1/cancel', 200],
    ]);
    expect(response.cancelled).toBe(true);
    expect(response.status).toBe('cancelled');
    expect(response.generating).toBe(false);
    // It stopped part-way: no terminal event, and nothing more is generated.
    const generated = response.events.length;
    expect(generated).toBeLessThan(response.total);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(response.events.length).toBe(generated);
  });

  it('cancel on unsubscribe while waiting between resumes: the wait ends, the response is cancelled', async () => {
    const srv = await start({
      deltas: ({ n }) => (n === 1 ? 500 : 12),
      faults: onFirst({ create: { cutAfter: 6 }, retrieve: () => ({ status: 503 }) }),
    });
    const seen: TurnEvent[] = [];
    const subscription = streamTurn({
      turnId: 'turn-wait',
      adapter: openaiResponses(),
      request: ({ signal }) => ({
        url: `${srv.baseUrl}/responses`,
        init: { method: 'POST', body: JSON.stringify(bodyOf(0)), signal },
      }),
      // The second resume in a row waits a minute: the consumer leaves during that wait.
      resume: openaiBackground({ baseUrl: srv.baseUrl, maxResumes: 3, delay: 60_000 }),
      backoff: false,
    }).subscribe((event) => seen.push(event));
    await until(() => seen.filter((e) => e.type === 'resume').length === 2, 'the second resume');
    subscription.unsubscribe();
    await until(() => srv.cancels.includes('resp_1'), 'the cancel of resp_1');
    expect(srv.counts).toEqual({ create: 1, retrieve: 1, cancel: 1, other: 0 });
    expect(srv.response('resp_1').status).toBe('cancelled');
    expect(seen.some((e) => e.type === 'reset')).toBe(false);
  });

  it('a completed turn sends no cancel', async () => {
    const srv = await start({ faults: ({ kind }) => (kind === 'create' ? { cutAfter: 8 } : undefined) });
    const turn = await runTurn(srv, 0);
    expect(turn.completed).toBe(true);
    expect(turn.resumes).toHaveLength(1);
    expect(turn.text).toBe(srv.response('resp_1').text);
    await settle();
    expect(turn.fetched.some((f) => f.endsWith('/cancel'))).toBe(false);
    expect(srv.cancels).toEqual([]);
    expect(srv.response('resp_1').cancelled).toBe(false);
    expect(srv.response('resp_1').status).toBe('completed');
  });

  it('response.failed on the server: an ordinary retry whose reason has the message; nothing to cancel', async () => {
    const message = 'The server had an error while processing your request. Sorry about that!';
    const srv = await start({
      fail: (response) => (response.n === 1 ? { afterDeltas: 3, code: 'server_error', message } : undefined),
    });
    const turn = await runTurn(srv, 0);
    expect(turn.error).toBeUndefined();
    expect(turn.completed).toBe(true);
    expect(turn.resumes).toEqual([]);
    expect(turn.resets).toHaveLength(1);
    expect(turn.resets[0]?.attempt).toBe(2);
    expect(turn.resets[0]?.reason).toContain(message);
    expect(srv.response('resp_1').status).toBe('failed');
    expect(turn.text).toBe(srv.response('resp_2').text);
    expect(turn.report?.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
    await settle();
    // The failed response ended on the server: no retrieve, no cancel.
    expect(srv.counts).toEqual({ create: 2, retrieve: 0, cancel: 0, other: 0 });
  });
});
