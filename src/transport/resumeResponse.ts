import {
  from,
  isObservable,
  mergeMap,
  Observable,
  type ObservableInput,
  type OperatorFunction,
  Subject,
  type Subscriber,
  type Subscription,
  takeUntil,
  timer,
} from 'rxjs';
import { describeError, isRetryable } from '../errors.js';
import { checkInteger, checkNumber, checkOneOf } from '../internal/options.js';
import { Resubscriber } from '../internal/resubscriber.js';
import type { ProviderEvent, ResumeEvent, ResumeFrom } from '../types.js';
import { isRetryableUpstream } from '../upstreamErrors.js';
import { resumeError } from './errors.js';

/**
 * A stream of parsed Responses events, as `create` and `retrieve` return it: an Observable or async iterable of
 * them (`fromSSE(…).pipe(sseJson())`), or a promise of an async iterable (what the official SDK's
 * `client.responses.create({ …, stream: true })` and `retrieve(id, { stream: true, … })` return).
 *
 * @inline
 */
export type ResponseEventsInput = ObservableInput<unknown> | PromiseLike<AsyncIterable<unknown>>;

/**
 * Options of {@link resumeResponse}.
 *
 * @inline
 */
export interface ResumeResponseOptions {
  /**
   * Creates the response and streams its events: a request with `background: true` and `stream: true` (only a
   * background response goes on generating while no client is connected). Pass `signal` on to abort it.
   */
  create: (context: { signal: AbortSignal }) => ResponseEventsInput;
  /**
   * Streams the events of response `id` after sequence number `after`: `GET /v1/responses/{id}?stream=true&
   * starting_after={after}`, or the SDK's `client.responses.retrieve(id, { stream: true, starting_after })`.
   */
  retrieve: (context: {
    id: string;
    after: number;
    /** The last event's own cursor, for a format whose cursor is not a number (`interactions`: its `event_id`). */
    cursor?: string;
    signal: AbortSignal;
  }) => ResponseEventsInput;
  /**
   * Cancels response `id` (`POST /v1/responses/{id}/cancel`, or the SDK's `client.responses.cancel(id)`): called
   * once when the response is abandoned before its end (the consumer unsubscribed, or the attempt failed and an
   * ordinary retry takes over), so that it stops costing money. What it throws or rejects with is ignored: the
   * response then runs to its end on the server.
   */
  cancel?: (context: { id: string }) => unknown;
  /** The adapter of the format: `openaiResponses()` (or `geminiInteractions()`) of `cleanturn/providers`. */
  adapter: OperatorFunction<never, ProviderEvent>;
  /**
   * Go on with a response that exists instead of creating one: a runner that takes a turn over reads the lost
   * runner's response again from its start (`retrieve` with `after: -1` and no cursor), so that the same
   * generation goes on (see `StepContext.resumeFrom`). Its events must begin with the text and reasoning that
   * `delivered` holds; a response that reads otherwise fails with a `TransportError` `resume-diverged`, and one the server no
   * longer has with `not-found` or `expired`: an ordinary retry (a reset, a new generation) takes over.
   */
  resumeFrom?: ResumeFrom;
  /**
   * How the stream places its events: `'responses'` (default), OpenAI Responses, each event with a `sequence_number`
   * one after the last; `'interactions'`, the Gemini Interactions API, each event with an `event_id` (a resume
   * goes on after the last one, `last_event_id`; an id already read is a replay, dropped). A resumed Interactions
   * stream cannot prove that nothing was skipped (its ids are opaque), so it has no `gap`.
   */
  format?: ResumeFormatName;
  /**
   * Resumes in a row that may deliver no new event before the attempt fails with a `TransportError` `resume-repeated`.
   * Default 3; `0` never resumes.
   */
  maxResumes?: number;
  /**
   * Milliseconds before the second resume in a row that delivered nothing, doubled for each further one (at most
   * 30 s); the first resume after a cut is immediate. Default 250.
   */
  delay?: number;
}

/**
 * The resumable formats: see {@link ResumeResponseOptions.format}.
 *
 * @inline
 */
export type ResumeFormatName = 'responses' | 'interactions';

/**
 * How a resumable stream places its events, for one subscription: the response's id, whether an event goes on where
 * the last one was, and its end. `after` counts (or numbers) the events read, -1 before the first; `cursor` is the
 * last one's own id, when the format's cursor is not that number.
 */
