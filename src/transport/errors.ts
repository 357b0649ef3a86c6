import { CleanturnError, describeError } from '../errors.js';
import { oneLine, readProperty } from '../internal/describeError.js';
import { isRetryableUpstream } from '../upstreamErrors.js';
import type { ReplayBasis, ReplaySafety, ReplayVerdict } from './replaySafety.js';

/**
 * The cases of a {@link TransportError}:
 *
 * | code | the case | retryable |
 * |---|---|---|
 * | `http-status` | the server answered with a status other than 2xx (`status`, `retryAfterMs`, `body`) | by the provider's code, else the status: 408, 409, 429, 5xx yes |
 * | `connection` | the connection failed or broke mid-stream (refused, reset, closed by a proxy) | yes |
 * | `stall` | no byte of the response arrived for the stall timeout (`timeoutMs`) | yes |
 * | `turn-stopped` | the turn was stopped on purpose: a signal, or `stopTurn` (`stopReason`) | no |
 * | `attempt-timeout` | one attempt outlasted `timeout.attemptMs` of `streamTurn` (`timeoutMs`) | yes |
 * | `turn-timeout` | the turn outlasted `timeout.totalMs` of `streamTurn` (`timeoutMs`) | no |
 * | `sse-data` | an SSE `data` payload that should be JSON is not (`data`) | yes |
 * | `sse-limit-event` | an SSE line or event passed `maxBufferSize` without ending (`limit`) | no |
 * | `sse-limit-unframed` | text outside SSE framing passed `maxBufferSize` (`limit`) | no |
 * | `sse-field` | an SSE field to be written holds CR, LF or NUL (`field`) | no |
 * | `not-event-stream` | a 2xx response that is not `text/event-stream`, or has no body (`status`, `contentType`, `body`) | no |
 * | `response-resent` | an HttpClient request was sent again after some of its response was read (`read`) | yes |
 * | `response-rewritten` | an HttpClient response's text stopped continuing what was read (`read`) | yes |
 * | `resume-not-found` | the server does not know the response to resume (`responseId`, `after`, `resumed`) | yes |
 * | `resume-expired` | the server no longer streams the response (`responseId`, `after`, `resumed`) | yes |
 * | `resume-gap` | a connection skipped sequence numbers (`responseId`, `after`, `resumed`) | yes |
 * | `resume-unverifiable` | an event came without a `sequence_number` (`responseId`, `after`, `resumed`) | yes, but no on the create request's own stream |
 * | `resume-repeated` | resumes in a row (`maxResumes`) delivered nothing new (`responseId`, `after`, `resumed`) | yes |
 * | `resume-diverged` | a response read again from its start differs from what was delivered (`responseId`, `after`, `resumed`) | yes |
 * | `unsafe-replay` | a failed attempt was not sent again: its replay may repeat what it did (`attempt`, `safety`, `basis`) | no |
 * | `turn-id-not-a-string` | a turn id that is not a string (`length`, `limit`) | no |
 * | `turn-id-empty` | an empty turn id (`length`, `limit`) | no |
 * | `turn-id-too-long` | a turn id longer than 256 UTF-16 code units (`length`, `limit`) | no |
 * | `turn-id-not-well-formed` | a turn id with a lone surrogate (`length`, `limit`) | no |
 * | `turn-not-found` | the turn log does not know the turn: never started, or expired (`turnId`) | no |
 * | `turn-trimmed` | the turn log no longer has the entries asked for (`turnId`) | no |
 * | `turn-ahead` | a reader asks to read after an entry the running turn never had (`turnId`) | no |
 * | `turn-taken-over` | this runner's lease lapsed and another runner took the turn over (`turnId`) | no |
 * | `last-event-id` | a `Last-Event-ID` names the turn at a position no message had (`turnId`, `lastEventId`) | no |
 * | `remote-turn` | a served turn failed on the server (`remoteName`, `remoteCode`) | the server's answer |
 * | `runner-lost` | a turn's runner was lost past the takeover bounds (`turnId`, `takeovers`) | yes |
 * | `server-closed` | the `turnServer` running the turn closed (without `handOver`) before the turn ended (`turnId`) | yes |
 * | `turn-log-timeout` | Redis did not answer the turn log in time (`operation`, `timeoutMs`, `tries`) | yes |
 *
 * @inline
 */
