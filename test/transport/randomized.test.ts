// A randomized run over real sockets: random turns, random faults at random byte offsets, random retry
// counts. The invariants hold for every turn, and the counts are printed.
import { effectKey, TurnError } from 'cleanturn';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { chatTranscript, type Transcript, type TranscriptPart } from '../support/chatTranscript.js';
import { type ScriptedResponse, startServer, type TestServer } from '../support/httpServer.js';
import { prng, seed } from '../support/random.js';
import { settledResources } from '../support/resources.js';
import { collectTurn } from './collectTurn.js';

const TURNS = 1_000;
const MAX_ATTEMPTS = 3;

const random = prng(seed);
const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
const words = [
  'Checking',
  'order',
  'ORD-7781.',
  'Refunding',
  'the',
  'damaged',
  'book',
  'ünïcödé',
  '✓',
  '📦',
  'naïve',
  '—',
];
const tools = ['issue_refund', 'send_email', 'cancel_order'];

interface PlannedAttempt {
  transcript: Transcript;
  text: string;
  calls: { id: string; name: string; args: unknown }[];
}

function planAttempt(turn: number, attempt: number): PlannedAttempt {
  const parts: TranscriptPart[] = [];
  const calls: PlannedAttempt['calls'] = [];
  let text = '';
  const n = 1 + Math.floor(random() * 6);
  for (let i = 0; i < n; i++) {
    if (random() < 0.3) {
      const args = { order_id: `ORD-${Math.floor(random() * 3)}`, amount: pick(['full', 'half']) };
      const call = { id: `t${turn}a${attempt}c${i}`, name: pick(tools), args };
      calls.push(call);
      parts.push({ call: { ...call, args: JSON.stringify(args), fragments: 1 + Math.floor(random() * 4) } });
    } else {
      const fragment = `${Array.from({ length: 1 + Math.floor(random() * 4) }, () => pick(words)).join(' ')} `;
      text += fragment;
      parts.push({ text: fragment });
    }
  }
  const transcript = chatTranscript(parts, random() < 0.5 ? { usage: { prompt: 10, completion: n } } : {});
  return { transcript, text, calls };
}

/** A failure of one attempt at a random point before its finish. */
function fault(planned: PlannedAttempt): ScriptedResponse {
  const { body } = planned.transcript;
  const beforeFinish = planned.transcript.before('finish');
  const at = Math.floor(random() * beforeFinish);
  const chunkSize = 1 + Math.floor(random() * 200);
  switch (pick(['destroy', 'destroy', 'end', '500', '503'] as const)) {
    case 'destroy':
      return { body, destroyAfter: at, chunkSize };
    case 'end':
      return { body, endAfter: at, chunkSize };
    case '500':
      return { status: 500, body: 'upstream error' };
    case '503':
      return { status: 503, headers: { 'retry-after': '0' }, body: 'overloaded' };
  }
}

interface PlannedTurn {
  attempts: PlannedAttempt[];
  failures: number;
  scripts: ScriptedResponse[];
}

let server: TestServer;
const plans: PlannedTurn[] = [];
let baseline: string[] = [];

