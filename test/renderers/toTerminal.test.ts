// The terminal renderer, checked on a fake terminal that interprets what it writes: the tests read the screen.
import { cleanTurn, effectKey, naivePolicy } from 'cleanturn';
import { toTerminal, type ViewEvent } from 'cleanturn/renderers';
import { at, call, finish, helpDesk, keyed, repeated, reset, text, usage } from 'cleanturn/testing';
import { from, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { standardChecks } from '../support/standardChecks.js';
import { toolResult } from '../support/toolResults.js';
import { FakeTerminal } from './fakeTerminal.js';

const turnId = 'turn-42';
const prompt = '$ help-desk --order ORD-7781';

/** The chunks the renderer writes for `events`, synchronously. */
function chunksOf(events$: Observable<ViewEvent>, options: Parameters<typeof toTerminal>[0]): string[] {
  const chunks: string[] = [];
  events$.pipe(toTerminal(options)).subscribe((chunk) => chunks.push(chunk));
  return chunks;
}

/** A terminal with the user's command on its first row, and the screens after each chunk written to it. */
function play(chunks: string[], columns: number): { terminal: FakeTerminal; screens: string[][] } {
  const terminal = new FakeTerminal(columns);
  terminal.write(`${prompt}\r\n`);
  const screens = chunks.map((chunk) => {
    terminal.write(chunk);
    return terminal.screen;
  });
  return { terminal, screens };
}

/** `line` as a terminal `columns` wide shows it: cut into rows, trailing blanks trimmed. */
function rows(line: string, columns: number): string[] {
  const chars = [...line];
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += columns)
    out.push(
      chars
        .slice(i, i + columns)
        .join('')
        .trimEnd(),
    );
  return out.length === 0 ? [''] : out;
}

const c7 = keyed(turnId, 2, call('c7', 'issue_refund', helpDesk.refundArgs));
const refundLine = `⚙ issue_refund {"order_id":"ORD-7781","amount":"full"} [${effectKey(turnId, c7)}]`;
const attempt2 = 'Checking order ORD-7781. The book arrived damaged, so I have started a full refund.';

