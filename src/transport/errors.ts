import { CleanturnError, describeError, isRetryableUpstream } from 'cleanturn';
import { oneLine, readProperty } from '../internal/describeError.js';
import type { ReplayBasis, ReplaySafety, ReplayVerdict } from './replaySafety.js';

/**
 * The server answered with a status other than 2xx. Its message is one line: the status, its text, then what the
 * provider said (its error message, with its code) or else the start of the body, e.g. `HTTP 401 Unauthorized:
 * Incorrect API key provided: sk-wrong… (invalid_api_key)`. Whether it is retryable is the answer of the table the
 * provider adapters use (`isRetryableUpstream` in `cleanturn`): a provider error code in the JSON body decides
 * first (a 429 for `insufficient_quota` is final), then the status: 408, 409, 429 and 5xx yes; other 4xx
 * (400, 401, 403, 404…), which a new attempt would only repeat, no.
 */
export class HttpStatusError extends CleanturnError {
  /** The HTTP status. */
  readonly status: number;
  /**
   * How long the server asked the client to wait, in milliseconds: `retry-after-ms` (OpenAI) when present, else
   * `retry-after` (seconds or an HTTP date).
   */
  readonly retryAfterMs: number | undefined;
  /** The start of the response body (up to 4 KiB; the rest is not read), for logs. */
  readonly body: string;

  constructor(status: number, statusText: string, body: string, retryAfterMs: number | undefined) {
    super(statusMessage(status, statusText, body), {
      retryable: isRetryableUpstream({
        codes: bodyCodes(body),
        status,
        // Below 400 (a redirect not followed) the status rule answers no: only a code in the body could say yes.
        otherwise: false,
      }),
    });
    this.status = status;
    this.retryAfterMs = retryAfterMs;
    this.body = body;
  }
}

/** The connection failed or broke mid-stream (refused, reset, closed by a proxy). Retryable. */
export class ConnectionError extends CleanturnError {
  constructor(message: string, cause: unknown) {
    super(message, { retryable: true, cause });
  }
}

/** No byte of the response arrived for the stall timeout; the attempt was aborted. Retryable. */
export class StallError extends CleanturnError {
  /** The timeout that expired, in milliseconds. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`no data for ${timeoutMs} ms: the stream stalled`, { retryable: true });
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The turn was stopped on purpose: the `signal` of `streamTurn` aborted (a user pressed stop), or a `turnServer`
 * was asked to stop it. The live attempt's request was aborted, a pending retry wait cancelled and a background
 * response cancelled. Not retryable: nothing failed, and a stop is never retried.
 */
export class TurnStoppedError extends CleanturnError {
  /** Why it was stopped: the signal's `reason` (a `DOMException` named `AbortError` for a bare `abort()`). */
  readonly reason: unknown;

  constructor(reason: unknown) {
    super(`the turn was stopped${stopReasonText(reason)}`, { retryable: false });
    this.reason = reason;
  }
}

/** `: <why>` for a stop with a reason of its own; nothing for a bare `abort()`. */
function stopReasonText(reason: unknown): string {
  if (reason === undefined) return '';
  if (typeof reason === 'object' && reason !== null && readProperty(reason, 'name') === 'AbortError')
    return '';
  // One line, and short: a reason may come from a request body.
  return `: ${oneLine(describeError(reason), 300)}`;
}

/**
 * One attempt took longer than `timeout.attemptMs` of `streamTurn`, however steadily it sent bytes (a server that
 * sends only comments or keep-alive events); the attempt was aborted. Retryable, as a stall is.
 */
export class AttemptTimeoutError extends CleanturnError {
  /** The timeout that expired, in milliseconds. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`the attempt did not end within ${timeoutMs} ms`, { retryable: true });
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The turn (every attempt and every wait between them) took longer than `timeout.totalMs` of `streamTurn`; the live
 * attempt was aborted, or the wait cancelled. Not retryable: the turn's time is up.
 */
export class TurnTimeoutError extends CleanturnError {
  /** The timeout that expired, in milliseconds. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`the turn did not end within ${timeoutMs} ms`, { retryable: false });
    this.timeoutMs = timeoutMs;
  }
}

/** An SSE `data` payload that should be JSON is not. Retryable: a garbled or cut payload. */
export class SseDataError extends CleanturnError {
  /** The payload as received. */
  readonly data: string;