export type TransportErrorCode =
  | 'http-status'
  | 'connection'
  | 'stall'
  | 'turn-stopped'
  | 'attempt-timeout'
  | 'turn-timeout'
  | 'sse-data'
  | 'sse-limit-event'
  | 'sse-limit-unframed'
  | 'sse-field'
  | 'not-event-stream'
  | 'response-resent'
  | 'response-rewritten'
  | 'resume-not-found'
  | 'resume-expired'
  | 'resume-gap'
  | 'resume-unverifiable'
  | 'resume-repeated'
  | 'resume-diverged'
  | 'unsafe-replay'
  | 'turn-id-not-a-string'
  | 'turn-id-empty'
  | 'turn-id-too-long'
  | 'turn-id-not-well-formed'
  | 'turn-not-found'
  | 'turn-trimmed'
  | 'turn-ahead'
  | 'turn-taken-over'
  | 'last-event-id'
  | 'remote-turn'
  | 'runner-lost'
  | 'server-closed'
  | 'turn-log-timeout';

/**
 * An error of `cleanturn/transport` and `cleanturn/transport/redis`; its code names the
 * case, and the fields that its code names are set (the others are `undefined`).
 *
 * - `http-status`: the message is one line: the status, its text, then what the provider said (its error message,
 *   with its code) or else the start of the body, e.g. `HTTP 401 Unauthorized: Incorrect API key provided: sk-wrong…
 *   (invalid_api_key)`. Whether it is retryable is the answer of the table the provider adapters use: a provider
 *   error code in the JSON body decides first (a 429 for `insufficient_quota` is final), then the status: 408, 409,
 *   429 and 5xx yes; other 4xx (400, 401, 403, 404…), which a new attempt would only repeat, no.
 * - `turn-stopped`: the `signal` of `streamTurn` aborted (a user pressed stop), or a `turnServer` was asked to stop
 *   the turn. The live attempt's request was aborted, a pending retry wait cancelled and a background response
 *   cancelled. Nothing failed, and a stop is never retried.
 * - `attempt-timeout`: however steadily the attempt sent bytes (a server that sends only comments or keep-alive
 *   events), it was aborted; `turn-timeout`: every attempt and every wait between them, the live attempt aborted or
 *   the wait cancelled.
 * - `sse-limit-*`: buffered SSE text passed `maxBufferSize` (see `fromSSE`): a line that never ends, an event whose
 *   closing blank line never comes, or text outside SSE framing (an HTML page) that goes on and on. The request is
 *   aborted.
 * - `sse-field`: an `id` or `event` with CR, LF or NUL, or `data` with a NUL, would read as other events or lose its
 *   id (see `toSSE`); line breaks in `data` are written as data lines of the same event. Nothing was written.
 * - `not-event-stream`: a content type other than `text/event-stream` (a captive portal's HTML page, a JSON answer to
 *   a request that forgot to ask for streaming), or no body at all (a 204).
 * - `response-*`: the events of one HttpClient request started over after some of its response's events had been
 *   emitted (see `httpClientSSE`), so that reading on would splice two responses into one stream: `resent`, a second
 *   `Sent` or `ResponseHeader` event (an interceptor's `retry()`); `rewritten`, a progress event's text shorter than
 *   what was read or different where it was read, or a final body that is not the progress events' text. A new
 *   attempt (after a `reset`) starts the turn over cleanly.
 * - `resume-*`: a cut response could not be resumed, or its stream proved nothing of its continuity (see
 *   `resumeResponse`): `not-found`, a 404 (it was not created in background mode, or another key or project made it);
 *   `expired`, another status that the upstream table calls final (a 401 or 403 ends the attempt as it is); `gap`,
 *   events were lost, on a resumed stream or on the create request's own; `unverifiable`, an event without a
 *   `sequence_number` (a proxy that re-serialises the events); `repeated`, `maxResumes` resumes in a row delivered no
 *   new event; `diverged`, a response read again from its start for a takeover (`resumeFrom`) does not begin with
 *   what the lost runner delivered of it. Retryable, so that an ordinary retry takes over with this message as its
 *   reason; `unverifiable` on the create request's own stream is not, since a new attempt would meet it again.
 * - `unsafe-replay`: sending the request again may repeat what the first one did on the server (a Responses request
 *   bound to a `conversation` appends its input and output again). `streamTurn` ends the turn with it, without a
 *   `reset`, unless its `replay` callback approves the replay. The request is not kept (its headers hold
 *   credentials); `cause` is the attempt's own failure.
 * - `turn-id-*`: a turn id that no turn log or turn server takes: any string of 1 to 256 UTF-16 code units that is
 *   well-formed UTF-16 is one, line breaks, NUL, `:` and `%` included.
 * - `turn-not-found`, `turn-trimmed`, `turn-ahead`: the log cannot give a reader the turn's entries; the turn must
 *   start anew.
 * - `last-event-id`: not a canonical decimal seq (`T:`, `T:01`, `T:0x1`, `T:1e21`) or past
 *   `Number.MAX_SAFE_INTEGER`; reading from anywhere would give the client events twice or not at all.
 * - `remote-turn`: the client's stream errors with what the server said; `retryable` is the server's answer.
 * - `runner-lost`: the runner was lost more often than `takeover.max` allows, or too long after the turn began
 *   (`takeover.withinMs`): the turn ends as failed, and its readers keep what they read.
 * - `turn-log-timeout`: Redis did not answer within the log's `commandTimeoutMs` (for a blocking read: `blockMs`
 *   plus `commandTimeoutMs`): the server is down, unreachable or stalled. A claim or an append is first sent again
 *   under the same claim token (4 sends in all); this error means no answer came. A claim given up on is undone by
 *   a release sent behind it; an append given up on may still be applied, and the end that follows is then written
 *   after it.
 *
 * @example
 * ```ts
 * catchError((error) => {
 *   if (error instanceof TransportError && error.code === 'http-status') console.error(error.status, error.body);
 *   throw error;
 * });
 * ```
 */
