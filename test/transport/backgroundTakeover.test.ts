// Taking over a run whose attempt streams an OpenAI Responses background response: the response goes on generating
// on the provider while no runner reads it, so the runner that takes the turn over reads the same response again
// instead of creating another. Two turn servers share one memory turn log (memoryTurnLogView: claims and leases of
// their own, as two processes on one Redis have); the provider is a loopback Responses server in background mode.
// Server A runs the turn and goes away mid-text (close with handOver: nothing written, its lease lapses); a reader
// on server B takes the turn over. One create, no cancel, no reset: the reader ends with the response's text once.
import { accumulateTurn, type RunEvent, runSteps, type TurnEvent } from 'cleanturn';
import { openaiResponses } from 'cleanturn/providers';
import {
  memoryTurnLog,
  openaiBackground,
  streamTurn,
  type TurnMessage,
  turnServer,
} from 'cleanturn/transport';
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { memoryTurnLogView } from '../../src/transport/turnLog.js';
import type { RunContext } from '../../src/transport/turnServer.js';
import {
  type BackgroundServer,
  type Fault,
  startBackgroundResponses,
} from '../support/backgroundResponses.js';
import { expectNoLeftoverHandles } from '../support/resources.js';

const runId = 'run-bg';
const LEASE = 150;
let server: BackgroundServer | undefined;
expectNoLeftoverHandles(async () => {
  await server?.close();
  server = undefined;
});

/** The run of every server: one step, a background response, resumed from the takeover's events. */
const runOf =
  (provider: BackgroundServer, starts: string[], name: string) =>
  ({ takeover, signal }: RunContext<RunEvent>) => {
    starts.push(takeover === undefined ? name : `${name} (takeover ${takeover.count})`);
    return runSteps({
      runId,
      maxSteps: 1,
      resume: takeover?.events,
      turn: ({ step, resumeFrom }) =>
        streamTurn({
          turnId: runId,
          step,
          signal,
          backoff: false,
          adapter: openaiResponses(),
          request: ({ signal: abort }) => ({
            url: `${provider.baseUrl}/responses`,
            init: {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({
                model: 'gpt-4.1',
                input: 'Refund ORD-7781.',
                background: true,
                stream: true,
              }),
              signal: abort,
            },
          }),
          resume: openaiBackground({ baseUrl: provider.baseUrl }),
          resumeFrom,
        }),
    });
  };

const eventsOf = (messages: TurnMessage[]) =>
  messages.filter((m) => m.type === 'turn').map((m) => JSON.parse(m.data) as RunEvent);

/** Runs the turn on A until `cutAt` texts were read, hands it over, and reads the rest on B. */
async function takeOverMidText(provider: BackgroundServer, cutAt: number) {
  const log = memoryTurnLog<RunEvent>({ leaseMs: LEASE });
  const a = turnServer({ log });
  const b = turnServer({ log: memoryTurnLogView(log) });
  const starts: string[] = [];
  const first: TurnMessage[] = [];
  let texts = 0;
  await new Promise<void>((resolve, reject) => {
    const reading = a.serve({ turnId: runId, run: runOf(provider, starts, 'A') }).subscribe({
      next: (message) => {
        first.push(message);
        if (message.type === 'turn' && (JSON.parse(message.data) as RunEvent).type === 'text') texts++;
        if (texts === cutAt) {
          reading.unsubscribe();
          // A goes away without a word in the log, as a deploy that restarts it does.
          a.close({ handOver: true }).then(resolve, reject);
        }
      },
      error: reject,
    });
  });
  const last = first.at(-1)?.id;
  const rest = await lastValueFrom(
    b.serve({ turnId: runId, lastEventId: last, run: runOf(provider, starts, 'B') }).pipe(toArray()),
  );
  await b.close();
  return { first, rest, starts, events: eventsOf([...first, ...rest]) };
}

async function textOf(events: RunEvent[]): Promise<string> {
  const turn = events.filter((e) => e.type !== 'step-end' && e.type !== 'tool-result') as TurnEvent[];
  return (await lastValueFrom(from(turn).pipe(accumulateTurn()))).text;
}

describe('turnServer: a takeover of a background response', () => {
  it('reads the same response again: one create, no cancel, no reset, its text once', async () => {
    const provider = await startBackgroundResponses({ deltas: 14, interval: 12 });
    server = provider;
    const { rest, starts, events } = await takeOverMidText(provider, 4);
    expect(starts).toEqual(['A', 'B (takeover 1)']);
    expect(provider.counts.create).toBe(1);
    expect(provider.cancels).toEqual([]);
    // The runner that took over read the response from its start (no starting_after).
    const retrieves = provider.requests.filter((r) => r.kind === 'retrieve');
    expect(retrieves.map((r) => r.after)).toEqual([-1]);
    expect(events.filter((e) => e.type === 'reset')).toEqual([]);
    expect(new Set(events.flatMap((e) => ('attempt' in e ? [e.attempt] : [])))).toEqual(new Set([1]));
    const response = provider.response('resp_1');
    expect(await textOf(events)).toBe(response.text);
    // Each text fragment reached the reader once.
    const texts = events.filter((e) => e.type === 'text').map((e) => (e as { text: string }).text);
    expect(texts).toEqual(response.deltas);
    expect(rest.at(-1)?.type).toBe('end');
    const end = events.find((e) => e.type === 'step-end');
    expect(end).toMatchObject({ step: 1, end: 'done', turn: { text: response.text } });
  });

  it('a response the provider forgot: an ordinary retry after a reset, its reason saying why', async () => {
    const faults = (context: { kind: string }): Fault | undefined =>
      context.kind === 'retrieve' ? { status: 'not-found' } : undefined;
    const provider = await startBackgroundResponses({ deltas: 10, interval: 12, faults });
    server = provider;
    const { events } = await takeOverMidText(provider, 3);
    expect(provider.counts.create).toBe(2);
    const resets = events.filter((e) => e.type === 'reset');
    expect(resets).toHaveLength(1);
    expect(resets[0]).toMatchObject({ attempt: 2, failedAttempt: 1, errorName: 'TransportError' });
    expect(await textOf(events)).toBe(provider.response('resp_2').text);
  });
});