interface ResumeFormat {
  idOf(payload: unknown): string | undefined;
  /** Whether `payload` goes on after the last event: undefined, a replay to drop, or why it cannot be trusted. */
  check(payload: unknown): 'replay' | { failure: 'gap' | 'unverifiable'; next?: number } | undefined;
  /** Records an event that goes on. */
  accept(payload: unknown): void;
  terminal(payload: unknown): boolean;
  readonly after: number;
  readonly cursor: string | undefined;
}

/** OpenAI Responses: every event has a `sequence_number`, exactly one after the last. */
function responsesFormat(): ResumeFormat {
  let after = -1;
  return {
    idOf: responseIdOf,
    check: (payload) => continuity(payload, after),
    accept: (payload) => {
      after = sequenceOf(payload) ?? after;
    },
    terminal: (payload) => TERMINAL.has(typeOf(payload)),
    get after() {
      return after;
    },
    cursor: undefined,
  };
}

/** The Gemini Interactions API: every event has an `event_id`; a resume goes on after the last one. */
function interactionsFormat(): ResumeFormat {
  const seen = new Set<string>();
  let after = -1;
  let cursor: string | undefined;
  const eventType = (payload: unknown) => (payload as { event_type?: unknown } | null)?.event_type;
  return {
    idOf: interactionIdOf,
    check: (payload) => {
      const id = eventIdOf(payload);
      if (id === undefined) return eventType(payload) === 'error' ? undefined : { failure: 'unverifiable' };
      return seen.has(id) ? 'replay' : undefined;
    },
    accept: (payload) => {
      const id = eventIdOf(payload);
      if (id === undefined) return;
      seen.add(id);
      after++;
      cursor = id;
    },
    terminal: (payload) => {
      const type = eventType(payload);
      return type === 'interaction.completed' || type === 'interaction.complete';
    },
    get after() {
      return after;
    },
    get cursor() {
      return cursor;
    },
  };
}

/**
 * The event types after which a response generates nothing more. Not `error`: in background mode it does not prove
 * that the response stopped, so an attempt that ends with one still cancels it.
 */
const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** The longest wait between two resumes, however many failed in a row. */
const MAX_DELAY = 30_000;

/**
 * Checks the resume options where they are given (`resumeResponse`, `openaiBackground`, `streamTurn`): a bad value
 * is a mistake in the code, refused at once with a `UsageError`, never turned into retries.
 */
export function checkResumeOptions(
  who: string,
  maxResumes: number | undefined,
  delay: number | undefined,
): void {
  if (maxResumes !== undefined) checkInteger(who, 'maxResumes', maxResumes, 0);
  if (delay !== undefined) checkNumber(who, 'delay', delay, 'non-negative');
}