describe('toTerminal on a TTY', () => {
  it('the help-desk turn: a reset takes the abandoned text off the screen, wrapped rows included', () => {
    const columns = 30;
    const chunks = chunksOf(from(helpDesk.turn).pipe(cleanTurn({ turnId })), { tty: true, columns });
    const { screens } = play(chunks, columns);
    const resetAt = chunks.findIndex((chunk) => chunk.includes('↺'));

    // Before the reset, the user watched attempt 1 stream, over two rows.
    expect(screens[resetAt - 1]).toEqual([
      prompt,
      ...rows('Checking order ORD-7781. Refunding the dam', columns),
    ]);
    // The reset leaves the command and the marker; attempt 1 is gone.
    expect(screens[resetAt]).toEqual([prompt, '↺ attempt 2 (connection reset)']);
    for (const screen of screens.slice(resetAt)) expect(screen.join('\n')).not.toContain('Refunding the dam');
    expect(screens.at(-1)).toEqual([
      prompt,
      '↺ attempt 2 (connection reset)',
      ...rows(attempt2, columns),
      ...rows(refundLine, columns),
    ]);
  });

  it('the same turn through the naive policy leaves both attempts glued on the screen', () => {
    // The fake terminal is not lenient: without a reset, the abandoned text stays where the user read it.
    const columns = 30;
    const chunks = chunksOf(from(helpDesk.turn).pipe(naivePolicy()), { tty: true, columns });
    const { terminal } = play(chunks, columns);
    expect(terminal.screen.join('')).toContain('Refunding the damChecking order');
  });

  describe('erases exactly what it printed: never less, never a row above', () => {
    const columns = 10;
    // Lengths around one, two and three rows, where the terminal's pending wrap and the row count disagree
    // most easily; text with newlines, a wide character on the last column, tabs and combining marks.
    const texts: [string, string][] = [];
    for (let n = 0; n <= 31; n++) texts.push([`${n} characters`, 'x'.repeat(n)]);
    texts.push(
      ['a full row, then a newline', `${'x'.repeat(10)}\nmore`],
      ['two full rows ending in a newline', `${'x'.repeat(20)}\n`],
      ['empty lines', '\n\n\nx\n'],
      ['a wide character that does not fit the last column', `${'x'.repeat(9)}退款已经开始`],
      ['wide characters filling rows exactly', '退款退款退'.repeat(3)],
      ['tabs', 'a\tb\tc\td'],
      ['combining marks', 'cafe\u0301 '.repeat(4)],
    );
    for (const [title, attempt1] of texts) {
      it(title, () => {
        const events: ViewEvent[] = [at(1, text(attempt1)), reset(2, 'x'), at(2, text('ok'))];
        const { screens } = play(chunksOf(from(events), { tty: true, columns }), columns);
        expect(screens.at(-1)).toEqual([...rows(prompt, columns), '↺ attempt', '2 (x)', 'ok']);
      });
    }
  });

  it("a second reset also takes back the first one's marker", () => {
    const columns = 40;
    const events: ViewEvent[] = [
      at(1, text('Refunding the dam')),
      reset(2, 'connection reset'),
      at(2, text('Refunding the damaged b')),
      reset(3, 'stalled'),
      at(3, text('Refund started.')),
      at(3, finish()),
    ];
    const { terminal } = play(chunksOf(from(events), { tty: true, columns }), columns);
    expect(terminal.screen).toEqual([prompt, '↺ attempt 3 (stalled)', 'Refund started.']);
  });

  it('model text cannot move the cursor: control characters are dropped, tabs become spaces', () => {
    const columns = 40;
    const events: ViewEvent[] = [
      at(1, text('Hi\x1b[2J\x1b[H there\r\u0007\u009b1A\tend')),
      reset(2, 'connection reset'),
      at(2, text('clean')),
    ];
    const chunks = chunksOf(from(events), { tty: true, columns });
    // The fake terminal throws on any control character or sequence it does not expect.
    const { screens } = play(chunks, columns);
    expect(screens[0]).toEqual([prompt, 'Hi[2J[H there1A end']);
    expect(screens.at(-1)).toEqual([prompt, '↺ attempt 2 (connection reset)', 'clean']);
  });

  it('released calls and their results get a line each; results of abandoned attempts are not shown', () => {
    const columns = 80;
    const lookup = keyed(turnId, 2, call('c8', 'lookup_order', { order_id: 'ORD-7781' }));
    const mail = keyed(turnId, 2, call('c9', 'send_email', { to: 'ada@example.com' }));
    const early = keyed(turnId, 1, call('c2', 'lookup_order', { order_id: 'ORD-7781' }));
    const events: ViewEvent[] = [
      early,
      reset(2, 'connection reset'),
      toolResult(early, 'executed'),
      at(2, text('Refund started.')),
      lookup,
      c7,
      mail,
      at(2, finish('tool-calls')),
      toolResult(lookup, 'replayed'),
      toolResult(c7, 'in-progress'),
      toolResult(mail, 'failed', { error: { name: 'Error', message: 'smtp timeout' } }),
    ];
    const { terminal } = play(chunksOf(from(events), { tty: true, columns }), columns);
    expect(terminal.screen).toEqual([
      prompt,
      '↺ attempt 2 (connection reset)',
      'Refund started.',
      `⚙ lookup_order {"order_id":"ORD-7781"} [${lookup.effectKey}]`,
      refundLine,
      `⚙ send_email {"to":"ada@example.com"} [${mail.effectKey}]`,
      '✓ lookup_order',
      '… issue_refund (running elsewhere)',
      '✗ send_email: smtp timeout',
    ]);
  });

  it('a repeat, whose key already ran, prints as already done; its replayed result as done', () => {
    const columns = 100;
    const c9 = repeated(turnId, 2, call('c9', 'issue_refund', helpDesk.refundArgs));
    const events: ViewEvent[] = [
      reset(2, 'connection reset'),
      at(2, text('Refund started.')),
      c7,
      c9,
      at(2, finish('tool-calls')),
      toolResult(c7, 'executed', { result: { refund_id: 're_1' } }),
      toolResult(c9, 'replayed', { result: { refund_id: 're_1' } }),
    ];
    const { terminal } = play(chunksOf(from(events), { tty: true, columns }), columns);
    expect(terminal.screen).toEqual([
      prompt,
      '↺ attempt 2 (connection reset)',
      'Refund started.',
      refundLine,
      `↻ issue_refund {"order_id":"ORD-7781","amount":"full"} [${c9.effectKey}] already done`,
      '✓ issue_refund',
      '✓ issue_refund',
    ]);
  });

  it('a run whose effect may have happened twice prints as done, in doubt, and says why', () => {
    const columns = 100;
    const mail = keyed(turnId, 2, call('c9', 'send_email', { to: 'ada@example.com' }));
    const events: ViewEvent[] = [
      reset(2, 'connection reset'),
      c7,
      mail,
      at(2, finish('tool-calls')),
      toolResult(c7, 'executed', { result: { refund_id: 're_1' }, reclaimed: true }),
      toolResult(mail, 'executed', { result: null, reclaimed: false, leaseLost: true }),
    ];
    const { terminal } = play(chunksOf(from(events), { tty: true, columns }), columns);
    expect(terminal.screen.slice(-2)).toEqual([
      '✓? issue_refund (in doubt: an earlier run was cut off, the effect may have happened twice)',
      '✓? send_email (in doubt: its lease was lost while it ran, the effect may have happened twice)',
    ]);
  });

  it('ignores stragglers of abandoned attempts; an event of a newer attempt without a reset starts over', () => {
    const columns = 40;
    const events: ViewEvent[] = [
      at(1, text('Refunding the dam')),
      at(2, text('Refund started.')),
      at(1, text('aged book')),
      reset(2, 'a late duplicate reset'),
      at(2, usage(120, 8)),
    ];
    const { terminal } = play(chunksOf(from(events), { tty: true, columns }), columns);
    expect(terminal.screen).toEqual([prompt, '↺ attempt 2 (retry)', 'Refund started.']);
  });

  it('ends its last line when the attempt finishes', () => {
    const columns = 40;
    const { terminal } = play(
      chunksOf(from([at(1, text('Done.')), at(1, finish())]), { tty: true, columns }),
      columns,
    );
    expect(terminal.cursor).toEqual({ row: 2, col: 0 });
  });

  it("prints a refusal's message on a line of its own, apart from the answer", () => {
    const refused = { ...finish('content-filter', 'stop'), refusal: 'I cannot help with that.' };
    const chunks = chunksOf(from([at(1, text('Sure')), at(1, refused)]), {});
    expect(chunks.join('').split('\n')).toEqual(['Sure', '⊘ refused: I cannot help with that.', '']);
  });

  it('falls back to 80 columns when the width is unknown or nonsense', () => {
    const long = 'y'.repeat(100);
    for (const columns of [undefined, 0, Number.NaN, -3]) {
      const chunks = chunksOf(from([at(1, text(long)), reset(2, 'x')]), { tty: true, columns });
      // 100 characters on 80 columns: the reset moves up one row.
      expect(chunks[1]).toBe('\r\x1b[1A\x1b[J\x1b[2m↺ attempt 2 (x)\x1b[22m\r\n');
    }
  });
});

