import {
  type Attributes,
  type Context,
  type Counter,
  context,
  type Histogram,
  type Meter,
  metrics,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { AssembledEvent } from '../assembleToolCalls.js';
import { checkOption } from '../internal/options.js';
import {
  type AttemptScope,
  quietly,
  type ToolObserver,
  type ToolScope,
  type TurnObserver,
  type TurnOutcome,
  type TurnScope,
} from '../internal/telemetry.js';
import type { ProviderEvent, UsageEvent } from '../types.js';

/**
 * Options of {@link turnTelemetry}.
 *
 * @inline
 */
export interface TurnTelemetryOptions {
  /** Where the spans go. Default: `trace.getTracer('cleanturn')` of the global tracer provider. */
  tracer?: Tracer;
  /** Where the metrics go. Default: `metrics.getMeter('cleanturn')` of the global meter provider. */
  meter?: Meter;
  /**
   * Record what the model and the tools said: each attempt's output (`gen_ai.output.messages`: its reasoning, text
   * and tool calls), each tool run's arguments and result (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`).
   * They may hold personal data. Default: false, none of it.
   */
  captureContent?: boolean;
}

/**
 * An observer of turns and of tool runs: pass the same object as `telemetry` to `streamTurn` and to `executeTools`.
 *
 * @inline
 */
export interface TurnTelemetry extends TurnObserver, ToolObserver {}

/** The operation of an attempt, of a resume, and of a tool run (`gen_ai.operation.name`). */
const CHAT = 'chat';
const FETCH_RESPONSE = 'fetch_response';
const EXECUTE_TOOL = 'execute_tool';

/** The buckets the conventions give for the inference durations, in seconds. */
const DURATION_BUCKETS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/** How many ended turns stay known as the parents of tool runs that start after their turn ended. */
const RECENT_TURNS = 256;

/**
 * OpenTelemetry tracing and metrics of cleanturn turns, by the GenAI semantic conventions: pass what it returns as
 * `telemetry` to `streamTurn` of `cleanturn/transport` and to `executeTools` of `cleanturn/effects`.
 *
 * Each run of a turn is an INTERNAL span `cleanturn.turn`; under it each attempt is a CLIENT span
 * `chat {gen_ai.request.model}`, from its request to its end, with the provider, model, server, response id,
 * finish reasons and token usage; each resume of a cut attempt is a CLIENT span `fetch_response {model}` under its
 * attempt, without token usage (the same generation, billed once). Each tool handler that runs now is an INTERNAL
 * span `execute_tool {gen_ai.tool.name}` under its turn; a call answered from the effect ledger never gets one, and
 * no effect key (nor anything made of one) is recorded. Attempt numbers, resets and replays, which the conventions
 * leave out, go under `cleanturn.*`. Metrics: `gen_ai.client.inference.duration`,
 * `gen_ai.client.inference.time_to_first_chunk`, the `gen_ai.client.inference.usage.*` token counters (abandoned
 * attempts too: they were billed), `gen_ai.execute_tool.duration`, and the counters `cleanturn.attempts`,
 * `cleanturn.resets`, `cleanturn.resumes` and `cleanturn.tool.replays`. See the observability guide for every name.
 *
 * A tracer or meter that throws never breaks a turn: what it throws is dropped.
 *
 * ## Example
 * ```ts
 * import { turnTelemetry } from 'cleanturn/otel';
 * import { executeTools } from 'cleanturn/effects';
 * import { openaiChat } from 'cleanturn/providers';
 * import { streamTurn } from 'cleanturn/transport';
 *
 * const telemetry = turnTelemetry(); // the global tracer and meter providers
 * streamTurn({
 *   turnId: 'turn-42',
 *   plan: () => ({
 *     provider: 'openai',
 *     model: 'gpt-4.1',
 *     adapter: openaiChat(),
 *     request: ({ signal }) => ({
 *       url: 'https://api.openai.com/v1/chat/completions',
 *       init: { method: 'POST', body: JSON.stringify({ model: 'gpt-4.1', messages: [], stream: true }), signal },
 *     }),
 *   }),
 *   telemetry,
 * })
 *   .pipe(executeTools({ lookup_order: async () => ({ status: 'shipped' }) }, { turnId: 'turn-42', telemetry }))
 *   .subscribe();
 * ```
 *
 * @param options The tracer and meter (default: the global providers'), and `captureContent`.
 * @returns The observer, for both `telemetry` options.
 */
export function turnTelemetry(options: TurnTelemetryOptions = {}): TurnTelemetry {
  checkOptions(options);
  const tracer = options.tracer ?? quietly(() => trace.getTracer('cleanturn'));
  const meter = options.meter ?? quietly(() => metrics.getMeter('cleanturn'));
  const capture = options.captureContent === true;
  const instruments = meter === undefined ? undefined : instrumentsOf(meter);
  const spans = spanMaker(tracer);
  // The running turns by id, and the contexts of the last ones that ended: the parents of their tool runs.
  const turns = new Map<string, TurnRecord>();
  const recent = new Map<string, Context | undefined>();

  return {
    turn: ({ turnId }) => {
      const turn = new TurnRecord(spans, instruments, capture, turnId);
      turns.set(turnId, turn);
      turn.onEnd = () => {
        if (turns.get(turnId) === turn) turns.delete(turnId);
        recent.delete(turnId);
        recent.set(turnId, turn.context);
        if (recent.size > RECENT_TURNS) {
          const oldest = recent.keys().next().value;
          if (oldest !== undefined) recent.delete(oldest);
        }
      };
      return turn;
    },
    run: ({ turnId, name, callId, args }) => {
      const parent = turns.has(turnId) ? turns.get(turnId)?.context : recent.get(turnId);
      return new ToolRun(spans, instruments, capture, parent, { name, callId, args });
    },
    replayed: ({ turnId, name, callId, failed }) => {
      const attributes: Attributes = {
        'gen_ai.tool.name': name,
        'cleanturn.tool.outcome': failed ? 'failed' : 'replayed',
      };
      quietly(() => instruments?.toolReplays.add(1, attributes));
      turns.get(turnId)?.noteReplay(name, callId);
    },
  };
}

/** `turnTelemetry`'s options: an object, with a tracer and a meter of the API's shape, and a boolean. */
function checkOptions(options: unknown): asserts options is TurnTelemetryOptions {
  checkOption(
    typeof options === 'object' && options !== null,
    'turnTelemetry',
    'options',
    'an object ({ tracer?, meter?, captureContent? })',
    options,
  );
  const { tracer, meter, captureContent } = options as Record<string, unknown>;
  checkOption(
    tracer === undefined || hasMethods(tracer, 'startSpan'),
    'turnTelemetry',
    'tracer',
    'an OpenTelemetry Tracer (with startSpan)',
    tracer,
  );
  checkOption(
    meter === undefined || hasMethods(meter, 'createHistogram', 'createCounter'),
    'turnTelemetry',
    'meter',
    'an OpenTelemetry Meter (with createHistogram and createCounter)',
    meter,
  );
  checkOption(
    captureContent === undefined || typeof captureContent === 'boolean',
    'turnTelemetry',
    'captureContent',
    'a boolean',
    captureContent,
  );
}

function hasMethods(value: unknown, ...methods: string[]): boolean {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    methods.every((m) => typeof (value as Record<string, unknown>)[m] === 'function')
  );
}

