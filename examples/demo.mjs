// The help-desk turn from the README, replayed through each policy side by side.
// Run it with `npm run demo` (it builds the package first).

import { accumulateTurn, cleanTurn, effectKey, policies } from 'cleanturn';
import { toTerminal } from 'cleanturn/renderers';
import { helpDeskTurn } from 'cleanturn/testing';
import { concatMap, delay, from, identity, lastValueFrom, of, tap, toArray } from 'rxjs';

const turnId = 'turn-42';

const columns = [
  { title: 'naive', note: 'append; run calls at once', pipe: policies.naive() },
  { title: 'reset on retry', note: 'clear on retry; run calls at once', pipe: policies.resetOnly() },
  {
    title: 'reset + late execution',
    note: 'run calls when their attempt finishes',
    pipe: policies.lateExecution(),
  },
  { title: 'cleanTurn', note: '+ effect keys: one effect per key', pipe: cleanTurn({ turnId }) },
];

/**
 * Replays the turn through a policy; every tool call that comes out "runs" (is recorded). A `tool-call-repeat`
 * does not: its key already ran, and it is answered with the recorded result.
 */
async function replay(policy) {
  const ran = [];
  const states = await lastValueFrom(
    from(helpDeskTurn).pipe(
      policy,
      tap((event) => {
        if (event.type === 'tool-call') ran.push(event);
      }),
      accumulateTurn(),
      toArray(),
    ),
  );
  return { turn: states.at(-1), ran };
}

console.log(
  'The stream: attempt 1 sends text, refund c1 and "Refunding the dam", then the connection resets;',
);
console.log('attempt 2 sends the same refund as c7, a whole sentence and a finish.\n');

const results = [];
for (const column of columns) results.push({ ...column, ...(await replay(column.pipe)) });

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
const cell = (rows) => rows.map((r) => r.padEnd(width));
const section = (label, cells) => {
  const height = Math.max(...cells.map((c) => c.length));
  if (label) console.log(label);
  for (let i = 0; i < height; i++)
    console.log(`  ${cells.map((c) => (c[i] ?? '').padEnd(width)).join(' │ ')}`);
};
const rule = () => console.log(`  ${results.map(() => '─'.repeat(width)).join('─┼─')}`);

section(
  '',
  results.map((r) => cell([r.title.toUpperCase(), ...wrap(r.note)])),
);
rule();
section(
  'what the user reads',
  results.map((r) => cell(wrap(JSON.stringify(r.turn.text)))),
);
rule();
section(
  'refunds executed',
  results.map((r) => {
    const refunds = r.ran.filter((c) => c.name === 'issue_refund');
    return cell([
      `${refunds.length} × issue_refund`,
      ...refunds.map((c) => `${c.id} key ${c.effectKey ?? effectKey(turnId, c)}`),
    ]);
  }),
);
rule();
section(
  'attempts it recorded',
  results.map((r) => cell(r.turn.attempts.map((a) => `#${a.attempt} ${a.outcome}, ${a.textLength} chars`))),
);

const [c1, c7] = helpDeskTurn.filter((e) => e.type === 'tool-call');
console.log(`\neffectKey('${turnId}', c1) = ${effectKey(turnId, c1)}`);
console.log(`effectKey('${turnId}', c7) = ${effectKey(turnId, c7)}   (same meaning, same key: one refund)`);

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
  from(helpDeskTurn).pipe(
    tty ? streamSlowly : identity,
    cleanTurn({ turnId }),
    toTerminal({ tty, columns: process.stdout.columns }),
    tap((chunk) => process.stdout.write(chunk)),
  ),
  { defaultValue: '' },
);
