import type { KeyedToolCall, ResetEvent, ToolResultLike } from 'cleanturn';
import { defer, filter, map, type OperatorFunction } from 'rxjs';
import { AttemptTracker } from '../AttemptTracker.js';
import { describeError } from '../errors.js';
import { toolResultStatus } from '../toolResultStatus.js';
import type { RepeatedToolCall, ToolCallEvent } from '../types.js';
import { cellWidth, isControl } from './internal/cells.js';
import { type ResetPresentation, resetPresentation } from './internal/options.js';
import type { ViewEvent } from './reduceView.js';
import { retryMessage } from './retryMessage.js';

/**
 * Options of {@link toTerminal}.
 *
 * @inline
 */
export interface ToTerminalOptions {
  /**
   * `true` for a terminal (`process.stdout.isTTY`): a reset erases what the abandoned attempt printed, with
   * ANSI cursor movement. `false` (the default) for pipes, files and log tailers: plain text, and a reset
   * prints a marker line after which the turn starts over.
   */
  tty?: boolean;
  /**
   * The terminal's width (`process.stdout.columns`), to follow lines the terminal wraps; default 80. Only
   * used with `tty`.
   */
  columns?: number;
  /**
   * What a reset does with the abandoned attempt's lines (`ResetPresentation`): `'rollback'` (the default)
   * erases them on a TTY; `'mark'` keeps them, struck through on a TTY, under a `✗ attempt 1 interrupted` line.
   * Without a TTY nothing is erased either way; `'mark'` adds the interrupted line.
   */
  onReset?: ResetPresentation;
}

/** Select Graphic Rendition: faint on, and back to normal intensity. */
const DIM = '\x1b[2m';
const UNDIM = '\x1b[22m';
/** Select Graphic Rendition: crossed out on, and off. */
const STRIKE = '\x1b[9m';
const UNSTRIKE = '\x1b[29m';
/** What begins each line of the model's reasoning, setting it apart from the answer. */
const THINKING = '│ ';
/** Longest argument JSON shown on a call's line. */
const ARGS_SHOWN = 80;

/**
 * Renders the turn for a terminal or a log: emits the strings to write, and on `reset` takes back what the
 * abandoned attempt printed.
 *
 * With `tty: true` it tracks the cursor's row and column (following the terminal's line wrapping at
 * `columns`), and a reset moves the cursor back to where the turn's output began and erases everything
 * below it (`CR`, `CSI n A`, `CSI J`), then prints a faint `↺ attempt 2 (connection reset)` line; the new
 * attempt writes under it. Without `tty` nothing can be taken back: a reset prints the same marker line,
 * and a reader (person or program) discards what came before it. The reset comes when the attempt failed, before
 * the wait for the next one: when it carries the wait, the count or a status, its line says so at once,
 * `↺ attempt 2 · retrying in 3 s (HTTP 503), retry 1 of 2` (see `retryMessage`).
 *
 * With `onReset: 'mark'` the abandoned lines stay: on a TTY the renderer prints them again over themselves,
 * struck through, and a faint `✗ attempt 1 interrupted` line follows them before the marker line; without a TTY
 * the interrupted line alone. A later reset leaves them alone and marks only the attempt after them. Released tool calls and their results get
 * a line each (a repeat, whose effect already ran under its key, as `↻ … already done`). The model's
 * reasoning is set apart from the answer: it starts on a line of its own, each of its lines begins with `│ `
 * (faint on a TTY), and the answer text after it starts on a new line; a reset takes it back with the rest. Events of abandoned
 * attempts, anything after a finish and results of abandoned calls print nothing. Control characters in model text (escape sequences, carriage returns) are dropped, so the
 * model cannot move the cursor; tabs become spaces.
 *
 * Start it on a fresh line, and do not write to the terminal yourself while it runs: it can only erase
 * what it knows about. Output that scrolled off the top of the screen stays in the scrollback.
 *
 * ```text
 * source:   -A-D-X-B-E-K-F-|
 *           toTerminal({ tty: true, columns: 30 })
 * result:   -a-d-x-b-e-k---|
 *
 * where
 *   A = text "Checking order ORD-7781. ", attempt 1
 *   D = text "Refunding the dam", attempt 1
 *   X = reset to attempt 2 (connection reset)
 *   B = text "Checking order ORD-7781. ", attempt 2
 *   E = text "The book arrived damaged, so I have started a full refund.", attempt 2
 *   K = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 2, key 4d02b5b61ea1afa1
 *   F = finish stop, attempt 2
 *   a = "Checking order ORD-7781. "
 *   d = "Refunding the dam"
 *   x = "\r\u001b[1A\u001b[J\u001b[2m↺ attempt 2 (connection reset)\u001b[22m\r\n"
 *   b = "Checking order ORD-7781. "
 *   e = "The book arrived damaged, so I have started a full refund."
 *   k = "\r\n\u001b[2m⚙ issue_refund {\"order_id\":\"ORD-7781\",\"amount\":\"full\"} [4d02b5b61ea1afa1]\u001b[22m\r\n"
 * ```
 *
 * Every case of `marbles/toTerminal.marbles.ts`, with pictures: `docs/operators/toTerminal.md`.
 *
 * State: the live attempt, and the cursor's row and column relative to where the output began.
 *
 * ## Example
 * ```ts
 * import { cleanTurn } from 'cleanturn';
 * import { toTerminal } from 'cleanturn/renderers';
 *
 * providerEvents$
 *   .pipe(
 *     cleanTurn({ turnId: 'turn-42' }),
 *     toTerminal({ tty: process.stdout.isTTY, columns: process.stdout.columns }),
 *   )
 *   .subscribe((chunk) => process.stdout.write(chunk));
 * ```
 *
 * @see {@link turnView} for UIs that redraw from a snapshot instead.
 * @param options `tty`, `columns` and `onReset`.
 * @returns An operator from the turn (and tool results) to the strings to write.
 * @throws UsageError when `onReset` is neither `'rollback'` nor `'mark'`.
 */