export class TransportError extends CleanturnError<TransportErrorCode> {
  static override readonly kind: string = 'TransportError';

  /** The HTTP status (`http-status`, `not-event-stream`). */
  declare readonly status: number | undefined;
  /**
   * How long the server asked the client to wait, in milliseconds: `retry-after-ms` (OpenAI) when present, else
   * `retry-after` (seconds or an HTTP date) (`http-status`).
   */
  declare readonly retryAfterMs: number | undefined;
  /** The start of the response body (up to 4 KiB; the rest is not read), for logs (`http-status`, `not-event-stream`). */
  declare readonly body: string | undefined;
  /** The `content-type` header, when the server sent one (`not-event-stream`). */
  declare readonly contentType: string | undefined;
  /** The timeout that expired, in milliseconds; for a turn log call, that of each send (`stall`, `*-timeout`). */
  declare readonly timeoutMs: number | undefined;
  /**
   * Why the turn was stopped: the signal's `reason` (a `DOMException` named `AbortError` for a bare `abort()`), or
   * the server's message (`turn-stopped`).
   */
  declare readonly stopReason: unknown;
  /** The payload as received (`sse-data`). */
  declare readonly data: string | undefined;
  /**
   * The limit that was passed, in characters (`sse-limit-*`); the longest turn id taken, 256 (`turn-id-*`).
   */
  declare readonly limit: number | undefined;
  /** The SSE field at fault (`sse-field`). */
  declare readonly field: 'id' | 'event' | 'data' | undefined;
  /** How many characters of the abandoned response's text had been read (`response-*`). */
  declare readonly read: number | undefined;
  /** The response that was being read; `''` when no event had named it yet (`resume-*`). */
  declare readonly responseId: string | undefined;
  /** The last sequence number that arrived before the failure; -1 when none had (`resume-*`). */
  declare readonly after: number | undefined;
  /** Whether it happened on a resumed connection; false for a `gap` or `unverifiable` of the create stream (`resume-*`). */
  declare readonly resumed: boolean | undefined;
  /** How safe the refused replay was: `unsafe`, or `unknown` when the `replay` callback declined it (`unsafe-replay`). */
  declare readonly safety: Exclude<ReplaySafety, 'safe'> | undefined;
  /** The rule that decided (`stateful`, `unreadable`) (`unsafe-replay`). */
  declare readonly basis: ReplayBasis | undefined;
  /** The attempt that failed and was not sent again, 1 for the first (`unsafe-replay`). */
  declare readonly attempt: number | undefined;
  /** The turn id's length in UTF-16 code units, 0 for a value that is not a string (`turn-id-*`). */
  declare readonly length: number | undefined;
  /**
   * The turn (`turn-not-found`, `turn-trimmed`, `turn-ahead`, `turn-taken-over`, `last-event-id`, `runner-lost`,
   * `server-closed`).
   */
  declare readonly turnId: string | undefined;
  /** The `Last-Event-ID` header, as the client sent it (`last-event-id`). */
  declare readonly lastEventId: string | undefined;
  /** The class name of the server's error (`TurnError`, `TransportError`…) (`remote-turn`). */
  declare readonly remoteName: string | undefined;
  /** The `code` of the server's error, when it had one (`retries-exhausted`, `turn-not-found`…) (`remote-turn`). */
  declare readonly remoteCode: string | undefined;
  /** How many times the turn had been taken over already (`runner-lost`). */
  declare readonly takeovers: number | undefined;
  /** The turn log call that got no answer (`turn-log-timeout`). */
  declare readonly operation: 'claim' | 'append' | 'read' | 'stop' | 'renew' | 'takeOver' | undefined;
  /** How many times it was sent; a read: 1 (`turn-log-timeout`). */
  declare readonly tries: number | undefined;