/** The instruments of one {@link turnTelemetry}. */
interface Instruments {
  duration: Histogram;
  firstChunk: Histogram;
  inputTokens: Counter;
  outputTokens: Counter;
  cacheReadTokens: Counter;
  reasoningTokens: Counter;
  toolDuration: Histogram;
  attempts: Counter;
  resets: Counter;
  resumes: Counter;
  toolReplays: Counter;
}

/** The instruments on `meter`, or undefined when the meter throws. */
function instrumentsOf(meter: Meter): Instruments | undefined {
  return quietly(() => {
    const seconds = (name: string, description: string) =>
      meter.createHistogram(name, {
        unit: 's',
        description,
        advice: { explicitBucketBoundaries: DURATION_BUCKETS },
      });
    const counter = (name: string, unit: string, description: string) =>
      meter.createCounter(name, { unit, description });
    const tokens = (name: string, description: string) => counter(name, '{token}', description);
    return {
      duration: seconds('gen_ai.client.inference.duration', 'GenAI client inference operation duration.'),
      firstChunk: seconds(
        'gen_ai.client.inference.time_to_first_chunk',
        'Time from the request to the first chunk of the response stream.',
      ),
      inputTokens: tokens(
        'gen_ai.client.inference.usage.input_tokens',
        'Input tokens used, cached ones included.',
      ),
      outputTokens: tokens(
        'gen_ai.client.inference.usage.output_tokens',
        'Output tokens used, reasoning ones included.',
      ),
      cacheReadTokens: tokens(
        'gen_ai.client.inference.usage.cache_read.input_tokens',
        'Input tokens served from the provider cache.',
      ),
      reasoningTokens: tokens(
        'gen_ai.client.inference.usage.reasoning.output_tokens',
        'Output tokens used for reasoning.',
      ),
      toolDuration: seconds('gen_ai.execute_tool.duration', 'Tool execution duration.'),
      attempts: counter('cleanturn.attempts', '{attempt}', 'Attempts of turns, by how they ended.'),
      resets: counter('cleanturn.resets', '{reset}', 'Attempts abandoned for a retry.'),
      resumes: counter('cleanturn.resumes', '{resume}', 'Cut connections resumed within their attempt.'),
      toolReplays: counter(
        'cleanturn.tool.replays',
        '{call}',
        'Tool calls answered from the effect ledger instead of running their handler.',
      ),
    };
  });
}