describe('the fake terminal', () => {
  it('catches a renderer that only clears the current row', () => {
    const terminal = new FakeTerminal(10);
    terminal.write('x'.repeat(25));
    terminal.write('\r\x1b[K');
    expect(terminal.screen).toEqual(['x'.repeat(10), 'x'.repeat(10)]);
  });

  it('keeps the cursor on the last column after a full row, until the next character', () => {
    const terminal = new FakeTerminal(10);
    terminal.write('x'.repeat(10));
    expect(terminal.cursor).toEqual({ row: 0, col: 9 });
    terminal.write('\r\n');
    expect(terminal.cursor).toEqual({ row: 1, col: 0 });
    expect(() => terminal.write('\x1b[2J')).toThrow(/unsupported erase/);
    expect(() => terminal.write('\x07')).toThrow(/unexpected control character/);
  });
});

describe('toTerminal without a TTY (pipes, files, log tailers)', () => {
  it('prints a marker line on reset and starts over; no escape sequences', () => {
    const chunks = chunksOf(from(helpDesk.turn).pipe(cleanTurn({ turnId })), {});
    const output = chunks.join('');
    expect(output).not.toContain('\x1b');
    expect(output).not.toContain('\r');
    expect(output.split('\n')).toEqual([
      'Checking order ORD-7781. Refunding the dam',
      '↺ attempt 2 (connection reset)',
      attempt2,
      refundLine,
      '',
    ]);
  });

  it('a log reader keeps what follows the last marker: the clean text', () => {
    const output = chunksOf(from(helpDesk.turn).pipe(cleanTurn({ turnId })), {
      tty: false,
      columns: 20,
    }).join('');
    const lastAttempt = output.slice(output.lastIndexOf('↺'));
    expect(lastAttempt.split('\n').slice(1, 2)).toEqual([attempt2]);
  });
});

