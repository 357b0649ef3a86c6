// The help-desk turn from the README, played through each policy side by side, with the three rules of its
// scenario: the connection resets mid-turn, the client retries, and the process crashes after the refund ran and
// before it was recorded, then runs the turn again on restart.
// Run it with `npm run demo` (it builds the package first when the sources changed).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  accumulateTurn,
  cleanTurn,
  effectKey,
  lateExecutionPolicy,
  naivePolicy,
  resetOnlyPolicy,
} from 'cleanturn';
import { executeTools } from 'cleanturn/effects';
import { SqliteEffectLedger } from 'cleanturn/effects/sqlite';
import { toTerminal } from 'cleanturn/renderers';
import { call, helpDesk } from 'cleanturn/testing';
import { concatMap, delay, from, identity, lastValueFrom, of, tap, toArray } from 'rxjs';

const turnId = 'turn-42';
/** The turn on restart: a new generation, so the same refund comes with a new id. */
const restartTurn = [helpDesk.b, call('c11', 'issue_refund', helpDesk.refundArgs), helpDesk.e, helpDesk.f];
/** How long a ledger claim holds: how long the restart waits, at most, for the crashed run's claim. */
const leaseMs = 300;

/**
 * The payment provider, a fake that outlives the app's crash. Given an idempotency key, it refunds once per key
 * and answers a repeat with the refund it already made (as Stripe does with its `Idempotency-Key` header).
 */
function paymentService() {
  const refunds = [];
  const byKey = new Map();
  return {
    refunds,
    refund(callId, idempotencyKey) {
      const earlier = idempotencyKey === undefined ? undefined : byKey.get(idempotencyKey);
      if (earlier !== undefined) return { ...earlier, again: true };
      const refund = { id: `re_${refunds.length + 1}`, callId };
      refunds.push(refund);
      if (idempotencyKey !== undefined) byKey.set(idempotencyKey, refund);
      return { ...refund, again: false };
    },
  };
}

/** One run of the turn through a policy: everything the policy emits, and the turn the user reads. */
async function play(events, policy) {
  const out = await lastValueFrom(from(events).pipe(policy, toArray()));
  const turn = await lastValueFrom(from(out).pipe(accumulateTurn()));
  return { out, turn };
}

/** A policy without a ledger: every `tool-call` it emits asks the payment service for a refund, with no key. */
async function withoutLedger(policy, { restart }) {
  const payments = paymentService();
  const log = [];
  const first = await play(helpDesk.turn, policy());
  for (const event of first.out) {
    if (event.type !== 'tool-call') continue;
    log.push(`${event.id} → refund ${payments.refund(event.id).id}`);
    if (restart) {
      log.push('✗ crash (it keeps no record of what ran)');
      break;
    }
  }
  if (!restart) return { payments, log, runs: [first.turn] };
  const again = await play(restartTurn, policy());
  for (const event of again.out)
    if (event.type === 'tool-call') log.push(`restart: ${event.id} → refund ${payments.refund(event.id).id}`);
  return { payments, log, runs: [first.turn, again.turn] };
}

/**
 * cleanTurn with executeTools and a SQLite ledger. The handler passes the effect key to the payment service as its
 * idempotency key. In the first run the process dies right after the refund: the ledger holds the claim written
 * before the handler ran, and never hears the outcome.
 */
async function withLedger(database) {
  const payments = paymentService();
  const log = [];
  const tools = (crash) => ({
    issue_refund: (_args, { effectKey: key, call, reclaimed }) => {
      if (reclaimed) log.push('lease expired: in doubt, so the handler runs again, same key');
      const refund = payments.refund(call.id, key);
      log.push(`${call.id} → ${refund.again ? 'already refunded' : 'refund'} ${refund.id}`);
      if (crash === undefined) return { refund_id: refund.id };
      log.push(`  key ${key}`, '✗ crash before the record');
      crash();
      return new Promise(() => {});
    },
  });
  const execute = (out, ledger, crashes) =>
    new Promise((resolve, reject) => {
      // The crash: the subscription is dropped mid-handler, as if the process had died; nothing more is written.
      const crash = () =>
        queueMicrotask(() => {
          subscription.unsubscribe();
          resolve();
        });
      const subscription = from(out)
        .pipe(executeTools(tools(crashes ? crash : undefined), { turnId, ledger, leaseMs }))
        .subscribe({ error: reject, complete: resolve });
    });

  let ledger = new SqliteEffectLedger({ database });
  const first = await play(helpDesk.turn, cleanTurn({ turnId, seen: ledger.seen(turnId) }));
  await execute(first.out, ledger, true);
  ledger.close();

  ledger = new SqliteEffectLedger({ database });
  const again = await play(restartTurn, cleanTurn({ turnId, seen: ledger.seen(turnId) }));
  const [c11] = again.out.filter((event) => event.type === 'tool-call');
  const held = ledger.get(turnId, c11.effectKey)?.status;
  log.push(`restart: ${c11.id}, same key, ${held === 'claimed' ? 'still claimed by the crashed run' : held}`);
  await execute(again.out, ledger, false);
  log.push(`ledger: ${ledger.get(turnId, c11.effectKey)?.status}`);
  ledger.close();
  return { payments, log, runs: [first.turn, again.turn] };
}