  constructor(data: string, cause: unknown) {
    super(`SSE data is not JSON: ${JSON.stringify(data.slice(0, 80))}`, { retryable: true, cause });
    this.data = data;
  }
}

/**
 * Buffered SSE text passed `maxBufferSize` (see `fromSSE`): a line that never ends, an event whose closing blank
 * line never comes, or text outside SSE framing (an HTML page) that goes on and on. Not retryable: the same request
 * would get the same answer, and reading on would only use more memory. The request is aborted.
 */
export class SseLimitError extends CleanturnError {
  /** The limit that was passed, in characters. */
  readonly limit: number;
  /** What grew too long: an SSE line or event, or text outside SSE framing. */
  readonly kind: 'event' | 'unframed';

  constructor(limit: number, kind: 'event' | 'unframed') {
    super(
      kind === 'event'
        ? `an SSE line or event passed maxBufferSize (${limit} characters) without ending`
        : `text outside SSE framing passed maxBufferSize (${limit} characters)`,
      { retryable: false },
    );
    this.limit = limit;
    this.kind = kind;
  }
}

/**
 * An SSE field to be written holds what would end its line (CR or LF) or what a reader drops the field for (NUL), so
 * the event would read as other events or lose its id (see `toSSE`): an `id` or `event` with either, or `data` with
 * a NUL (line breaks in `data` are written as data lines of the same event). Not retryable: nothing was written.
 */
export class SseFieldError extends CleanturnError {
  /** The field at fault. */
  readonly field: 'id' | 'event' | 'data';

  constructor(field: 'id' | 'event' | 'data') {
    super(
      field === 'data'
        ? 'an SSE data field cannot hold a NUL character'
        : `an SSE ${field} field cannot hold CR, LF or NUL: it would end the line, and let the value write events`,
      { retryable: false },
    );
    this.field = field;
  }
}

/**
 * A 2xx response that is not an event stream: a content type other than `text/event-stream` (a captive portal's
 * HTML page, a JSON answer to a request that forgot to ask for streaming), or no body at all (a 204). Not
 * retryable: the same request would get the same answer.
 */
export class NotEventStreamError extends CleanturnError {
  /** The HTTP status. */
  readonly status: number;
  /** The `content-type` header, when the server sent one. */
  readonly contentType: string | undefined;
  /** The start of the response body (up to 4 KiB; the rest is not read), for logs. */
  readonly body: string;

  /**
   * @param status The HTTP status.
   * @param contentType The `content-type` header, if any.
   * @param body The start of the body, or `undefined` when the response has none.
   */
  constructor(status: number, contentType: string | undefined, body: string | undefined) {
    const got =
      body === undefined
        ? `HTTP ${status} without a body`
        : `HTTP ${status} with ${contentType === undefined ? 'no content type' : `content type ${contentType}`}`;
    super(
      `expected an event stream (text/event-stream), got ${got}${body ? `: ${body.slice(0, 200)}` : ''}`,
      {
        retryable: false,
      },
    );
    this.status = status;
    this.contentType = contentType;
    this.body = body ?? '';
  }
}

/**
 * The events of one HttpClient request started over after some of its response's events had been emitted (see
 * `httpClientSSE`), so that reading on would splice two responses into one stream:
 * - `resent`: a second `Sent` or `ResponseHeader` event: the request was sent again, as an interceptor's `retry()`
 *   does, and a new response began;
 * - `rewritten`: the text stopped continuing what was read: a progress event's text shorter than it or different
 *   where it was read, or a final body that is not the progress events' text.
 *
 * Retryable: the first response was abandoned, and a new attempt (after a `reset`) starts the turn over cleanly.
 */
export class ResponseRestartError extends CleanturnError {
  /** What showed that the response started over. */
  readonly kind: 'resent' | 'rewritten';
  /** How many characters of the abandoned response's text had been read. */
  readonly read: number;