/**
 * One attempt of an OpenAI Responses turn in background mode, resumed where its connection is cut instead of
 * generated again: the same generation, billed once, with no `reset` on any screen.
 *
 * `create` starts the response (`background: true, stream: true`). When its stream is cut (a reset, a stall, a
 * close before the response's end), a `resume` event (with the last sequence number seen and the reason) goes
 * out, and `retrieve` streams the rest of the same response after that sequence number. Events at or below it
 * (a server that replays) are dropped; the adapter sees one stream, as if nothing had happened.
 *
 * A resume must prove that it goes on where the cut was, so every connection is checked as it is read: each event
 * carries a `sequence_number`, and each new one is exactly one after the last (in background mode every event
 * carries one, from 0). A stream that does not prove it fails closed, since reading on could show the user a piece
 * twice or leave a hole; only an `error` event is read without a number, since it ends the attempt anyway.
 *
 * ```text
 * source 1: -c-a-#
 * source 2: -b-d|
 *           resumeResponse({ create, retrieve, adapter: openaiResponses(), delay: 2 })
 * result:   -N-A-RB-(UF|)
 *
 * where
 *   c = {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress"}}
 *   a = {"type":"response.output_text.delta","sequence_number":1,"delta":"Checking order ORD-7781. "}
 *   # = error: Error (connection reset)
 *   b = {"type":"response.output_text.delta","sequence_number":2,"delta":"The book arrived damaged."}
 *   d = {"type":"response.completed","sequence_number":3,"response":{"id":"resp_1","status":"completed","usage":{"input_tokens":142,"output_tokens":31}}}
 *   N = {"type":"resumable","responseId":"resp_1"}
 *   A = text "Checking order ORD-7781. "
 *   R = {"type":"resume","after":1,"reason":"connection reset"}
 *   B = text "The book arrived damaged."
 *   U = usage in 142 / out 31
 *   F = finish stop, response resp_1
 * ```
 *
 * Every case of `marbles/resumeResponse.marbles.ts`, with pictures: `docs/operators/resumeResponse.md`.
 *
 * When resuming is impossible, the attempt fails and an ordinary retry (a new generation after a `reset`) takes
 * over, its reason saying why:
 * - the cut came before the response's id or first sequence number: the cut's own error (a clean close completes
 *   without a finish, for `requireFinish` to fail);
 * - the server does not know the response (404) or no longer streams it (another status that the table of
 *   `isRetryableUpstream` calls final, 401 and 403 aside): a `TransportError` `resume-not-found` or `resume-expired`;
 * - a stream skips a sequence number (a lost event), on a resume or on the create request's own stream: `gap`;
 * - a resumed event comes without a `sequence_number` (a proxy that re-serialises the events, maybe replaying from
 *   the start): `unverifiable`;
 * - `maxResumes` resumes in a row delivered no new event: `repeated`;
 * - the response failed on the server (`response.failed`, an `error` event): the adapter's `ProviderError`,
 *   retryable by the same table as every provider error.
 * An error that is not retryable (a 401, a payload the adapter cannot read) fails the attempt as it is; so does an
 * event without a `sequence_number` on the create request's own stream (`unverifiable`, not retryable: the events
 * pass through something that strips the numbers, which a new attempt would meet again).
 *
 * A response abandoned before its end (unsubscribed, or failed as above) is cancelled with `cancel`, so it stops
 * generating. Put it where an attempt goes: `attemptPipeline(identity)` and `turnPipeline`, or `streamTurn`'s
 * `resume` option, which does this over `fromSSE`.
 *
 * ## Example
 * ```ts
 * import OpenAI from 'openai';
 * import { defer, identity } from 'rxjs';
 * import { attemptPipeline, turnPipeline } from 'cleanturn';
 * import { openaiResponses } from 'cleanturn/providers';
 * import { resumeResponse } from 'cleanturn/transport';
 *
 * const client = new OpenAI({ maxRetries: 0 });
 * const body = { model: 'gpt-4.1', input: 'Refund order ORD-7781.', background: true, stream: true } as const;
 * const turn$ = defer(() =>
 *   resumeResponse({
 *     create: ({ signal }) => client.responses.create(body, { signal }),
 *     retrieve: ({ id, after, signal }) =>
 *       client.responses.retrieve(id, { stream: true, starting_after: after }, { signal }),
 *     cancel: ({ id }) => client.responses.cancel(id),
 *     adapter: openaiResponses(),
 *   }),
 * ).pipe(attemptPipeline(identity), turnPipeline({ turnId: 'turn-42' }));
 * ```
 *
 * @param options How to create, resume and cancel the response, and its adapter.
 * @returns A cold Observable of the attempt's provider events, `resume` events included; each subscription
 *   creates a new response.
 */
export function resumeResponse(options: ResumeResponseOptions): Observable<ProviderEvent> {
  const { maxResumes = 3, delay = 250, format: name = 'responses' } = options;
  checkResumeOptions('resumeResponse', maxResumes, delay);
  checkOneOf('resumeResponse', 'format', name, ['responses', 'interactions']);
  const settings: ResumeSettings = { ...options, maxResumes, delay, format: name };
  return new Observable<ProviderEvent>((subscriber) => {
    const session = new ResumeSession(settings, subscriber);
    // Registered before the first connection, which may end the subscription while it subscribes.
    subscriber.add(() => session.close());
    session.start();
  });
}

/** The options of one resumable attempt, with their defaults. */
type ResumeSettings = ResumeResponseOptions &
  Required<Pick<ResumeResponseOptions, 'maxResumes' | 'delay' | 'format'>>;

/**
 * One subscription of `resumeResponse`: where the stream is, its connections one after another, and the adapter
 * that reads their payloads as one stream.
 */
