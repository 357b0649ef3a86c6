import {
  accumulateTurn,
  type KeyedToolCall,
  type RunEvent,
  runSteps,
  type ToolResultLike,
  type TurnEvent,
  type TurnState,
} from 'cleanturn';
import { at, defineMarbles, finish, helpDesk as h, keyed, text } from 'cleanturn/testing';
import { filter, from, map, type Observable } from 'rxjs';

const runId = 'run-7';

/** Step 1 asks for the refund; step 2, with its result in the request, answers. Clean turns, as streamTurn emits them. */
const a = at(1, text('Checking order ORD-7781. '));
const k = keyed(runId, 1, h.k, 1);
const f = at(1, finish('tool-calls'));
const b = at(1, text('Refund started.'));
const g = at(1, finish('stop'));
const v = { a, k, f, b, g };

/** An executor in virtual time: each released call's result at once. */
const refunds = (turn$: Observable<TurnEvent>): Observable<ToolResultLike> =>
  turn$.pipe(
    filter((event): event is KeyedToolCall => event.type === 'tool-call'),
    map((call) => ({
      type: 'tool-result' as const,
      effectKey: call.effectKey,
      call,
      outcome: 'executed',
      result: { refund_id: 'R-1' },
    })),
  );

/** The turn state a step ends with. */
function stateOf(events: TurnEvent[]): TurnState {
  let state: TurnState | undefined;
  from(events)
    .pipe(accumulateTurn())
    .subscribe((s) => {
      state = s as TurnState;
    });
  return state as TurnState;
}

const result = {
  type: 'tool-result' as const,
  effectKey: k.effectKey,
  call: k,
  outcome: 'executed',
  result: { refund_id: 'R-1' },
};
const s1 = { step: 1, turn: stateOf([a, k, f]), results: [result], next: 'answer' as const };
const stepped = (step: number, event: object) => ({ ...event, step }) as RunEvent;

/** A run whose runner was lost in step 2, after its first text: what the turn log holds of it. */
const lost: RunEvent[] = [
  stepped(1, a),
  stepped(1, k),
  stepped(1, result),
  stepped(1, f),
  { type: 'step-end', ...s1 },
  stepped(2, at(1, text('The refu'))),
];
/** The reset that voids the cut attempt, and step 2's new turn, numbered after it. */
const lostReset = {
  type: 'reset' as const,
  attempt: 2,
  reason: 'the runner was lost',
  errorName: 'TransportError',
  failedAttempt: 1,
  outputStarted: true,
};
/** A run whose runner was lost in step 1 while it read a background response: the log holds its name and a text. */
const n = at(1, { type: 'resumable' as const, responseId: 'resp_1' });
const lostReading: RunEvent[] = [stepped(1, n), stepped(1, a)];
const b2 = at(2, text('Refund started.'));
const g2 = at(2, finish('stop'));

export default defineMarbles({
  name: 'runSteps',
  summary:
    'Runs a loop of turns: a turn, its calls, the next turn, until a finish that needs no answer; each step numbered.',
  cases: [
    {
      title:
        'step 1 asks for a refund and gets its result; step 2 starts after step 1 ended, and its finish ends the run',
      source: ['-a-k-----f---|', '-b-g-|'],
      values: v,
      label: "runSteps({ runId: 'run-7', turn, execute })",
      operator: () => (turn$: Observable<TurnEvent>) =>
        runSteps({ runId, turn: () => turn$, execute: refunds }),
      expected: /* */ '-A-(KR)--F---SB-G-(T|)',
      expectedValues: {
        A: stepped(1, a),
        K: stepped(1, k),
        R: stepped(1, result),
        F: stepped(1, f),
        S: { type: 'step-end', ...s1 },
        B: stepped(2, b),
        G: stepped(2, g),
        T: { type: 'step-end', step: 2, turn: stateOf([b, g]), results: [], next: 'done', end: 'done' },
      },
      subscriptions: ['^------------!', '-------------^----!'],
    },
    {
      title:
        'resume: a run taken over after its runner was lost in step 2 runs no finished step again; the cut step starts with a reset, its attempts numbered after the cut one',
      source: ['-b-g-|'],
      values: v,
      label: "runSteps({ runId: 'run-7', turn, execute, resume: takeover.events })",
      operator: () => (turn$: Observable<TurnEvent>) =>
        runSteps({ runId, turn: () => turn$, execute: refunds, resume: lost }),
      expected: /* */ 'XB-G-(T|)',
      expectedValues: {
        X: stepped(2, lostReset),
        B: stepped(2, b2),
        G: stepped(2, g2),
        T: {
          type: 'step-end',
          step: 2,
          turn: stateOf([lostReset, b2, g2]),
          results: [],
          next: 'done',
          end: 'done',
        },
      },
      subscriptions: '^----!',
    },
    {
      title:
        'resume of a background response: the step goes on with it (resumeFrom), read again from its start; what the lost runner emitted is not emitted again, and no reset',
      source: ['-n-a-k---f-|'],
      values: { ...v, n },
      label: "runSteps({ runId: 'run-7', turn, execute, maxSteps: 1, resume: takeover.events })",
      operator: () => (turn$: Observable<TurnEvent>) =>
        runSteps({ runId, turn: () => turn$, execute: refunds, maxSteps: 1, resume: lostReading }),
      expected: /* */ '-----(KR)F-(S|)',
      expectedValues: {
        K: stepped(1, k),
        R: stepped(1, result),
        F: stepped(1, f),
        S: { type: 'step-end', ...s1, turn: stateOf([n, a, k, f]), end: 'max-steps' },
      },
      subscriptions: '^----------!',
    },
    {
      title: 'maxSteps: a step that asks for another past the cap ends the run there, and says so',
      source: ['-a-k-----f---|'],
      values: v,
      label: "runSteps({ runId: 'run-7', turn, execute, maxSteps: 1 })",
      operator: () => (turn$: Observable<TurnEvent>) =>
        runSteps({ runId, turn: () => turn$, execute: refunds, maxSteps: 1 }),
      expected: /* */ '-A-(KR)--F---(S|)',
      expectedValues: {
        A: stepped(1, a),
        K: stepped(1, k),
        R: stepped(1, result),
        F: stepped(1, f),
        S: { type: 'step-end', ...s1, end: 'max-steps' },
      },
      subscriptions: '^------------!',
    },
    {
      title: "an error of a step's turn ends the run with it: no step-end, no next step",
      source: ['-a-k---#'],
      values: v,
      error: new Error('gave up after 3 attempt(s): connection reset'),
      label: "runSteps({ runId: 'run-7', turn, execute })",
      operator: () => (turn$: Observable<TurnEvent>) =>
        runSteps({ runId, turn: () => turn$, execute: refunds }),
      expected: /* */ '-A-(KR)#',
      expectedValues: { A: stepped(1, a), K: stepped(1, k), R: stepped(1, result) },
      expectedError: new Error('gave up after 3 attempt(s): connection reset'),
      subscriptions: '^------!',
    },
  ],
});