  /**
   * @param kind What showed that the response started over.
   * @param read How many characters of the abandoned response's text had been read.
   */
  constructor(kind: 'resent' | 'rewritten', read: number) {
    super(
      kind === 'resent'
        ? `the request was sent again after ${read} characters of its response were read (an interceptor's retry?): its new response would be spliced onto the abandoned one`
        : `the response's text no longer continues the ${read} characters already read: reading on would splice two texts`,
      { retryable: true },
    );
    this.kind = kind;
    this.read = read;
  }
}

/**
 * Why a cut response could not be resumed, or its stream cannot be trusted (see `resumeResponse`):
 * - `not-found`: the server does not know the response (a 404: it was not created in background mode, or another
 *   key or project made it);
 * - `expired`: the server will not stream it any more (another status that `isRetryableUpstream`'s table calls
 *   final; a 401 or 403 ends the attempt as it is);
 * - `gap`: a connection skipped sequence numbers: events were lost, on a resumed stream or on the create request's
 *   own;
 * - `unverifiable`: an event came without a `sequence_number` (a proxy that re-serialises the events), so nothing
 *   proves where it belongs: a resumed stream might be replaying from the start;
 * - `repeated`: resumes in a row (`maxResumes`) delivered no new event;
 * - `diverged`: a response read again from its start for a takeover (`resumeFrom`) does not begin with what the lost
 *   runner delivered of it: it is not the same generation.
 */
export type ResumeFailure = 'not-found' | 'expired' | 'gap' | 'unverifiable' | 'repeated' | 'diverged';

/**
 * A cut response could not be resumed, or its stream proved nothing of its continuity, so the attempt fails:
 * retryable, so that an ordinary retry (a new generation, after a `reset`) takes over, with this error's message as
 * the retry's reason. One case is not retryable: `unverifiable` on the create request's own stream, whose events
 * come without sequence numbers from the start (a proxy strips them, or the request is not a Responses stream in
 * background mode), which a new attempt would meet again.
 */
export class ResumeError extends CleanturnError {
  /** Why the resume was impossible, or the stream untrustworthy. */
  readonly failure: ResumeFailure;
  /** The response that was being read; `''` when no event had named it yet. */
  readonly responseId: string;
  /** The last sequence number that arrived before the failure; -1 when none had. */
  readonly after: number;
  /** Whether it happened on a resumed connection; false for a `gap` or `unverifiable` of the create stream. */
  readonly resumed: boolean;

  /**
   * @param failure Why the resume was impossible, or the stream untrustworthy.
   * @param responseId The response's id (`''` when not known yet).
   * @param after The last sequence number that arrived (-1 when none had).
   * @param detail What was seen: the next sequence number after a `gap`, the resume count of `repeated`, and
   *   `resumed: false` for a failure of the create stream (default true).
   * @param cause The error of the resume request, when there was one.
   */
  constructor(
    failure: ResumeFailure,
    responseId: string,
    after: number,
    detail: { next?: number; resumes?: number; resumed?: boolean } = {},
    cause?: unknown,
  ) {
    const resumed = detail.resumed ?? true;
    const why =
      failure === 'not-found'
        ? 'the server does not know it'
        : failure === 'expired'
          ? 'the server no longer streams it'
          : failure === 'gap'
            ? `events ${after + 1} to ${(detail.next ?? after + 2) - 1} are missing`
            : failure === 'unverifiable'
              ? 'an event without a sequence_number cannot be placed in the response (a proxy that re-serialises the events?)'
              : failure === 'diverged'
                ? `read again from its start, it differs from what was delivered at fragment ${(detail.next ?? 0) + 1}`
                : `${detail.resumes ?? 0} resumes in a row delivered nothing`;
    const from = cause === undefined ? '' : ` (${describeError(cause)})`;
    const response = responseId === '' ? 'a response not named yet' : `response ${responseId}`;
    const where = after < 0 ? 'at its start' : `after event ${after}`;
    const what = resumed
      ? `cannot resume ${response} ${where}`
      : `cannot trust the stream of ${response} ${where}`;
    super(`${what}: ${why}${from}`, {
      retryable: resumed || failure !== 'unverifiable',
      cause,
    });
    this.failure = failure;
    this.responseId = responseId;
    this.after = after;
    this.resumed = resumed;
  }
}

/**
 * A failed attempt was not retried because sending its request again may repeat what the first one did on the
 * server (see `replaySafety`): a Responses request bound to a `conversation` that may have run appends its input and
 * output again. `streamTurn` ends the turn with it, without a `reset`, unless its `replay` callback approves the
 * replay; an `unknown` replay ends the turn this way only when that callback declines it. Not retryable. The
 * request itself is not kept (its headers hold credentials): `attempt`, `safety`, `basis` and the message say what
 * was refused, and `cause` is the attempt's own failure.
 */
export class UnsafeReplayError extends CleanturnError {
  /** A stable code to switch on: always `UNSAFE_REPLAY`. */
  readonly code = 'UNSAFE_REPLAY' as const;
  /** How safe the refused replay was: `unsafe`, or `unknown` when the `replay` callback declined it. */
  readonly safety: Exclude<ReplaySafety, 'safe'>;
  /** The rule that decided (`stateful`, `unreadable`). */
  readonly basis: ReplayBasis;
  /** The attempt that failed and was not sent again (1 for the first). */
  readonly attempt: number;