  /**
   * @param code Which case this is.
   * @param message One line for people and logs.
   * @param details The fields of the case, whether a new attempt could succeed, and the cause.
   */
  constructor(
    code: TransportErrorCode,
    message: string,
    details: Partial<Omit<TransportError, keyof CleanturnError>> & { retryable: boolean; cause?: unknown },
  ) {
    super(code, message, details);
  }
}

/** The server answered with a status other than 2xx. Retryable by the upstream table. @internal */
export function httpStatusError(
  status: number,
  statusText: string,
  body: string,
  retryAfterMs: number | undefined,
): TransportError {
  return new TransportError('http-status', statusMessage(status, statusText, body), {
    retryable: isRetryableUpstream({
      codes: bodyCodes(body),
      status,
      // Below 400 (a redirect not followed) the status rule answers no: only a code in the body could say yes.
      otherwise: false,
    }),
    status,
    retryAfterMs,
    body,
  });
}

/** The connection failed or broke mid-stream. Retryable. @internal */
export function connectionError(message: string, cause: unknown): TransportError {
  return new TransportError('connection', message, { retryable: true, cause });
}

/** No byte of the response arrived for the stall timeout. Retryable. @internal */
export function stallError(timeoutMs: number): TransportError {
  return new TransportError('stall', `no data for ${timeoutMs} ms: the stream stalled`, {
    retryable: true,
    timeoutMs,
  });
}

/** The turn was stopped on purpose. Not retryable. @internal */
export function turnStoppedError(reason: unknown): TransportError {
  return new TransportError('turn-stopped', `the turn was stopped${stopReasonText(reason)}`, {
    retryable: false,
    stopReason: reason,
  });
}