const waitFacts = { delay: 3000, retryCount: 1, maxRetries: 2, status: 503, failedAttempt: 1 };
const notice = '↺ attempt 2 · retrying in 3 s (HTTP 503), retry 1 of 2';

describe('toTerminal: the wait before the next attempt', () => {
  const events: ViewEvent[] = [
    at(1, text('Refunding the dam')),
    reset(2, 'HTTP 503 Service Unavailable', waitFacts),
    at(2, text('Refund started.')),
  ];

  it('on a TTY the reset line says at once how long the wait is, why, and which retry', () => {
    const columns = 80;
    const chunks = chunksOf(from(events), { tty: true, columns });
    const { screens } = play(chunks, columns);
    expect(screens[1]).toEqual([prompt, notice]);
    expect(screens[2]).toEqual([prompt, notice, 'Refund started.']);
  });

  it('without a TTY the marker line says the same', () => {
    expect(chunksOf(from(events), {}).join('').split('\n')).toEqual([
      'Refunding the dam',
      notice,
      'Refund started.',
    ]);
  });

  it('a reset without facts prints the marker as before', () => {
    const plain: ViewEvent[] = [
      at(1, text('Refunding the dam')),
      reset(2, 'connection reset', { errorName: 'TypeError' }),
    ];
    expect(chunksOf(from(plain), {})).toEqual(['Refunding the dam', '\n↺ attempt 2 (connection reset)\n']);
  });

  it('says "retrying now" for a retry without a wait', () => {
    const now: ViewEvent[] = [at(1, text('x')), reset(2, 'connection reset', { delay: 0, retryCount: 1 })];
    expect(chunksOf(from(now), {}).at(-1)).toBe('\n↺ attempt 2 · retrying now (connection reset), retry 1\n');
  });
});

