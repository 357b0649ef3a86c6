import { Observable, type Observer, type OperatorFunction } from 'rxjs';
import { CleanturnError } from '../errors.js';
import { isInstance } from '../internal/describeError.js';
import { subscribeLinked } from '../internal/subscribeLinked.js';
import type { FinishEvent, ProviderEvent } from '../types.js';
import { providerPayloadError } from './errors.js';
import { kindOf } from './read.js';

/** Where a {@link Decoder} puts what it read. */
export interface DecoderSink {
  /** An event of the attempt other than its finish, emitted at once. */
  event(event: ProviderEvent): void;
  /**
   * A finish the stream reported. It is provisional: it goes out when the source completes or {@link end} is
   * called, and a later finish replaces it (the last reason wins). An error after it still fails the attempt.
   */
  finish(event: FinishEvent): void;
  /** The format's own end marker arrived: the finish goes out and the rest of the source is ignored. */
  end(): void;
}

/**
 * A provider format's reader: a small state machine, one per attempt, that knows the format's mapping and
 * nothing of RxJS. It throws a typed error (a `ProviderError`: `upstream` for an error the provider reported, a
 * payload code such as `invalid-field` for a payload it cannot read) rather than dropping anything.
 *
 * `In` is the shape the format documents. {@link decodeWith} only makes sure each payload is an object, so a
 * decoder checks every field it reads (a field of the wrong type is `invalid-field`).
 */
export interface Decoder<In> {
  /** Reads one payload (never the end marker, never a non-object: those are handled before). */
  next(payload: In): void;
  /** The source completed: emit what is still open, or throw if it cannot be complete. */
  end?(): void;
  /**
   * The format's end marker arrived, before the held finish goes out: a format whose end marker means the attempt
   * finished, with or without a finish reason, gives its finish here. What it throws fails the stream. A source
   * that completes without the marker does not call it.
   */
  atEndMarker?(): void;
  /** Reads an error the source raised (an SDK's error for an in-stream error payload); `undefined` keeps it. */
  error?(error: unknown): unknown;
}

/**
 * Makes a fresh {@link Decoder} writing to `sink`; called once per subscription.
 * @inline
 */
export type DecoderFactory<In> = (sink: DecoderSink) => Decoder<In>;

/**
 * How {@link decodeWith} names and frames a format.
 * @inline
 */
export interface DecodeOptions {
  /** The operator's name, for error messages (`openaiChat`). */
  name: string;
  /** A string payload that is the format's end marker (`'[DONE]'`), if it has one. */
  endMarker?: string;
}

/**
 * What a decoder made of a whole sequence of payloads, under the same rules as {@link decodeWith}: for unit
 * tests of a decoder without RxJS.
 * @internal
 */
export interface DecodeResult {
  /** The events, in order, with the finish where the operator would emit it. */
  events: ProviderEvent[];
  /** The error the stream would end with, if any. */
  error?: unknown;
}

const OPEN = 0;
const ENDED = 1;
const FAILED = 2;

/** Where a run of a decoder writes: the operator's subscriber, or `decodeAll`'s collector. */
type Destination = Pick<Observer<ProviderEvent>, 'next' | 'error' | 'complete'>;

/**
 * The one run of a decoder: the rules every adapter shares. Nothing after the end; a finish is held until the
 * source completes or the end marker arrives, the last one winning; an input that is not a payload is a
 * `ProviderError`; a source error after the end completes (a finished attempt never fails), before it
 * goes to the decoder to be read.
 */
class Decoding<In> implements DecoderSink {
  private held: FinishEvent | undefined;
  /** `OPEN` until the end marker or the source's completion (`ENDED`), or an error (`FAILED`). */
  private state = OPEN;
  private readonly decoder: Decoder<In>;

  constructor(
    create: DecoderFactory<In>,
    private readonly options: DecodeOptions,
    private readonly out: Destination,
  ) {
    this.decoder = create(this);
  }

  event(event: ProviderEvent): void {
    if (this.state === OPEN) this.out.next(event);
  }

  finish(event: FinishEvent): void {
    if (this.state === OPEN) this.held = event;
  }

  end(): void {
    if (this.state !== OPEN) return;
    this.state = ENDED;
    const held = this.held;
    this.held = undefined;
    if (held !== undefined) this.out.next(held);
  }

  /**
   * Reads one input; throws what the stream must error with (the operator's subscription sends it on, and
   * `decodeAll` stops), so nothing needs to catch it on this path.
   */
  next(input: unknown): void {
    if (this.state !== OPEN) return;
    if (typeof input === 'object' && input !== null && !Array.isArray(input)) this.decoder.next(input as In);
    else this.notAnObject(input);
  }

  /** The source completed: what is still open, then the held finish. */
  complete(): void {
    if (this.state === FAILED) return;
    if (this.state === ENDED) {
      this.out.complete();
      return;
    }
    try {
      this.decoder.end?.();
    } catch (error) {
      this.fail(error);
      return;
    }
    this.end();
    this.out.complete();
  }