export function toTerminal(options: ToTerminalOptions = {}): OperatorFunction<ViewEvent, string> {
  const onReset = resetPresentation('toTerminal', options);
  const tty = options.tty === true;
  const columns =
    options.columns !== undefined && Number.isFinite(options.columns) && options.columns >= 1
      ? Math.floor(options.columns)
      : 80;
  return function toTerminalOperator(source) {
    return defer(() => {
      const screen = new TerminalScreen(tty, columns, onReset);
      return source.pipe(
        map((event) => screen.render(event)),
        filter((chunk) => chunk !== ''),
      );
    });
  };
}

/** The renderer's picture of the terminal: what it printed since the output began, and where the cursor is. */
class TerminalScreen {
  /** The live attempt, and whether it finished. */
  private readonly attempts = new AttemptTracker();
  /** Rows the cursor moved down since the output began (the part a reset erases). */
  private row = 0;
  /** The cursor's column; `columns` means the row is full and the next character wraps to the next row. */
  private col = 0;
  /** Whether the last thing printed was reasoning: its lines carry the `│ ` mark, and text after it starts a line. */
  private thinking = false;
  /** The attempt whose output is on the screen since the last marker line. */
  private live = 1;
  /** The row where the live attempt's own output began (under its marker line). */
  private attemptRow = 0;
  /**
   * With `mark` on a TTY: what the live attempt printed, as written, to print again struck through on a reset; the
   * cursor's column when it began is 0.
   */
  private shown = '';

  constructor(
    private readonly tty: boolean,
    private readonly columns: number,
    private readonly onReset: ResetPresentation,
  ) {}

  /** The string to write for `event`; empty when it shows nothing. */
  render(event: ViewEvent): string {
    if (event.type === 'tool-result')
      return this.attempts.isLive(event.call.attempt) ? this.keep(this.line(resultLine(event))) : '';
    const step = this.attempts.step(event);
    if (step === 'stale') return '';
    // An event of a newer attempt without a reset before it still starts over.
    const start =
      step === 'newer'
        ? this.startAttempt(
            event.attempt,
            event.type === 'reset' ? event : { type: 'reset', attempt: event.attempt, reason: 'retry' },
          )
        : '';
    return start + this.keep(this.show(event));
  }

  /** `printed`, kept to strike through on a reset when the abandoned attempt's lines stay marked. */
  private keep(printed: string): string {
    if (this.tty && this.onReset === 'mark') this.shown += printed;
    return printed;
  }

  /** The string to write for an event of the live attempt. */
  private show(event: Exclude<ViewEvent, { type: 'tool-result' }>): string {
    switch (event.type) {
      case 'text':
        return event.text === '' ? '' : this.answer() + this.print(event.text);
      case 'reasoning':
        return this.reason(event.text);
      case 'tool-call':
      case 'tool-call-repeat':
        return this.line(callLine(event));
      case 'finish':
        return typeof event.refusal === 'string' ? this.line(`⊘ refused: ${event.refusal}`) : this.endLine();
      default:
        return '';
    }
  }

  /** The end of a reasoning run before answer text: the answer starts on a line of its own. */
  private answer(): string {
    if (!this.thinking) return '';
    this.thinking = false;
    return this.endLine();
  }

  /** Reasoning, set apart: each of its lines starts with `│ `, faint on a TTY; it starts on a line of its own. */
  private reason(text: string): string {
    if (text === '') return '';
    let out = '';
    if (!this.thinking) {
      out += this.endLine();
      this.thinking = true;
    }
    let printed = '';
    text.split('\n').forEach((piece, i) => {
      if (i > 0) printed += this.newline();
      if (piece === '') return;
      if (this.col === 0) printed += this.print(THINKING);
      printed += this.print(piece);
    });
    return out + (this.tty ? DIM + printed + UNDIM : printed);
  }