/** `: <why>` for a stop with a reason of its own; nothing for a bare `abort()`. */
function stopReasonText(reason: unknown): string {
  if (reason === undefined) return '';
  if (typeof reason === 'object' && reason !== null && readProperty(reason, 'name') === 'AbortError')
    return '';
  // One line, and short: a reason may come from a request body.
  return `: ${oneLine(describeError(reason), 300)}`;
}

/** One attempt outlasted `timeout.attemptMs`. Retryable. @internal */
export function attemptTimeoutError(timeoutMs: number): TransportError {
  return new TransportError('attempt-timeout', `the attempt did not end within ${timeoutMs} ms`, {
    retryable: true,
    timeoutMs,
  });
}

/** The turn outlasted `timeout.totalMs`. Not retryable. @internal */
export function turnTimeoutError(timeoutMs: number): TransportError {
  return new TransportError('turn-timeout', `the turn did not end within ${timeoutMs} ms`, {
    retryable: false,
    timeoutMs,
  });
}

/** An SSE `data` payload that should be JSON is not. Retryable. @internal */
export function sseDataError(data: string, cause: unknown): TransportError {
  return new TransportError('sse-data', `SSE data is not JSON: ${JSON.stringify(data.slice(0, 80))}`, {
    retryable: true,
    cause,
    data,
  });
}

/** Buffered SSE text passed `maxBufferSize`. Not retryable. @internal */
export function sseLimitError(limit: number, kind: 'event' | 'unframed'): TransportError {
  return new TransportError(
    kind === 'event' ? 'sse-limit-event' : 'sse-limit-unframed',
    kind === 'event'
      ? `an SSE line or event passed maxBufferSize (${limit} characters) without ending`
      : `text outside SSE framing passed maxBufferSize (${limit} characters)`,
    { retryable: false, limit },
  );
}

/** An SSE field to be written holds what would end its line, or NUL. Not retryable. @internal */
export function sseFieldError(field: 'id' | 'event' | 'data'): TransportError {
  return new TransportError(
    'sse-field',
    field === 'data'
      ? 'an SSE data field cannot hold a NUL character'
      : `an SSE ${field} field cannot hold CR, LF or NUL: it would end the line, and let the value write events`,
    { retryable: false, field },
  );
}

/**
 * A 2xx response that is not an event stream. Not retryable.
 *
 * @param status The HTTP status.
 * @param contentType The `content-type` header, if any.
 * @param body The start of the body, or `undefined` when the response has none.
 * @internal
 */
export function notEventStreamError(
  status: number,
  contentType: string | undefined,
  body: string | undefined,
): TransportError {
  const got =
    body === undefined
      ? `HTTP ${status} without a body`
      : `HTTP ${status} with ${contentType === undefined ? 'no content type' : `content type ${contentType}`}`;
  return new TransportError(
    'not-event-stream',
    `expected an event stream (text/event-stream), got ${got}${body ? `: ${body.slice(0, 200)}` : ''}`,
    { retryable: false, status, contentType, body: body ?? '' },
  );
}

/** The events of one HttpClient request started over. Retryable. @internal */
export function responseRestartError(kind: 'resent' | 'rewritten', read: number): TransportError {
  return new TransportError(
    kind === 'resent' ? 'response-resent' : 'response-rewritten',
    kind === 'resent'
      ? `the request was sent again after ${read} characters of its response were read (an interceptor's retry?): its new response would be spliced onto the abandoned one`
      : `the response's text no longer continues the ${read} characters already read: reading on would splice two texts`,
    { retryable: true, read },
  );
}

/** Why a cut response could not be resumed: the `resume-*` codes without their prefix. @internal */
export type ResumeFailure = 'not-found' | 'expired' | 'gap' | 'unverifiable' | 'repeated' | 'diverged';