  /** The source errored: after the end the stream completes; before it, the decoder reads the error. */
  error(error: unknown): void {
    if (this.state === ENDED) {
      this.out.complete();
      return;
    }
    if (this.state === FAILED) return;
    let read = error;
    if (!isInstance(error, CleanturnError) && this.decoder.error !== undefined) {
      try {
        read = this.decoder.error(error) ?? error;
      } catch (thrown) {
        read = thrown;
      }
    }
    this.fail(read);
  }

  /** The end marker, or an input that is not a payload. */
  private notAnObject(input: unknown): void {
    const { endMarker, name } = this.options;
    if (input === endMarker && endMarker !== undefined) {
      this.decoder.atEndMarker?.();
      this.end();
      return;
    }
    const marker = endMarker === undefined ? '' : ` or '${endMarker}'`;
    throw providerPayloadError(
      name,
      'not-a-payload',
      `expected a parsed payload (an object)${marker}, got ${kindOf(input)}; JSON.parse the SSE data first`,
      { payload: input },
    );
  }

  private fail(error: unknown): void {
    this.state = FAILED;
    this.held = undefined;
    this.out.error(error);
  }
}

/**
 * Turns a {@link Decoder} into an operator from a format's payloads to `ProviderEvent`s. The adapters of
 * `cleanturn/providers` are this operator around their decoder; use it for a format of your own.
 *
 * The operator takes any source (`unknown` values: an SDK's typed stream, `sseJson()`'s parsed payloads) and
 * checks each value at runtime: the decoder gets objects only, typed as its `In`, and reads their fields as it
 * would read untrusted JSON.
 *
 * It owns, once for every format:
 * - subscription and teardown: unsubscribing, or an error sent downstream, stops the source at once;
 * - provisional finishes: a finish goes out when the source completes or the format's end marker arrives, and a
 *   later finish replaces it, so a stream that reports a finish reason on every chunk reads to its end;
 * - nothing after the end: payloads after the end marker are ignored, and a source error after it completes the
 *   stream (a finished attempt never turns into a failed one); an error before it fails the attempt, even after
 *   a provisional finish;
 * - the end marker told to the decoder (`atEndMarker`), before the held finish goes out, for a format whose
 *   marker means the attempt finished even without a finish reason; a source that just completes is not the
 *   marker;
 * - inputs that are not payloads (a string other than the end marker, an array, a number): a non-retryable
 *   {@link ProviderError} with code `not-a-payload`;
 * - errors the source raises: a `CleanturnError` passes as it is; others go to the decoder's `error` to be read
 *   (an SDK's error for an in-stream error payload becomes the same `upstream` `ProviderError` as the payload).
 *
 * ```text
 * source:   -a-b-c-|
 *           decodeWith(lines)
 * result:   -a-b---(f|)
 *
 * where
 *   a = {"text":"Checking order ","finish":"stop"}
 *   b = {"text":"ORD-7781.","finish":"stop"}
 *   c = {"finish":"content-filter"}
 *   a = text "Checking order "
 *   b = text "ORD-7781."
 *   f = finish content-filter
 * ```
 *
 * Every case of `marbles/decodeWith.marbles.ts`, with pictures: `docs/operators/decodeWith.md`.
 *
 * ## Example
 * ```ts
 * import { decodeWith } from 'cleanturn/providers';
 *
 * type Line = { text?: string; done?: boolean };
 * const lines = () =>
 *   decodeWith<Line>({ name: 'lines' }, (sink) => ({
 *     next(line) {
 *       if (typeof line.text === 'string') sink.event({ type: 'text', text: line.text });
 *       if (line.done === true) sink.finish({ type: 'finish', reason: 'stop' });
 *     },
 *   }));
 * ```
 *
 * @param options The operator's name for messages, and the format's end marker.
 * @param create Makes the decoder of one subscription.
 * @returns An operator from any payloads to provider events.
 */
export function decodeWith<In = Record<string, unknown>>(
  options: DecodeOptions,
  create: DecoderFactory<In>,
): OperatorFunction<unknown, ProviderEvent> {
  return (source) =>
    new Observable<ProviderEvent>((subscriber) =>
      // The run itself is the observer: one call per payload between the source and the decoder.
      subscribeLinked(source, subscriber, new Decoding(create, options, subscriber)),
    );
}

/**
 * Runs a decoder over a whole sequence of payloads, synchronously, under the rules of {@link decodeWith}: what
 * the operator would emit, and the error it would end with. For testing a decoder without RxJS.
 *
 * @param options As for {@link decodeWith}.
 * @param create The decoder factory.
 * @param payloads The payloads, in order.
 * @param ending How the source ends: `complete` (default), or an error it raises.
 * @returns The events and the error, if any.
 * @internal
 */
export function decodeAll<In>(
  options: DecodeOptions,
  create: DecoderFactory<In>,
  payloads: Iterable<In | string>,
  ending: { error: unknown } | 'complete' = 'complete',
): DecodeResult {
  const result: DecodeResult = { events: [] };
  const decoding = new Decoding(create, options, {
    next: (event) => result.events.push(event),
    error: (error) => {
      result.error = error;
    },
    complete: () => {},
  });
  try {
    for (const payload of payloads) decoding.next(payload); // what cannot be read throws
  } catch (error) {
    return { events: result.events, error };
  }
  if (ending === 'complete') decoding.complete();
  else decoding.error(ending.error);
  return result;
}