  /**
   * Takes back the abandoned attempt's output (on a TTY), or marks it interrupted (`mark`), and prints the marker
   * line with the wait.
   */
  private startAttempt(attempt: number, reset: ResetEvent): string {
    const abandoned = this.live;
    this.live = attempt;
    const printedAny = this.row > this.attemptRow || this.col > 0;
    let out: string;
    if (this.onReset === 'mark') {
      out = this.tty ? this.strikeThrough() : this.endLine();
      this.thinking = false;
      if (printedAny) out += this.line(`✗ attempt ${abandoned} interrupted`);
      // What is above stays: a later reset goes back no further than here.
      this.row = 0;
    } else if (this.tty) {
      out = `\r${this.row > 0 ? `\x1b[${this.row}A` : ''}\x1b[J`;
      this.row = 0;
      this.col = 0;
    } else {
      out = this.endLine();
    }
    this.thinking = false;
    out += this.line(markerLine(attempt, reset));
    this.attemptRow = this.row;
    this.shown = '';
    return out;
  }

  /**
   * The live attempt's output printed again over itself, crossed out: the same characters in the same cells, so
   * the cursor ends where it was.
   */
  private strikeThrough(): string {
    if (this.shown === '') return '';
    const up = this.row - this.attemptRow;
    return `\r${up > 0 ? `\x1b[${up}A` : ''}${STRIKE}${this.shown}${UNSTRIKE}${this.endLine()}`;
  }

  /** `text` on a line of its own, faint on a TTY. */
  private line(text: string): string {
    this.thinking = false;
    const start = this.endLine();
    const printed = this.print(text);
    return start + (this.tty ? DIM + printed + UNDIM : printed) + this.newline();
  }

  /** A newline if the cursor is not at the start of a row. */
  private endLine(): string {
    return this.col > 0 ? this.newline() : '';
  }

  private newline(): string {
    this.row++;
    this.col = 0;
    // A terminal in raw mode does not turn LF into CR LF; write both.
    return this.tty ? '\r\n' : '\n';
  }

  /** Model text made safe to write, with the cursor followed through the terminal's wrapping. */
  private print(text: string): string {
    let out = '';
    for (const char of text) {
      if (char === '\n') {
        out += this.newline();
        continue;
      }
      if (char === '\t') {
        const spaces = 8 - (Math.min(this.col, this.columns - 1) % 8);
        for (let i = 0; i < spaces; i++) out += this.put(' ', 1);
        continue;
      }
      const code = char.codePointAt(0) ?? 0;
      if (isControl(code)) continue;
      out += this.put(char, cellWidth(char));
    }
    return out;
  }

  /** One printable character of `width` columns. */
  private put(char: string, width: 0 | 1 | 2): string {
    // The terminal wraps before a character that does not fit in the row (a full row, or a wide character
    // in the last column).
    if (width > 0 && this.col + width > this.columns) {
      this.row++;
      this.col = 0;
    }
    this.col += width;
    return char;
  }
}

/**
 * The line that starts an attempt: `↺ attempt 2 (connection reset)`, or with the wait, the count or a status,
 * `↺ attempt 2 · retrying in 3 s (HTTP 503), retry 1 of 2`.
 */
function markerLine(attempt: number, reset: ResetEvent): string {
  const known = (value: unknown) => typeof value === 'number' && Number.isFinite(value);
  return known(reset.delay) || known(reset.retryCount) || known(reset.status)
    ? `↺ attempt ${attempt} · ${retryMessage(reset)}`
    : `↺ attempt ${attempt} (${reset.reason})`;
}

/** A released call's line: name, arguments (shortened) and effect key. */
function callLine(
  call: (ToolCallEvent | RepeatedToolCall) & Partial<Pick<KeyedToolCall, 'effectKey'>>,
): string {
  let args: string;
  try {
    args = JSON.stringify(call.args) ?? String(call.args);
  } catch {
    args = String(call.args);
  }
  if (args.length > ARGS_SHOWN) args = `${args.slice(0, ARGS_SHOWN - 1)}…`;
  const key = call.effectKey === undefined ? '' : ` [${call.effectKey}]`;
  // A repeat's effect already ran under the same key: it is answered with the recorded result.
  return call.type === 'tool-call-repeat'
    ? `↻ ${call.name} ${args}${key} already done`
    : `⚙ ${call.name} ${args}${key}`;
}

/** Why a run's effect is in doubt, in words. */
const doubtReason = {
  reclaimed: 'an earlier run was cut off',
  'lease-lost': 'its lease was lost while it ran',
} as const;

/** A tool result's line. */
function resultLine(result: ToolResultLike): string {
  const { status, inDoubt } = toolResultStatus(result);
  switch (status) {
    case 'completed':
      if (inDoubt === undefined) return `✓ ${result.call.name}`;
      return `✓? ${result.call.name} (in doubt: ${doubtReason[inDoubt]}, the effect may have happened twice)`;
    case 'running':
      return `… ${result.call.name} (running elsewhere)`;
    case 'failed':
      return `✗ ${result.call.name}: ${describeError(result.error)}`;
  }
}
