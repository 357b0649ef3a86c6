// Parses marble diagrams as RxJS `TestScheduler.run()` does (run mode: one frame per character, spaces
// ignored, `10ms ` time progressions), keeping what a picture needs: the letter of each event and its frame.
// test/docs.test.ts checks the result against `TestScheduler.parseMarbles` for every diagram in marbles/.

/** One notification of a diagram. */
export interface MarbleEvent {
  /** The frame it happens in (a group's events share the frame of its `(`). */
  frame: number;
  kind: 'next' | 'error' | 'complete';
  /** The character that stands for it: a letter, `#` or `|`. */
  symbol: string;
  /** How many events came before it in the same frame (0 unless in a group). */
  slot: number;
}

/** A parsed value diagram. */
export interface ParsedMarbles {
  events: MarbleEvent[];
  /** The frame after the last character: how far the diagram reaches in time. */
  frames: number;
}

/** A parsed subscription diagram (`^` subscribes, `!` unsubscribes); `Infinity` where a mark is missing. */
export interface ParsedSubscription {
  subscribed: number;
  unsubscribed: number;
}

const timeProgression = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m) /;
const msPerUnit: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000 };

/** The frames a time progression such as `10ms ` at `chars[i]` advances by, and the characters it spans. */
function progression(chars: readonly string[], i: number): { frames: number; length: number } | undefined {
  if (i !== 0 && chars[i - 1] !== ' ') return undefined;
  const match = timeProgression.exec(chars.slice(i).join(''));
  if (match === null) return undefined;
  return {
    frames: Number.parseFloat(match[1] ?? '0') * (msPerUnit[match[2] ?? 'ms'] ?? 1),
    length: match[0].length,
  };
}

/**
 * Parses a value diagram: letters are `next` notifications, `#` an error, `|` completion, `(`…`)` a group
 * that happens in the frame of its `(`. Every character takes one frame, parentheses included.
 */
export function parseMarbles(diagram: string): ParsedMarbles {
  if (diagram.includes('!')) throw new Error(`a value diagram cannot unsubscribe ("!"): ${diagram}`);
  const chars = [...diagram];
  const events: MarbleEvent[] = [];
  const caret = diagram.replace(/^ +/, '').indexOf('^');
  let frame = caret === -1 ? 0 : -caret;
  let groupStart = -1;
  const push = (kind: MarbleEvent['kind'], symbol: string): void => {
    const at = groupStart > -1 ? groupStart : frame;
    const slot = events.filter((e) => e.frame === at).length;
    events.push({ frame: at, kind, symbol, slot });
  };
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    switch (c) {
      case ' ':
        break;
      case '-':
      case '^':
        frame += 1;
        break;
      case '(':
        groupStart = frame;
        frame += 1;
        break;
      case ')':
        groupStart = -1;
        frame += 1;
        break;
      case '|':
        push('complete', c);
        frame += 1;
        break;
      case '#':
        push('error', c);
        frame += 1;
        break;
      default: {
        const time = /[0-9]/.test(c) ? progression(chars, i) : undefined;
        if (time !== undefined) {
          i += time.length - 1;
          frame += time.frames;
        } else {
          push('next', c);
          frame += 1;
        }
      }
    }
  }
  return { events, frames: frame };
}

/** Parses a subscription diagram such as `'^--!'` or an unsubscribe marble such as `'---!'`. */
export function parseSubscription(diagram: string | undefined): ParsedSubscription {
  if (diagram === undefined) return { subscribed: Infinity, unsubscribed: Infinity };
  const chars = [...diagram];
  let subscribed = Infinity;
  let unsubscribed = Infinity;
  let frame = 0;
  let groupStart = -1;
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    switch (c) {
      case ' ':
        break;
      case '-':
        frame += 1;
        break;
      case '(':
        groupStart = frame;
        frame += 1;
        break;
      case ')':
        groupStart = -1;
        frame += 1;
        break;
      case '^':
        if (subscribed !== Infinity) throw new Error(`two subscription points "^" in ${diagram}`);
        subscribed = groupStart > -1 ? groupStart : frame;
        frame += 1;
        break;
      case '!':
        if (unsubscribed !== Infinity) throw new Error(`two unsubscription points "!" in ${diagram}`);
        unsubscribed = groupStart > -1 ? groupStart : frame;
        break;
      default: {
        const time = /[0-9]/.test(c) ? progression(chars, i) : undefined;
        if (time === undefined) throw new Error(`a subscription diagram has only "^" and "!": ${diagram}`);
        i += time.length - 1;
        frame += time.frames;
      }
    }
  }
  return { subscribed, unsubscribed: unsubscribed < 0 ? Infinity : unsubscribed };
}