/** Starts spans on `tracer`, dropping what it throws (then there is no span: every use checks). */
function spanMaker(tracer: Tracer | undefined) {
  return (
    name: string,
    kind: SpanKind,
    attributes: Attributes,
    parent: Context | undefined,
  ): Span | undefined =>
    tracer === undefined
      ? undefined
      : quietly(() => tracer.startSpan(name, { kind, attributes }, parent ?? context.active()));
}

type SpanMaker = ReturnType<typeof spanMaker>;

/**
 * A low-cardinality name for what ended an operation (`error.type`): a cleanturn error's `code`, else the error's
 * class name, else `_OTHER`.
 */
function errorTypeOf(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const code = quietly(() => (error as { code?: unknown }).code);
    if (typeof code === 'string' && code !== '') return code;
    const name = quietly(() => (error as { name?: unknown }).name);
    if (typeof name === 'string' && name !== '') return name;
  }
  return '_OTHER';
}

/** A finish reason in the vocabulary of the conventions' examples (`tool_calls`, `content_filter`). */
function finishReasonOf(reason: string): string {
  return reason.replace(/-/g, '_');
}

/** Content as the conventions record it on spans when structured attributes are not supported: JSON text. */
function jsonOf(value: unknown): string | undefined {
  return quietly(() => {
    const text = JSON.stringify(value);
    return typeof text === 'string' ? text : undefined;
  });
}

/** Ends a span with an error: `error.type` and status ERROR. */
function failSpan(span: Span, errorType: string, message?: string): void {
  span.setAttribute('error.type', errorType);
  span.setStatus(
    message === undefined ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message },
  );
}

/** The error's message, for a span's status. */
function messageOf(error: unknown): string | undefined {
  const message = quietly(() => (error as { message?: unknown } | undefined)?.message);
  return typeof message === 'string' ? message : undefined;
}

/** One run of a turn: its span, its attempts, and what it counts. */
class TurnRecord implements TurnScope {
  /** The turn's span, and the context its children start in. */
  readonly span: Span | undefined;
  readonly context: Context | undefined;
  /** Called once when the turn ends. */
  onEnd: (() => void) | undefined;
  /** An attempt that failed or was abandoned, until the reset or the turn's end that says why. */
  #pending: AttemptRecord | undefined;
  /** Attempts that are open (requested, not ended). */
  readonly #open = new Set<AttemptRecord>();
  /** Call ids noted as replayed on the turn's span. */
  readonly #replayed = new Set<string>();
  #attempts = 0;
  #resets = 0;
  #ended = false;

