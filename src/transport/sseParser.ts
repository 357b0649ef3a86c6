// The SSE parsing rules of every transport (fromSSE over fetch, httpClientSSE over Angular's HttpClient), written
// once: text in, messages out, nothing of HTTP. Internal: not exported from the entry point.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { checkOption } from '../internal/options.js';
import { sseLimitError, type TransportError } from './errors.js';

/** One server-sent event. */
export interface SseMessage {
  /** The `event:` name, when the server sent one. Raw JSON that arrived outside SSE framing has `raw`. */
  event?: string | undefined;
  /** The `data:` payload (several `data:` lines joined with `\n`). */
  data: string;
  /** The `id:` field, when the server sent one. */
  id?: string | undefined;
}

/** The default `maxBufferSize` of the transports: 16 MiB of text (room for an event that carries a whole base64 image). */
export const DEFAULT_MAX_BUFFER_SIZE = 16 * 1024 * 1024;

/**
 * The `maxBufferSize` an operator uses: the default when none is given; a size that is not > 0 is refused with a
 * `UsageError` that names the operator.
 */
export function resolveMaxBufferSize(operator: string, maxBufferSize: number | undefined): number {
  const size = maxBufferSize ?? DEFAULT_MAX_BUFFER_SIZE;
  checkOption(size > 0, operator, 'maxBufferSize', 'a number > 0', size);
  return size;
}

/**
 * A decoder of one SSE response's text, pushed in pieces as they arrive.
 *
 * - Parsing uses eventsource-parser: any line ending (LF, CRLF, CR), multi-line data, comments, a line split
 *   across pieces.
 * - Memory is bounded by `maxBufferSize`: an unfinished line plus the unfinished event's data and, separately, the
 *   unframed text since the last event; past it `feed` or `end` throws a non-retryable `TransportError` `sse-limit-*`.
 * - At the end, a JSON document sent without SSE framing after the last event (as Gemini does for a late error) is
 *   emitted as one message with `event: 'raw'`; unframed lines before it (a keep-alive) and other unframed text
 *   are ignored.
 * - An event cut off by the end (no blank line after it) is not emitted.
 */
export interface SseDecoder {
  /** Parses the next piece of the text, emitting the messages it completes. Throws a `TransportError` `sse-limit-*`. */
  feed(text: string): void;
  /** The text ended: emits the raw JSON tail, if any, and forgets the rest. Throws a `TransportError` `sse-limit-*`. */
  end(): void;
  /** Drops what is buffered (the consumer went away). */
  clear(): void;
}

/**
 * A decoder that hands each message to `onMessage`.
 *
 * @param onMessage Receives each message, in order.
 * @param maxBufferSize The most text held at once, in characters (UTF-16 code units).
 * @param asParsed Hand over the parser's own message objects (an `id` it did not see is an own property set to
 *   `undefined`) rather than a copy without it: for a consumer that reads `data` only and keeps no message.
 */
export function createSseDecoder(
  onMessage: (message: SseMessage) => void,
  maxBufferSize: number = DEFAULT_MAX_BUFFER_SIZE,
  asParsed = false,
): SseDecoder {
  // Unframed lines since the last event (a raw JSON error tail), and their length in characters.
  let rawLines: string[] = [];
  let rawSize = 0;
  // The limit passed, as the parser's callbacks found it; feed and end throw it.
  let failure: TransportError | undefined;
  // Whether the text fed last ended with a CR, which the parser holds until it knows whether an LF follows.
  let endsWithCR = false;

  const clear = () => {
    rawLines = [];
    rawSize = 0;
  };
  const parser = createParser({
    maxBufferSize,
    onEvent(event: EventSourceMessage) {
      if (rawSize !== 0) clear();
      onMessage(asParsed || event.id !== undefined ? event : { event: event.event, data: event.data });
    },
    onError(error) {
      if (error.type === 'max-buffer-size-exceeded') {
        failure ??= sseLimitError(maxBufferSize, 'event');
      } else if (error.type === 'unknown-field' && error.line !== undefined && failure === undefined) {
        rawSize += error.line.length + 1;
        if (rawSize > maxBufferSize) {
          clear();
          failure = sseLimitError(maxBufferSize, 'unframed');
        } else {
          rawLines.push(error.line);
        }
      }
    },
  });

  return {
    feed(text) {
      if (failure !== undefined) throw failure;
      if (text === '') return;
      endsWithCR = text.charCodeAt(text.length - 1) === CR;
      parser.feed(text);
      if (failure !== undefined) throw failure;
    },
    end() {
      if (failure !== undefined) throw failure;
      // A final CR ends its line (it may be the blank line that dispatches the last event): an LF after it is the
      // same line ending, never one more blank line.
      if (endsWithCR) parser.feed('\n');
      endsWithCR = false;
      parser.reset({ consume: true }); // an unframed last line without a line ending
      if (failure !== undefined) throw failure;
      const raw = rawJson(rawLines);
      clear();
      if (raw !== undefined) onMessage({ event: 'raw', data: raw });
    },
    clear,
  };
}

const CR = 13;

/**
 * The JSON document among the unframed lines after the last event, if any: all of them, or, when something
 * else came first (a keep-alive line), the lines from one that opens an object or array on. A few starts are
 * tried, not every line, so that a hostile tail costs little.
 */
function rawJson(lines: readonly string[]): string | undefined {
  if (lines.length === 0) return undefined;
  const whole = lines.join('\n').trim();
  if (whole !== '' && isJson(whole)) return whole;
  let tries = 0;
  for (let i = 1; i < lines.length && tries < 8; i++) {
    const first = (lines[i] as string).trimStart();
    if (first[0] !== '{' && first[0] !== '[') continue;
    tries++;
    const text = lines.slice(i).join('\n').trim();
    if (isJson(text)) return text;
  }
  return undefined;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