  /**
   * @param attempt The attempt that failed.
   * @param verdict What `replaySafety` found: its safety (`unsafe` or `unknown`), basis and reason.
   * @param cause What failed the attempt.
   */
  constructor(attempt: number, verdict: ReplayVerdict, cause: unknown) {
    super(
      `attempt ${attempt} failed and was not sent again (a ${verdict.safety} replay): ${verdict.reason}`,
      { retryable: false, cause },
    );
    this.safety = verdict.safety === 'safe' ? 'unknown' : verdict.safety;
    this.basis = verdict.basis;
    this.attempt = attempt;
  }
}

/** Response headers as fetch's `Headers` and Angular's `HttpHeaders` give them. */
export interface HttpHeadersLike {
  /** The header's value, or `null` when the response has none; the name is case-insensitive. */
  get(name: string): string | null;
}

/**
 * How long a response asks the client to wait, in milliseconds: `retry-after-ms` (OpenAI sends it, in
 * milliseconds) when it is readable, else `retry-after`. Undefined when neither is present or readable.
 *
 * @param headers The response's headers: fetch's `Headers`, Angular's `HttpHeaders`, anything with that `get`.
 */
export function retryAfterOf(headers: HttpHeadersLike, now: number = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null) {
    const trimmed = ms.trim();
    if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed));
  }
  return parseRetryAfter(headers.get('retry-after'), now);
}

/**
 * Parses a `retry-after` header: delay-seconds or an HTTP date. Returns milliseconds, or undefined when absent
 * or unreadable.
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** How many characters of the provider's message (or of a body without one) an {@link HttpStatusError} shows. */
const STATUS_MESSAGE_SIZE = 300;

/**
 * The message of an {@link HttpStatusError}, on one line: `HTTP <status> <status text>`, then the provider's own
 * message with its most specific code in parentheses (`error.message` of OpenAI, Anthropic and Google, an `error`
 * that is a string, a top-level `message` as vLLM sends it), or else the start of the body (an HTML page of a proxy).
 */
function statusMessage(status: number, statusText: string, body: string): string {
  const head = `HTTP ${status}${statusText ? ` ${oneLine(statusText, 80)}` : ''}`;
  const said = providerMessage(body);
  if (said === undefined) {
    const start = oneLine(body, STATUS_MESSAGE_SIZE);
    return start === '' ? head : `${head}: ${start}`;
  }
  const message = oneLine(said, STATUS_MESSAGE_SIZE);
  const code = bodyCodes(body).find((c): c is string => typeof c === 'string' && c.trim() !== '');
  return code === undefined || message.includes(code)
    ? `${head}: ${message}`
    : `${head}: ${message} (${oneLine(code, 80)})`;
}

/** The provider's own message in a JSON error body, or undefined when it has none (or is not JSON, or was cut). */
function providerMessage(body: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { error, message } = parsed as { error?: unknown; message?: unknown };
  const inner =
    typeof error === 'object' && error !== null ? (error as { message?: unknown }).message : error;
  for (const candidate of [inner, message])
    if (typeof candidate === 'string' && candidate.trim() !== '') return candidate;
  return undefined;
}

/**
 * The provider error codes of a JSON error body, most specific first: `error.code`, `error.type`,
 * `error.status` (OpenAI, Anthropic, Google), then the top-level `code` and `type`. None for a body that is not
 * JSON or was cut.
 */
function bodyCodes(body: string): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [];
  }
  if (typeof parsed !== 'object' || parsed === null) return [];
  const { error, code, type } = parsed as { error?: unknown; code?: unknown; type?: unknown };
  const inner = typeof error === 'object' && error !== null ? (error as Record<string, unknown>) : {};
  return [inner.code, inner.type, inner.status, code, type];
}

/**
 * The reason a run's signal aborts with when its turn server hands the turn over (`close({ handOver })`) or finds
 * it taken over: `streamTurn` then leaves a background response generating instead of cancelling it, for the
 * runner that goes on with it. Internal to the transport entry point.
 */
export const HANDED_OVER: Error = new Error('the turn was handed over to another runner');