const folder = mkdtempSync(join(tmpdir(), 'cleanturn-demo-'));
let results;
try {
  const database = join(folder, 'effects.db');
  results = [
    {
      title: 'naive',
      note: 'append; run calls at once',
      ...(await withoutLedger(naivePolicy, { restart: false })),
    },
    {
      title: 'reset on retry',
      note: 'clear on retry; run calls at once',
      ...(await withoutLedger(resetOnlyPolicy, { restart: false })),
    },
    {
      title: 'reset + late execution',
      note: 'run calls when their attempt finishes; no memory of what ran',
      ...(await withoutLedger(lateExecutionPolicy, { restart: true })),
    },
    {
      title: 'cleanTurn',
      note: '+ effect keys; executeTools with a SQLite ledger',
      ...(await withLedger(database)),
    },
  ];
} finally {
  rmSync(folder, { recursive: true, force: true });
}

const width = 26;
/** Word-wraps a string to the column width; a word longer than a line is split. */
const wrap = (s) => {
  const lines = [''];
  for (const word of s.split(/(?<= )/)) {
    let rest = word;
    while (rest.length > 0) {
      const line = lines[lines.length - 1];
      if (line.length + rest.trimEnd().length <= width) {
        lines[lines.length - 1] = line + rest;
        rest = '';
      } else if (line.length === 0) {
        lines[lines.length - 1] = rest.slice(0, width);
        rest = rest.slice(width);
        lines.push('');
      } else {
        lines.push('');
      }
    }
  }
  return lines.filter((line, i) => line !== '' || i === 0).map((line) => line.trimEnd());
};
const section = (label, cells) => {
  const height = Math.max(...cells.map((c) => c.length));
  if (label) console.log(label);
  for (let i = 0; i < height; i++)
    console.log(`  ${cells.map((c) => (c[i] ?? '').padEnd(width)).join(' │ ')}`.trimEnd());
};
const rule = () => console.log(`  ${results.map(() => '─'.repeat(width)).join('─┼─')}`);

/** The text of a run's last attempt, and how many attempts it had. */
const attemptsOf = (events) => {
  const last = events.findLastIndex((e) => e.type === 'retry');
  const text = events
    .slice(last + 1)
    .filter((e) => e.type === 'text')
    .map((e) => e.text)
    .join('');
  return { count: events.filter((e) => e.type === 'retry').length + 1, text };
};
/** What the user reads, in a few words, and how many refunds ran. */
const outcome = (r) => {
  const source = attemptsOf(r.runs.length === 1 ? helpDesk.turn : restartTurn);
  const turn = r.runs.at(-1);
  const reads =
    turn.text === source.text
      ? 'reads the last attempt only'
      : `reads ${source.count} attempts glued together`;
  const n = r.payments.refunds.length;
  return `${reads}; ${n} refund${n === 1 ? '' : 's'}`;
};

console.log(`One help-desk turn, three things go wrong:
  1. attempt 1 sends text, refund c1 and "Refunding the dam", then the connection resets;
  2. the client retries: attempt 2 sends the same refund as c7, a whole sentence and a finish;
  3. the process crashes after the refund ran and before it was recorded, and the turn runs again on
     restart: a new generation, with the same refund as c11.
Rule 3 is played on the last two columns; the first two refund twice without it. A fake payment service
counts the refunds; given an idempotency key, it refunds once per key. Only cleanTurn has a key to give: its
effect key, which its refund handler passes on, as the docs recommend. The ledger (a SQLite file in a temp
folder) wrote its claim before the handler ran, so on restart the key is in doubt, not done: executeTools
waits for the claim's lease to expire and runs the handler again with the same key.
`);

section(
  '',
  results.map((r) => [r.title.toUpperCase(), ...wrap(r.note)]),
);
rule();
section(
  'what the user reads',
  results.map((r) => wrap(JSON.stringify(r.runs.at(-1).text))),
);
rule();
section(
  'refunds the payment service made',
  results.map((r) => r.log.flatMap(wrap)),
);
rule();
section(
  'attempts it recorded',
  results.map((r) =>
    r.runs.flatMap((turn, run) => [
      ...(run === 0 ? [] : ['after the restart:']),
      ...turn.attempts.map((a) => `#${a.attempt} ${a.outcome}, ${a.textLength} chars`),
    ]),
  ),
);
rule();
section(
  'the outcome',
  results.map((r) => wrap(outcome(r))),
);

const [c1, c7] = helpDesk.turn.filter((e) => e.type === 'tool-call');
const [c11] = restartTurn.filter((e) => e.type === 'tool-call');
console.log(`\neffectKey('${turnId}', c1)  = ${effectKey(turnId, c1)}`);
console.log(`effectKey('${turnId}', c7)  = ${effectKey(turnId, c7)}`);
console.log(`effectKey('${turnId}', c11) = ${effectKey(turnId, c11)}   (same meaning, same key: one refund)`);

// The clean turn as the terminal renderer draws it. On a terminal it streams word by word, and the reset erases
// attempt 1's text from the screen; piped to a file it prints a marker line instead.
const tty = process.stdout.isTTY === true;
console.log(
  `\nThe clean turn in a terminal${tty ? ' (watch attempt 1 vanish on the reset):' : ' (not a TTY: a marker line instead of erasing):'}\n`,
);
const streamSlowly = concatMap((event) =>
  event.type === 'text'
    ? from(event.text.split(/(?<= )/)).pipe(
        concatMap((word) => of({ type: 'text', text: word }).pipe(delay(90))),
      )
    : of(event).pipe(delay(400)),
);
await lastValueFrom(
  from(helpDesk.turn).pipe(
    tty ? streamSlowly : identity,
    cleanTurn({ turnId }),
    toTerminal({ tty, columns: process.stdout.columns }),
    tap((chunk) => process.stdout.write(chunk)),
  ),
  { defaultValue: '' },
);