/**
 * A cut response could not be resumed, or its stream proved nothing of its continuity.
 *
 * @param failure Why the resume was impossible, or the stream untrustworthy.
 * @param responseId The response's id (`''` when not known yet).
 * @param after The last sequence number that arrived (-1 when none had).
 * @param detail What was seen: the next sequence number after a `gap`, the resume count of `repeated`, and
 *   `resumed: false` for a failure of the create stream (default true).
 * @param cause The error of the resume request, when there was one.
 * @internal
 */
export function resumeError(
  failure: ResumeFailure,
  responseId: string,
  after: number,
  detail: { next?: number; resumes?: number; resumed?: boolean } = {},
  cause?: unknown,
): TransportError {
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
  return new TransportError(`resume-${failure}`, `${what}: ${why}${from}`, {
    retryable: resumed || failure !== 'unverifiable',
    cause,
    responseId,
    after,
    resumed,
  });
}

/**
 * A failed attempt was not retried because sending its request again may repeat what the first one did. Not
 * retryable.
 *
 * @param attempt The attempt that failed.
 * @param verdict What `replaySafety` found: its safety (`unsafe` or `unknown`), basis and reason.
 * @param cause What failed the attempt.
 * @internal
 */
export function unsafeReplayError(attempt: number, verdict: ReplayVerdict, cause: unknown): TransportError {
  return new TransportError(
    'unsafe-replay',
    `attempt ${attempt} failed and was not sent again (a ${verdict.safety} replay): ${verdict.reason}`,
    {
      retryable: false,
      cause,
      safety: verdict.safety === 'safe' ? 'unknown' : verdict.safety,
      basis: verdict.basis,
      attempt,
    },
  );
}

/**
 * The longest turn id, in UTF-16 code units (a JavaScript string's `length`): 256. Percent-encoded in a message id
 * it takes at most 2 304 characters, so that the `Last-Event-ID` header of a reconnect stays far below the 8 KB
 * header limits of common servers and proxies. @internal
 */
export const MAX_TURN_ID_LENGTH = 256;

/** What is wrong with a turn id: the `turn-id-*` codes without their prefix. @internal */
export type TurnIdProblem = 'not-a-string' | 'empty' | 'too-long' | 'not-well-formed';

/** A turn id that no turn log or turn server takes. Not retryable. @internal */
export function turnIdError(turnId: unknown, problem: TurnIdProblem): TransportError {
  const length = typeof turnId === 'string' ? turnId.length : 0;
  const shown =
    typeof turnId !== 'string'
      ? typeof turnId
      : length > 40
        ? `${JSON.stringify(turnId.slice(0, 40))}… (${length} code units)`
        : JSON.stringify(turnId);
  const why =
    problem === 'not-a-string'
      ? 'is not a string'
      : problem === 'empty'
        ? 'is empty'
        : problem === 'too-long'
          ? `is longer than ${MAX_TURN_ID_LENGTH} UTF-16 code units`
          : 'is not well-formed UTF-16 (it has a lone surrogate)';
  return new TransportError(`turn-id-${problem}`, `turn id ${shown} ${why}`, {
    retryable: false,
    length,
    limit: MAX_TURN_ID_LENGTH,
  });
}

/**
 * The log cannot give a reader the turn's entries: `unknown` (`turn-not-found`), `trimmed` (`turn-trimmed`) or
 * `ahead` (`turn-ahead`). Not retryable. @internal
 */
export function turnNotFoundError(
  turnId: string,
  reason: 'unknown' | 'trimmed' | 'ahead' = 'unknown',
): TransportError {
  return new TransportError(
    reason === 'unknown' ? 'turn-not-found' : reason === 'trimmed' ? 'turn-trimmed' : 'turn-ahead',
    reason === 'unknown'
      ? `the turn log does not know turn ${turnId}: it never started, or it expired`
      : reason === 'trimmed'
        ? `the turn log no longer has the entries of turn ${turnId} that were asked for: they were trimmed`
        : `turn ${turnId} has no such entry: the reader asks to read after an entry the running turn never had`,
    { retryable: false, turnId },
  );
}