class ResumeSession {
  /** Where the stream is: the last event that arrived. */
  readonly #format: ResumeFormat;
  /** The adapter sees one stream of payloads over every connection. */
  readonly #payloads = new Subject<unknown>();
  readonly #output: Subscription;
  /** What the response read again must begin with (`resumeFrom`), and how much of it has matched. */
  readonly #expected: Visible[];
  #matched = 0;
  /** The response's id, once an event named it (or the response to go on with). */
  #id: string | undefined;
  /** The `resumable` event went out (with the first event read once the response's id is known). */
  #announced = false;
  /** A terminal event arrived: the response generates nothing more, and needs no cancel. */
  #ended = false;
  /** Resumes since an event last arrived. */
  #idle = 0;
  #cancelled = false;
  /** The live connection. */
  #live: Connection | undefined;
  /**
   * Makes connections, after the wait of a resume: a connection cut while it subscribes (a synchronous source)
   * connects again from the loop, not from inside the cut, so the stack does not grow with the resumes.
   */
  readonly #connections: Resubscriber;

  constructor(
    private readonly settings: ResumeSettings,
    private readonly subscriber: Subscriber<ProviderEvent>,
  ) {
    this.#format = settings.format === 'responses' ? responsesFormat() : interactionsFormat();
    this.#id = settings.resumeFrom?.responseId;
    this.#expected = settings.resumeFrom === undefined ? [] : visibleOf(settings.resumeFrom.delivered);
    this.#connections = new Resubscriber(() => this.#connect(true), subscriber);
    const adapter = settings.adapter as OperatorFunction<unknown, ProviderEvent>;
    this.#output = this.#payloads.pipe(adapter).subscribe({
      next: (event) => this.#emit(event),
      error: (error: unknown) => subscriber.error(error),
      complete: () => subscriber.complete(),
    });
  }

  /** Makes the first connection: the create request, or the retrieve of the response to go on with. */
  start(): void {
    this.#connections.run(() => this.#connect(this.settings.resumeFrom !== undefined));
  }

  /** Ends the subscription's connections, and cancels a response abandoned before its end. */
  close(): void {
    this.#output.unsubscribe();
    this.#connections.close();
    const connection = this.#live;
    this.#live = undefined;
    connection?.stop.next();
    connection?.subscription?.unsubscribe();
    connection?.request.abort();
    const { cancel } = this.settings;
    if (this.#id !== undefined && !this.#ended && !this.#cancelled && cancel !== undefined) {
      this.#cancelled = true;
      const responseId = this.#id;
      try {
        Promise.resolve(cancel({ id: responseId })).catch(() => undefined);
      } catch {
        // A cancel that throws is ignored, as one that rejects: the response runs to its end on the server.
      }
    }
  }

  /** An event of the adapter; a response read again must first give what was delivered of it. */
  #emit(event: ProviderEvent): void {
    if (this.#matched < this.#expected.length && !matches(event, this.#expected[this.#matched] as Visible)) {
      const error = resumeError('diverged', this.#id ?? '', this.#format.after, { next: this.#matched });
      this.subscriber.error(error);
      return;
    }
    if (event.type === 'text' || event.type === 'reasoning') this.#matched++;
    this.subscriber.next(event);
  }

  /** Opens a connection: a retrieve after where the stream is, once the response is known, else the create. */
  #connect(resuming: boolean): void {
    const connection: Connection = {
      request: new AbortController(),
      stop: new Subject<void>(),
      resuming,
      delivered: false,
    };
    this.#live = connection;
    let input: ResponseEventsInput;
    try {
      input = this.#request(resuming, connection.request.signal);
    } catch (error) {
      this.subscriber.error(error);
      return;
    }
    // takeUntil closes the source's subscriber at once, so that even a synchronous source stops when told.
    const subscription = eventsOf(input)
      .pipe(takeUntil(connection.stop))
      .subscribe({
        next: (payload) => this.#read(connection, payload),
        error: (error: unknown) => this.#cut(connection, error),
        complete: () => this.#cut(connection, undefined),
      });
    // A connection that ended while it subscribed (a synchronous source) is over already.
    if (this.#live === connection) connection.subscription = subscription;
    else subscription.unsubscribe();
  }

  /** The stream of one connection, from the caller's `create` or `retrieve`. */
  #request(resuming: boolean, signal: AbortSignal): ResponseEventsInput {
    const { create, retrieve, resumeFrom } = this.settings;
    const id = this.#id;
    if ((!resuming && resumeFrom === undefined) || id === undefined) return create({ signal });
    const { after, cursor } = this.#format;
    return retrieve(cursor === undefined ? { id, after, signal } : { id, after, cursor, signal });
  }

  /** A payload of the live connection: dropped as a replay, refused when it cannot be placed, else read. */
  #read(connection: Connection, payload: unknown): void {
    if (this.#live !== connection) return;
    const format = this.#format;
    this.#id ??= format.idOf(payload);
    const problem = format.check(payload);
    // A replay of what arrived before the cut.
    if (problem === 'replay') return;
    if (problem !== undefined) {
      const { failure, next } = problem;
      const detail = { next, resumed: connection.resuming };
      this.subscriber.error(resumeError(failure, this.#id ?? '', format.after, detail));
      return;
    }
    format.accept(payload);
    if (format.terminal(payload)) this.#ended = true;
    connection.delivered = true;
    this.#idle = 0;
    if (!this.#announced && this.#id !== undefined) {
      this.#announced = true;
      this.subscriber.next({ type: 'resumable', responseId: this.#id });
      if (this.subscriber.closed) return;
    }
    this.#payloads.next(payload);
    // The response's end is the attempt's end: what follows (a close, a reset) loses nothing.
    if (this.#ended && !this.subscriber.closed) this.#payloads.complete();
  }

  /** The live connection ended (`error` undefined: it closed cleanly) before the adapter ended the attempt. */
  #cut(connection: Connection, error: unknown): void {
    if (this.#live !== connection || this.subscriber.closed) return;
    this.#live = undefined;
    const { maxResumes, resumeFrom, delay } = this.settings;
    const verdict = resumeVerdict(error, {
      id: this.#id,
      after: this.#format.after,
      resumeFrom: resumeFrom !== undefined,
      ended: this.#ended,
      unanswered: connection.resuming && !connection.delivered,
      idle: this.#idle,
      maxResumes,
      delay,
    });
    if (verdict.kind === 'fail') this.subscriber.error(verdict.error);
    else if (verdict.kind === 'end') this.#payloads.complete();
    else this.#resume(error, verdict.pause);
  }

  /** Says so (a `resume`), then connects again after `pause` milliseconds (0: at once). */
  #resume(error: unknown, pause: number): void {
    this.#idle++;
    const { after, cursor } = this.#format;
    const reason = error === undefined ? 'the stream closed before the response ended' : describeError(error);
    const resume: ResumeEvent =
      cursor === undefined ? { type: 'resume', after, reason } : { type: 'resume', after, cursor, reason };
    this.subscriber.next(resume);
    if (this.subscriber.closed) return;
    this.#connections.again(pause === 0 ? undefined : timer(pause));
  }
}

/** What a {@link resumeVerdict} knows of the stream when its connection is cut. */
interface CutFacts {
  /** The response's id, once an event named it. */
  id: string | undefined;
  /** The format's position (`after`): negative before the first event that has one. */
  after: number;
  /** Whether the stream goes on with a response named by `resumeFrom`. */
  resumeFrom: boolean;
  /** Whether a terminal event arrived. */
  ended: boolean;
  /** Whether the cut connection was a resume that delivered nothing yet. */
  unanswered: boolean;
  /** Resumes since an event last arrived. */
  idle: number;
  maxResumes: number;
  /** The first pause between resumes that deliver nothing, in milliseconds. */
  delay: number;
}

/**
 * What a cut means, from the cut's error (undefined: a clean close) and the stream's facts: a failure; the
 * attempt's end as the cut ends it, when there is nothing to resume from (a clean close completes, for
 * `requireFinish` to fail); or a resume after a pause (0 for the first in a row, then doubling from `delay`).
 * A resume the server answers with a status that says the response is gone fails `not-found` or `expired`; an
 * error no new connection can pass fails as it is; past `maxResumes` resumes in a row that delivered nothing,
 * `repeated`.
 */
function resumeVerdict(
  error: unknown,
  facts: CutFacts,
): { kind: 'fail'; error: unknown } | { kind: 'end' } | { kind: 'resume'; pause: number } {
  const { id, after, idle } = facts;
  if (error !== undefined) {
    const status = facts.unanswered && id !== undefined ? statusOf(error) : undefined;
    if (id !== undefined && status !== undefined && unresumable(status)) {
      return {
        kind: 'fail',
        error: resumeError(status === 404 ? 'not-found' : 'expired', id, after, {}, error),
      };
    }
    if (!isRetryable(error)) return { kind: 'fail', error };
  }
  if (id === undefined || (after < 0 && !facts.resumeFrom) || facts.ended || facts.maxResumes === 0) {
    return error === undefined ? { kind: 'end' } : { kind: 'fail', error };
  }
  if (idle >= facts.maxResumes) {
    return { kind: 'fail', error: resumeError('repeated', id, after, { resumes: idle }, error) };
  }
  const pause = idle > 0 ? Math.min(facts.delay * 2 ** (idle - 1), MAX_DELAY) : 0;
  return { kind: 'resume', pause };
}

/** A text or reasoning fragment that a response read again must deliver in its turn. */
interface Visible {
  type: 'text' | 'reasoning';
  text: string;
}

/** What the user saw of delivered events: their text and reasoning fragments, in order. */
function visibleOf(delivered: readonly { type: string }[]): Visible[] {
  return delivered.flatMap((event) =>
    (event.type === 'text' || event.type === 'reasoning') && typeof (event as Visible).text === 'string'
      ? [{ type: event.type, text: (event as Visible).text }]
      : [],
  );
}

/**
 * Whether an event of a response read again agrees with the next fragment that was delivered: a fragment must be
 * the same one, and the attempt must not finish before all of them came again.
 */
function matches(event: ProviderEvent, next: Visible): boolean {
  if (event.type === 'text' || event.type === 'reasoning')
    return event.type === next.type && event.text === next.text;
  return event.type !== 'finish';
}

/** One connection to the response: its request, and whether it delivered a new event. */
interface Connection {
  readonly request: AbortController;
  /** Stops the connection's source, even inside a synchronous emission. */
  readonly stop: Subject<void>;
  readonly resuming: boolean;
  delivered: boolean;
  subscription?: Subscription;
}

/** The payloads of a connection, from whatever `create` or `retrieve` returned. */
function eventsOf(input: ResponseEventsInput): Observable<unknown> {
  if (isObservable(input) || !isPromiseLike(input)) return from(input as ObservableInput<unknown>);
  // A promise of a stream (the SDK's): its events, not the stream object.
  return from(input).pipe(mergeMap((stream) => from(stream as ObservableInput<unknown>)));
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/**
 * Statuses of a resume request that say the response cannot be resumed: those the table of `isRetryableUpstream`
 * calls final, but for 401 and 403, which are about the key, not the response (they end the attempt as they are).
 */
function unresumable(status: number): boolean {
  return status !== 401 && status !== 403 && !isRetryableUpstream({ status, otherwise: true });
}

function typeOf(payload: unknown): string {
  const type = (payload as { type?: unknown } | null)?.type;
  return typeof type === 'string' ? type : '';
}

/**
 * Whether a payload continues the stream after sequence number `last`, on any connection: it must carry a
 * `sequence_number`, exactly `last + 1`; one at or below `last` is a replay, to drop. An `error` event is read
 * whatever its number (a proxy's own error has none): it ends the attempt with the adapter's error, and nothing after
 * it is read. Undefined when the payload goes on.
 */
function continuity(
  payload: unknown,
  last: number,
): 'replay' | { failure: 'gap' | 'unverifiable'; next?: number } | undefined {
  const sequence = sequenceOf(payload);
  if (sequence === undefined) return typeOf(payload) === 'error' ? undefined : { failure: 'unverifiable' };
  if (sequence <= last) return 'replay';
  return sequence === last + 1 ? undefined : { failure: 'gap', next: sequence };
}

function sequenceOf(payload: unknown): number | undefined {
  const sequence = (payload as { sequence_number?: unknown } | null)?.sequence_number;
  return typeof sequence === 'number' && Number.isInteger(sequence) ? sequence : undefined;
}

/** The response id a payload names (`response.created`, `response.in_progress`… carry the response). */
function responseIdOf(payload: unknown): string | undefined {
  const response = (payload as { response?: unknown } | null)?.response;
  const id = (response as { id?: unknown } | null | undefined)?.id;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/** The interaction id an Interactions event names (`interaction.created`'s resource, a status update's field). */
function interactionIdOf(payload: unknown): string | undefined {
  const record = payload as { interaction?: { id?: unknown } | null; interaction_id?: unknown } | null;
  const id = record?.interaction?.id ?? record?.interaction_id;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

function eventIdOf(payload: unknown): string | undefined {
  const id = (payload as { event_id?: unknown } | null)?.event_id;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/** The HTTP status of a request's error: a `TransportError` `http-status`'s, or the SDK's `APIError`'s. */
function statusOf(error: unknown): number | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : undefined;
}