beforeAll(async () => {
  baseline = process.getActiveResourcesInfo();
  for (let t = 0; t < TURNS; t++) {
    const failures = Math.floor(random() * (MAX_ATTEMPTS + 1)); // MAX_ATTEMPTS failures exhaust the turn
    const attempts = Array.from({ length: Math.min(failures + 1, MAX_ATTEMPTS) }, (_, a) =>
      planAttempt(t, a + 1),
    );
    const scripts = attempts.map((planned, a) =>
      a < failures
        ? fault(planned)
        : { body: planned.transcript.body, chunkSize: 1 + Math.floor(random() * 300) },
    );
    plans.push({ attempts, failures, scripts });
  }
  const served = new Map<number, number>();
  server = await startServer((_n, req) => {
    const t = Number(/^\/turn\/(\d+)\//.exec(req.url ?? '')?.[1]);
    const k = served.get(t) ?? 0;
    served.set(t, k + 1);
    return plans[t]?.scripts[k] ?? { status: 404, body: 'no such attempt' };
  });
});

afterAll(async () => {
  await server.close();
  const left = await settledResources(baseline);
  expect(left.filter((r) => r === 'TCPSocketWrap' || r === 'Timeout').length).toBeLessThanOrEqual(
    baseline.filter((r) => r === 'TCPSocketWrap' || r === 'Timeout').length,
  );
});

it(`${TURNS} turns with random cuts and random retry counts keep every invariant`, async () => {
  const violations: string[] = [];
  const counts = {
    turns: 0,
    completed: 0,
    exhausted: 0,
    attempts: 0,
    resets: 0,
    executed: 0,
    abandonedCalls: 0,
    abandonedRan: 0,
  };
  for (let t = 0; t < TURNS; t++) {
    const plan = plans[t] as PlannedTurn;
    const turn = await collectTurn(`${server.url}/turn/${t}`, { retry: MAX_ATTEMPTS - 1 });
    const fail = (what: string) => violations.push(`turn ${t} (seed ${seed}): ${what}`);
    counts.turns++;
    counts.attempts += plan.attempts.length;
    counts.resets += turn.resets.length;
    counts.executed += turn.executed.length;
    const last = plan.attempts[plan.attempts.length - 1] as PlannedAttempt;
    const abandonedIds = new Set(
      plan.attempts.slice(0, plan.failures).flatMap((a) => a.calls.map((c) => c.id)),
    );
    counts.abandonedCalls += abandonedIds.size;
    for (const call of turn.executed)
      if (abandonedIds.has(call.id)) {
        counts.abandonedRan++;
        fail(`ran ${call.id} of an abandoned attempt`);
      }
    if ((turn.report?.attempts.length ?? 0) > MAX_ATTEMPTS) fail('more attempts than the cap');
    if (plan.failures >= MAX_ATTEMPTS) {
      counts.exhausted++;
      if (!(turn.error instanceof TurnError && turn.error.code === 'retries-exhausted'))
        fail(`expected TurnError retries-exhausted, got ${String(turn.error)}`);
      if (turn.executed.length > 0) fail('a tool ran in a turn that never completed an attempt');
      continue;
    }
    counts.completed++;
    if (turn.error !== undefined) fail(`errored: ${String(turn.error)}`);
    if (turn.text !== last.text) fail(`text ${JSON.stringify(turn.text)} ≠ ${JSON.stringify(last.text)}`);
    const expectedKeys = [...new Set(last.calls.map((c) => effectKey('turn-42', c)))];
    const executedKeys = turn.executed.map((c) => c.effectKey);
    if (JSON.stringify(executedKeys) !== JSON.stringify(expectedKeys)) {
      fail(`executed keys ${executedKeys.join(',')} ≠ ${expectedKeys.join(',')}`);
    }
    // The final attempt is whole: every one of its call ids reaches the consumer, repeats marked.
    const releasedIds = turn.released.map((c) => c.id);
    const lastIds = last.calls.map((c) => c.id);
    if (JSON.stringify(releasedIds) !== JSON.stringify(lastIds))
      fail(`released ${releasedIds.join(',')} ≠ the final attempt's ${lastIds.join(',')}`);
    if (turn.resets.length !== plan.failures)
      fail(`${turn.resets.length} resets for ${plan.failures} failures`);
    if (turn.report?.attempts.length !== plan.failures + 1) fail('the report does not bill every attempt');
  }
  console.log(
    `randomized run (seed ${seed}): ${counts.turns} turns, ${counts.completed} completed, ${counts.exhausted} exhausted, ` +
      `${counts.attempts} attempts, ${counts.resets} resets, ${counts.executed} calls executed, ` +
      `${counts.abandonedCalls} calls of abandoned attempts (${counts.abandonedRan} ran), ${violations.length} invariant violations`,
  );
  expect(violations).toEqual([]);
}, 120_000);