/** This runner's lease lapsed and another runner took the turn over. Not retryable. @internal */
export function turnTakenOverError(turnId: string): TransportError {
  return new TransportError(
    'turn-taken-over',
    `turn ${turnId} was taken over by another runner: its lease here lapsed`,
    { retryable: false, turnId },
  );
}

/** A `Last-Event-ID` names the turn at a position no message had. Not retryable. @internal */
export function lastEventIdError(turnId: string, lastEventId: string): TransportError {
  const shown =
    lastEventId.length > 80 ? `${JSON.stringify(lastEventId.slice(0, 80))}…` : JSON.stringify(lastEventId);
  return new TransportError(
    'last-event-id',
    `Last-Event-ID ${shown} names turn ${JSON.stringify(turnId)} at a position no message had`,
    { retryable: false, turnId, lastEventId },
  );
}

/**
 * A served turn failed on the server, as its failed message says: its message, name, code and `retryable`.
 * @internal
 */
export function remoteTurnError(failure: {
  name: string;
  code?: string | undefined;
  message: string;
  retryable: boolean;
}): TransportError {
  return new TransportError('remote-turn', `the turn failed on the server: ${failure.message}`, {
    retryable: failure.retryable,
    remoteName: failure.name,
    remoteCode: typeof failure.code === 'string' ? failure.code : undefined,
  });
}

/** The runner of a turn was lost past the takeover bounds. Retryable. @internal */
export function runnerLostError(turnId: string, takeovers: number): TransportError {
  return new TransportError(
    'runner-lost',
    `the runner of turn ${turnId} was lost${takeovers > 0 ? ` after ${takeovers} takeover(s)` : ''}, and the turn is not taken over again`,
    { retryable: true, turnId, takeovers },
  );
}

/** A turn whose server closed before the turn ended: what its log's failed end says. */
export function serverClosedError(turnId: string): TransportError {
  return new TransportError('server-closed', 'the server closed', { retryable: true, turnId });
}

/** The Redis turn log's calls, as its errors name them. @internal */
export type TurnLogOperation = NonNullable<TransportError['operation']>;

/** Redis did not answer the turn log within `commandTimeoutMs`. Retryable. @internal */
export function turnLogTimeoutError(
  operation: TurnLogOperation,
  timeoutMs: number,
  tries = 1,
): TransportError {
  return new TransportError(
    'turn-log-timeout',
    tries === 1
      ? `Redis turn log: ${operation} got no answer within ${timeoutMs} ms (commandTimeoutMs)`
      : `Redis turn log: ${operation} got no answer to any of ${tries} sends, each given ${timeoutMs} ms (commandTimeoutMs)`,
    { retryable: true, operation, timeoutMs, tries },
  );
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

/** How many characters of the provider's message (or of a body without one) an `http-status` error shows. */
const STATUS_MESSAGE_SIZE = 300;

/**
 * The message of an `http-status` error, on one line: `HTTP <status> <status text>`, then the provider's own
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
  const parsed = jsonObject(body);
  if (parsed === undefined) return undefined;
  const { error, message } = parsed;
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
  const parsed = jsonObject(body);
  if (parsed === undefined) return [];
  const { error, code, type } = parsed;
  const inner = typeof error === 'object' && error !== null ? (error as Record<string, unknown>) : {};
  return [inner.code, inner.type, inner.status, code, type];
}

/**
 * The reason a run's signal aborts with when its turn server hands the turn over (`close({ handOver })`) or finds
 * it taken over: `streamTurn` then leaves a background response generating instead of cancelling it, for the
 * runner that goes on with it. Internal to the transport entry point.
 */
export const HANDED_OVER: Error = new Error('the turn was handed over to another runner');

/** A body parsed as a JSON object, or `undefined` when it is not one (not JSON, cut, or another JSON value). */
function jsonObject(body: string): Record<string, unknown> | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
}