  constructor(
    private readonly spans: SpanMaker,
    private readonly instruments: Instruments | undefined,
    private readonly capture: boolean,
    turnId: string,
  ) {
    this.span = spans('cleanturn.turn', SpanKind.INTERNAL, { 'cleanturn.turn.id': turnId }, undefined);
    const span = this.span;
    this.context = span === undefined ? undefined : quietly(() => trace.setSpan(context.active(), span));
  }

  attempt(info: { attempt: number; provider?: string; model?: string; url?: string }): AttemptScope {
    // A request issued after its turn ended (streamTurn never does that): nothing to trace.
    if (this.#ended) return { event: () => undefined, end: () => undefined };
    this.#attempts++;
    const record = new AttemptRecord(this.spans, this.instruments, this.capture, this.context, info, this);
    this.#open.add(record);
    return record;
  }

  /** An attempt ended: finished ones are closed at once, the others wait for their reason. */
  attemptEnded(record: AttemptRecord, finished: boolean): void {
    this.#open.delete(record);
    if (finished) return;
    this.#pending?.close(undefined);
    this.#pending = record;
  }

  event(event: { type: string; attempt?: number; reason?: string; name?: string; id?: string }): void {
    if (this.#ended) return;
    if (event.type === 'reset') {
      this.#resets++;
      const pending = this.#pending;
      this.#pending = undefined;
      const attributes: Attributes = {
        'cleanturn.attempt': event.attempt ?? 0,
        'cleanturn.reset.reason': event.reason ?? '',
      };
      const errorType = pending?.errorType;
      const counted: Attributes = { ...pending?.attributes };
      if (errorType !== undefined) counted['error.type'] = errorType;
      quietly(() => this.instruments?.resets.add(1, counted));
      if (pending !== undefined) pending.close(attributes);
      else quietly(() => this.span?.addEvent('cleanturn.reset', attributes));
    } else if (event.type === 'tool-call-repeat' && event.name !== undefined && event.id !== undefined) {
      this.noteReplay(event.name, event.id);
    }
  }

  /** Notes on the turn's span, while it is open, that a call was answered with its recorded outcome. */
  noteReplay(name: string, callId: string): void {
    if (this.#ended || this.#replayed.has(callId)) return;
    this.#replayed.add(callId);
    quietly(() =>
      this.span?.addEvent('cleanturn.tool.replayed', {
        'gen_ai.tool.name': name,
        'gen_ai.tool.call.id': callId,
      }),
    );
  }

  end(outcome: TurnOutcome, error?: unknown): void {
    if (this.#ended) return;
    // Attempts still open (they end before the turn; this is in case one did not say so), then the one waiting.
    for (const record of [...this.#open]) record.end({ abandoned: true });
    const reason = error === undefined ? (outcome === 'completed' ? undefined : outcome) : errorTypeOf(error);
    this.#pending?.close(undefined, reason);
    this.#pending = undefined;
    this.#ended = true;
    const span = this.span;
    if (span !== undefined)
      quietly(() => {
        span.setAttributes({
          'cleanturn.turn.outcome': outcome,
          'cleanturn.attempts': this.#attempts,
          'cleanturn.resets': this.#resets,
        });
        if ((outcome === 'failed' || outcome === 'stopped') && error !== undefined)
          failSpan(span, errorTypeOf(error), messageOf(error));
      });
    quietly(() => span?.end());
    quietly(() => this.onEnd?.());
  }
}

/** One attempt: its span, its resumes, its usage, and its metrics. */
class AttemptRecord implements AttemptScope {
  readonly #span: Span | undefined;
  readonly #context: Context | undefined;
  /** The standard attributes of the attempt's metrics. */
  readonly #attributes: Attributes;
  readonly #model: string | undefined;
  readonly #started = performance.now();
  /** The live resume's span and when it started. */
  #resume: { span: Span | undefined; started: number } | undefined;
  #resumes = 0;
  #firstChunk = false;
  #usage: Omit<UsageEvent, 'type'> | undefined;
  #finish: string | undefined;
  #responseId: string | undefined;
  /** The output, kept only when content is captured. */
  readonly #parts: Record<string, unknown>[] = [];
  /** The error that ended it, or undefined; set when it ends; and whether it was abandoned without one. */
  #error: unknown;
  #abandoned = false;
  /** Whether it ended (told by streamTurn), and whether its span was closed. */
  #ended = false;
  #closed = false;

  constructor(
    private readonly spans: SpanMaker,
    private readonly instruments: Instruments | undefined,
    private readonly capture: boolean,
    parent: Context | undefined,
    info: { attempt: number; provider?: string; model?: string; url?: string },
    private readonly turn: TurnRecord,
  ) {
    const attributes: Attributes = { 'gen_ai.operation.name': CHAT };
    if (info.provider !== undefined) attributes['gen_ai.provider.name'] = info.provider;
    if (info.model !== undefined) attributes['gen_ai.request.model'] = info.model;
    const server = info.url === undefined ? undefined : serverOf(info.url);
    if (server !== undefined) {
      attributes['server.address'] = server.address;
      attributes['server.port'] = server.port;
    }
    this.#attributes = attributes;
    this.#model = info.model;
    this.#span = spans(
      nameOf(CHAT, info.model),
      SpanKind.CLIENT,
      {
        ...attributes,
        'gen_ai.request.stream': true,
        'cleanturn.attempt': info.attempt,
      },
      parent,
    );
    const span = this.#span;
    this.#context =
      span === undefined ? undefined : quietly(() => trace.setSpan(parent ?? context.active(), span));
  }

  /** The standard attributes of its metrics. */
  get attributes(): Attributes {
    return this.#attributes;
  }

  /** `error.type` of its end: what ended it, once it ended otherwise than finished. */
  get errorType(): string | undefined {
    return this.#error === undefined ? undefined : errorTypeOf(this.#error);
  }

  event(event: AssembledEvent<ProviderEvent>): void {
    if (this.#ended) return;
    if (!this.#firstChunk) {
      this.#firstChunk = true;
      const seconds = (performance.now() - this.#started) / 1000;
      quietly(() => this.#span?.setAttribute('gen_ai.response.time_to_first_chunk', seconds));
      quietly(() => this.instruments?.firstChunk.record(seconds, this.#attributes));
    }
    switch (event.type) {
      case 'usage': {
        const { type: _, ...counts } = event;
        this.#usage = { ...this.#usage, ...counts };
        return;
      }
      case 'finish':
        this.#finish = finishReasonOf(event.reason);
        if (event.responseId !== undefined) this.#responseId = event.responseId;
        return;
      case 'resumable':
        this.#responseId ??= event.responseId;
        return;
      case 'resume':
        this.#startResume(event.after);
        return;
      case 'text':
      case 'reasoning':
        if (this.capture) this.#append(event.type, event.text);
        return;
      case 'tool-call':
        if (this.capture)
          this.#parts.push({ type: 'tool_call', id: event.id, name: event.name, arguments: event.args });
        return;
    }
  }

  /** Appends a fragment of text or reasoning to the captured output. */
  #append(type: 'text' | 'reasoning', text: string): void {
    const last = this.#parts[this.#parts.length - 1];
    if (last !== undefined && last.type === type) last.content = `${String(last.content)}${text}`;
    else this.#parts.push({ type, content: text });
  }

  /** A cut connection is resumed: the last resume (cut too) ends, and a `fetch_response` span starts. */
  #startResume(after: number): void {
    this.#endResume('connection_cut');
    this.#resumes++;
    quietly(() => this.#span?.addEvent('cleanturn.resume', { 'cleanturn.resume.after': after }));
    quietly(() => this.instruments?.resumes.add(1, this.#attributes));
    const attributes: Attributes = { ...this.#attributes, 'gen_ai.operation.name': FETCH_RESPONSE };
    if (this.#responseId !== undefined) attributes['gen_ai.response.id'] = this.#responseId;
    attributes['cleanturn.resume.after'] = after;
    const span = this.spans(nameOf(FETCH_RESPONSE, this.#model), SpanKind.CLIENT, attributes, this.#context);
    this.#resume = { span, started: performance.now() };
  }

  /** Ends the live resume's span, with the error type of what ended it (none: the response was read to its end). */
  #endResume(errorType: string | undefined, message?: string): void {
    const resume = this.#resume;
    if (resume === undefined) return;
    this.#resume = undefined;
    const seconds = (performance.now() - resume.started) / 1000;
    const attributes: Attributes = { ...this.#attributes, 'gen_ai.operation.name': FETCH_RESPONSE };
    if (errorType !== undefined) attributes['error.type'] = errorType;
    quietly(() => this.instruments?.duration.record(seconds, attributes));
    const span = resume.span;
    if (span === undefined) return;
    quietly(() => {
      if (errorType !== undefined) failSpan(span, errorType, message);
    });
    quietly(() => span.end());
  }

  end(result: { error?: unknown; abandoned?: boolean }): void {
    if (this.#ended) return;
    this.#ended = true;
    const finished = result.error === undefined && result.abandoned !== true;
    this.#error = result.error;
    if (result.abandoned === true) this.#abandoned = true;
    this.turn.attemptEnded(this, finished);
    if (finished) this.close(undefined);
  }

  /**
   * Closes the span and records the metrics: after a finish, after the reset that abandoned it (`reset`: the
   * attributes of its `cleanturn.reset` event), or at the turn's end (`reason`: the turn's outcome or error type,
   * for an attempt abandoned without an error of its own).
   */
  close(reset: Attributes | undefined, reason?: string): void {
    if (this.#closed) return;
    this.#closed = true;
    const failed = this.#error !== undefined || this.#abandoned;
    const errorType =
      this.#error !== undefined ? errorTypeOf(this.#error) : failed ? (reason ?? 'cancelled') : undefined;
    const message = this.#error === undefined ? undefined : messageOf(this.#error);
    this.#endResume(errorType, message);
    const seconds = (performance.now() - this.#started) / 1000;
    const outcome = !failed
      ? 'finished'
      : reset !== undefined
        ? 'abandoned'
        : this.#abandoned
          ? 'abandoned'
          : 'failed';
    this.#record(seconds, errorType, outcome);
    this.#endSpan(outcome, reset, errorType, message);
  }

  /** The attempt's metric points: its duration, its tokens (abandoned attempts were billed too), its outcome. */
  #record(seconds: number, errorType: string | undefined, outcome: string): void {
    const instruments = this.instruments;
    if (instruments === undefined) return;
    const metricAttributes: Attributes =
      errorType === undefined ? this.#attributes : { ...this.#attributes, 'error.type': errorType };
    quietly(() => {
      instruments.duration.record(seconds, metricAttributes);
      // Every attempt's tokens count, abandoned ones too (they were billed); 0 when no usage arrived.
      const tokens = { ...this.#attributes, 'gen_ai.token.modality': 'unknown' };
      instruments.inputTokens.add(this.#usage?.inputTokens ?? 0, tokens);
      instruments.outputTokens.add(this.#usage?.outputTokens ?? 0, tokens);
      if (this.#usage?.cachedInputTokens !== undefined)
        instruments.cacheReadTokens.add(this.#usage.cachedInputTokens, tokens);
      if (this.#usage?.reasoningTokens !== undefined)
        instruments.reasoningTokens.add(this.#usage.reasoningTokens, tokens);
      instruments.attempts.add(1, { ...this.#attributes, 'cleanturn.attempt.outcome': outcome });
    });
  }

  /** The span's closing attributes (finish, response id, usage, content when captured), its reset event, its end. */
  #endSpan(
    outcome: string,
    reset: Attributes | undefined,
    errorType: string | undefined,
    message?: string,
  ): void {
    const span = this.#span;
    if (span === undefined) return;
    quietly(() => {
      const attributes: Attributes = {
        // The expected finish never came: `error` in its place.
        'gen_ai.response.finish_reasons': [this.#finish ?? 'error'],
        'cleanturn.attempt.outcome': outcome,
        'cleanturn.resumes': this.#resumes,
      };
      if (this.#responseId !== undefined) attributes['gen_ai.response.id'] = this.#responseId;
      const usage = this.#usage;
      if (usage?.inputTokens !== undefined) attributes['gen_ai.usage.input_tokens'] = usage.inputTokens;
      if (usage?.outputTokens !== undefined) attributes['gen_ai.usage.output_tokens'] = usage.outputTokens;
      if (usage?.cachedInputTokens !== undefined)
        attributes['gen_ai.usage.cache_read.input_tokens'] = usage.cachedInputTokens;
      if (usage?.reasoningTokens !== undefined)
        attributes['gen_ai.usage.reasoning.output_tokens'] = usage.reasoningTokens;
      if (this.capture) {
        const message: Record<string, unknown> = {
          role: 'assistant',
          parts: this.#parts,
          finish_reason: this.#finish ?? 'error',
        };
        const text = jsonOf([message]);
        if (text !== undefined) attributes['gen_ai.output.messages'] = text;
      }
      span.setAttributes(attributes);
    });
    if (reset !== undefined) quietly(() => span.addEvent('cleanturn.reset', reset));
    if (errorType !== undefined) quietly(() => failSpan(span, errorType, message));
    quietly(() => span.end());
  }
}

/** One run of a tool handler: its span and its duration. */
class ToolRun implements ToolScope {
  readonly #span: Span | undefined;
  readonly #attributes: Attributes;
  readonly #started = performance.now();
  #ended = false;

  constructor(
    spans: SpanMaker,
    private readonly instruments: Instruments | undefined,
    private readonly capture: boolean,
    parent: Context | undefined,
    info: { name: string; callId: string; args: unknown },
  ) {
    this.#attributes = {
      'gen_ai.operation.name': EXECUTE_TOOL,
      'gen_ai.tool.name': info.name,
      'gen_ai.tool.type': 'function',
    };
    const attributes: Attributes = { ...this.#attributes, 'gen_ai.tool.call.id': info.callId };
    if (capture) {
      const args = jsonOf(info.args);
      if (args !== undefined) attributes['gen_ai.tool.call.arguments'] = args;
    }
    this.#span = spans(nameOf(EXECUTE_TOOL, info.name), SpanKind.INTERNAL, attributes, parent);
  }

  end(result: { error?: unknown; result?: unknown; abandoned?: boolean }): void {
    if (this.#ended) return;
    this.#ended = true;
    const errorType =
      result.error !== undefined
        ? errorTypeOf(result.error)
        : result.abandoned === true
          ? 'cancelled'
          : undefined;
    const seconds = (performance.now() - this.#started) / 1000;
    quietly(() =>
      this.instruments?.toolDuration.record(
        seconds,
        errorType === undefined ? this.#attributes : { ...this.#attributes, 'error.type': errorType },
      ),
    );
    const span = this.#span;
    if (span === undefined) return;
    quietly(() => {
      if (errorType !== undefined) failSpan(span, errorType, messageOf(result.error));
      else if (this.capture) {
        const text = jsonOf(result.result);
        if (text !== undefined) span.setAttribute('gen_ai.tool.call.result', text);
      }
    });
    quietly(() => span.end());
  }
}

/** A span's name by the conventions: `{operation} {target}`, or the operation alone without a target. */
function nameOf(operation: string, target: string | undefined): string {
  return target === undefined || target === '' ? operation : `${operation} ${target}`;
}

/** `server.address` and `server.port` of a URL (its scheme's default port when it names none). */
function serverOf(url: string): { address: string; port: number } | undefined {
  return quietly(() => {
    const parsed = new URL(url);
    const port = parsed.port !== '' ? Number(parsed.port) : parsed.protocol === 'http:' ? 80 : 443;
    const address = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
    return address === '' ? undefined : { address, port };
  });
}
