// A run of steps is the unit of the turn log: turnServer runs it once, and a browser that drops its connection
// mid-run reconnects on Last-Event-ID and reads on across the steps, each event once.
import { type RunEvent, runSteps, type TurnEvent } from 'cleanturn';
import { at, finish, keyed, reset, text } from 'cleanturn/testing';
import { fromTurnSSE, memoryTurnLog, turnServer } from 'cleanturn/transport';
import { concatMap, delay, from, lastValueFrom, of, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { startTurnHttpServer } from '../support/turnHttpServer.js';

const runId = 'run-7';
const refund = keyed(
  runId,
  2,
  { type: 'tool-call', id: 'c7', name: 'issue_refund', args: { order_id: 'ORD-7781' } },
  1,
);
/** What each step's turn streams: step 1 is retried and asks for the refund, step 2 answers. */
const steps: TurnEvent[][] = [
  [
    at(1, text('Refunding the dam')),
    reset(2, 'connection reset'),
    at(2, text('Checking order ORD-7781. ')),
    refund,
    at(2, finish('tool-calls')),
  ],
  [at(1, text('The refund has started.')), at(1, finish('stop'))],
];

let cleanup: (() => Promise<void>)[] = [];
expectNoLeftoverHandles(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

describe('turnServer + runSteps + fromTurnSSE', () => {
  it('a client cut twice mid-run, once in each step, reads every event of both steps once; each step runs once', async () => {
    const started: number[] = [];
    const run = () =>
      runSteps({
        runId,
        turn: ({ step }) => {
          started.push(step);
          // One event per few milliseconds, as a provider streams them.
          return from(steps[step - 1] ?? []).pipe(concatMap((event) => of(event).pipe(delay(3))));
        },
        execute: (turn$) =>
          turn$.pipe(
            concatMap((event) =>
              event.type === 'tool-call'
                ? of({
                    type: 'tool-result' as const,
                    effectKey: event.effectKey,
                    call: event,
                    outcome: 'executed',
                    result: { refund_id: 'R-1' },
                  })
                : [],
            ),
          ),
      });
    const expected = await lastValueFrom(run().pipe(toArray()));
    started.length = 0;

    const turns = turnServer<RunEvent>({ log: memoryTurnLog() });
    // The first connection is cut after 2 messages (inside step 1), the second after 5 more (inside step 2).
    const server = await startTurnHttpServer(turns, run, (connection) => [2, 5][connection]);
    cleanup.push(server.close, () => turns.close());

    const received = await lastValueFrom(
      fromTurnSSE<RunEvent>(() => `${server.url}/turns/${runId}`, { reconnect: { delay: 0 } }).pipe(
        toArray(),
      ),
    );
    expect(received).toEqual(expected);
    expect(received.map((e) => e.step)).toEqual([1, 1, 1, 1, 1, 1, 1, 2, 2, 2]);
    expect(received.filter((e) => e.type === 'step-end').map((e) => e.step)).toEqual([1, 2]);
    expect(server.runs()).toBe(1);
    expect(started).toEqual([1, 2]);
    expect(server.requests.map((r) => r.lastEventId)).toEqual([undefined, `${runId}:1`, `${runId}:6`]);
    expect(turns.running).toBe(0);
  });
});