describe("toTerminal({ onReset: 'mark' }): the abandoned lines stay, marked interrupted", () => {
  const events: ViewEvent[] = [
    at(1, text('Checking order ORD-7781. Refunding the dam')),
    reset(2, 'HTTP 503 Service Unavailable', waitFacts),
    at(2, text('Checking order ORD-7781. ')),
    at(2, text('Refund started.')),
  ];

  it('on a TTY it strikes the abandoned rows through where they are, then says interrupted and the wait', () => {
    const columns = 30;
    const chunks = chunksOf(from(events), { tty: true, columns, onReset: 'mark' });
    const { screens } = play(chunks, columns);
    const abandoned = rows('Checking order ORD-7781. Refunding the dam', columns);
    expect(screens[1]).toEqual([prompt, ...abandoned, '✗ attempt 1 interrupted', ...rows(notice, columns)]);
    expect(screens.at(-1)).toEqual([
      prompt,
      ...abandoned,
      '✗ attempt 1 interrupted',
      ...rows(notice, columns),
      ...rows('Checking order ORD-7781. Refund started.', columns),
    ]);
    // The rows are printed again over themselves, struck through: up one row, strike on, the same text, strike off.
    expect(
      chunks[1]?.startsWith('\r\x1b[1A\x1b[9mChecking order ORD-7781. Refunding the dam\x1b[29m\r\n'),
    ).toBe(true);
    expect(chunks[1]).not.toContain('\x1b[J');
  });

  it('a second reset marks the second attempt, and never touches the first one', () => {
    const columns = 50;
    const twice: ViewEvent[] = [
      at(1, text('Refunding the dam')),
      reset(2, 'connection reset'),
      at(2, text('Refund started')),
      reset(3, 'stalled', { delay: 500 }),
      at(3, text('Refund started.')),
    ];
    const { terminal } = play(chunksOf(from(twice), { tty: true, columns, onReset: 'mark' }), columns);
    expect(terminal.screen).toEqual([
      prompt,
      'Refunding the dam',
      '✗ attempt 1 interrupted',
      '↺ attempt 2 (connection reset)',
      'Refund started',
      '✗ attempt 2 interrupted',
      '↺ attempt 3 · retrying in 0.5 s (stalled)',
      'Refund started.',
    ]);
  });

  it('an attempt that printed nothing has nothing to mark', () => {
    const quiet: ViewEvent[] = [at(1, usage(10, 0)), reset(2, 'stalled'), at(2, text('ok'))];
    expect(chunksOf(from(quiet), { onReset: 'mark' })).toEqual(['↺ attempt 2 (stalled)\n', 'ok']);
  });

  it('without a TTY it prints the interrupted line before the marker; nothing is taken back either way', () => {
    const output = chunksOf(from(events), { onReset: 'mark' }).join('');
    expect(output.split('\n')).toEqual([
      'Checking order ORD-7781. Refunding the dam',
      '✗ attempt 1 interrupted',
      notice,
      'Checking order ORD-7781. Refund started.',
    ]);
  });

  it('refuses a presentation it does not know, with a UsageError', () => {
    // @ts-expect-error not a presentation
    expect(() => toTerminal({ onReset: 'erase' })).toThrow(
      "toTerminal: onReset must be 'rollback' or 'mark', not \"erase\"",
    );
  });
});

standardChecks<ViewEvent>({
  name: 'toTerminal',
  make: () => toTerminal(),
  values: { a: at(1, text('Refund ')), b: at(1, text('started.')), c: at(1, finish()) },
  expected: { a: 'Refund ', b: 'started.', c: '\n' },
});

standardChecks<ViewEvent>({
  name: "toTerminal({ tty: true, onReset: 'mark' })",
  make: () => toTerminal({ tty: true, columns: 80, onReset: 'mark' }),
  values: {
    a: at(1, text('Refunding the dam')),
    b: reset(2, 'connection reset', { delay: 0 }),
    c: at(2, text('Refund')),
  },
  expected: {
    a: 'Refunding the dam',
    b: '\r\x1b[9mRefunding the dam\x1b[29m\r\n\x1b[2m✗ attempt 1 interrupted\x1b[22m\r\n\x1b[2m↺ attempt 2 · retrying now (connection reset)\x1b[22m\r\n',
    c: 'Refund',
  },
});

standardChecks<ViewEvent>({
  name: 'toTerminal (tty)',
  make: () => toTerminal({ tty: true, columns: 80 }),
  values: { a: at(1, text('Refunding the dam')), b: reset(2, 'connection reset'), c: at(2, text('Refund')) },
  expected: {
    a: 'Refunding the dam',
    b: '\r\x1b[J\x1b[2m↺ attempt 2 (connection reset)\x1b[22m\r\n',
    c: 'Refund',
  },
});
