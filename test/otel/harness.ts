// Real OpenTelemetry SDKs with in-memory exporters, and a loopback server for the turns of the otel tests: attempt 1
// speaks Anthropic Messages and is cut mid-sentence (after its input usage came), attempt 2 speaks OpenAI Responses in
// background mode, is cut after its first text and resumed, and ends with two tool calls and its usage.
import type { Attributes } from '@opentelemetry/api';
import { type DataPoint, MeterProvider, type MetricData, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type Span,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { anthropicMessages, openaiResponses } from 'cleanturn/providers';
import { openaiBackground, type StreamTurnOptions } from 'cleanturn/transport';
import { startServer, type TestServer } from '../support/httpServer.js';

/** A metric reader that is read on demand (no timer). */
class ManualReader extends MetricReader {
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
}

/** Records each span's attributes as they were when it started: what a sampler sees. */
class StartAttributes implements SpanProcessor {
  readonly atStart = new Map<string, Attributes>();
  onStart(span: Span): void {
    this.atStart.set(span.spanContext().spanId, { ...span.attributes });
  }
  onEnd(): void {}
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** A tracer and a meter of the real SDKs, and what they recorded. */
export function sdk() {
  const exporter = new InMemorySpanExporter();
  const starts = new StartAttributes();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [starts, new SimpleSpanProcessor(exporter)],
  });
  const reader = new ManualReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    tracer: tracerProvider.getTracer('test'),
    meter: meterProvider.getMeter('test'),
    spans: (): ReadableSpan[] => exporter.getFinishedSpans(),
    /** The attributes a span had when it started. */
    atStart: (span: ReadableSpan): Attributes | undefined => starts.atStart.get(span.spanContext().spanId),
    /** Every metric collected now, by name. */
    async metrics(): Promise<Map<string, MetricData>> {
      const { resourceMetrics } = await reader.collect();
      const byName = new Map<string, MetricData>();
      for (const scope of resourceMetrics.scopeMetrics)
        for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric);
      return byName;
    },
    async shutdown(): Promise<void> {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

/** A metric's points as [attributes, value] pairs: the sum of a counter, the count and sum of a histogram. */
export function pointsOf(metric: MetricData | undefined): { attributes: Attributes; value: unknown }[] {
  if (metric === undefined) return [];
  return (metric.dataPoints as DataPoint<unknown>[]).map((p) => ({
    attributes: p.attributes,
    value: p.value,
  }));
}

/** The refund's arguments, and the e-mail's. */
export const refund = { order_id: 'ORD-7781', amount: 'full' };
export const email = { to: 'ada@example.com', template: 'refund-started' };

const sse = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** Attempt 1, Anthropic Messages: its start (with the input usage), two text fragments, then the cut. */
const anthropicPrefix =
  sse('message_start', {
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [],
      usage: {
        input_tokens: 412,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 100,
        output_tokens: 2,
      },
    },
  }) +
  sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
  sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Checking order ORD-7781. ' } }) +
  sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Refunding the dam' } });
const anthropicRest =
  sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'aged book.' } }) +
  sse('content_block_stop', { index: 0 }) +
  sse('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 31 } }) +
  sse('message_stop', {});

/** The text attempt 2 streams before its cut, and after it. */
export const beforeCut = 'Checking order ORD-7781. ';
export const afterCut = 'I have started a full refund and e-mailed you.';

/** The Responses events of attempt 2, numbered. */
function responsesEvents(): string[] {
  const response = { id: 'resp_7', object: 'response', status: 'in_progress', model: 'gpt-4.1', output: [] };
  const message = { id: 'msg_7', type: 'message', role: 'assistant' };
  const at = { item_id: 'msg_7', output_index: 0, content_index: 0 };
  const text = beforeCut + afterCut;
  const part = { type: 'output_text', text, annotations: [] };
  const call = (index: number, id: string, callId: string, name: string, args: unknown) => {
    const item = { id, type: 'function_call', call_id: callId, name };
    const json = JSON.stringify(args);
    return [
      [
        'response.output_item.added',
        { output_index: index, item: { ...item, arguments: '', status: 'in_progress' } },
      ],
      ['response.function_call_arguments.delta', { item_id: id, output_index: index, delta: json }],
      ['response.function_call_arguments.done', { item_id: id, output_index: index, arguments: json }],
      [
        'response.output_item.done',
        { output_index: index, item: { ...item, arguments: json, status: 'completed' } },
      ],
    ] as const;
  };
  const events: (readonly [string, Record<string, unknown>])[] = [
    ['response.created', { response }],
    ['response.in_progress', { response }],
    [
      'response.output_item.added',
      { output_index: 0, item: { ...message, status: 'in_progress', content: [] } },
    ],
    ['response.content_part.added', { ...at, part: { type: 'output_text', text: '' } }],
    ['response.output_text.delta', { ...at, delta: beforeCut }],
    ['response.output_text.delta', { ...at, delta: afterCut }],
    ['response.output_text.done', { ...at, text }],
    ['response.content_part.done', { ...at, part }],
    [
      'response.output_item.done',
      { output_index: 0, item: { ...message, status: 'completed', content: [part] } },
    ],
    ...call(1, 'fc_1', 'call_c7', 'issue_refund', refund),
    ...call(2, 'fc_2', 'call_c8', 'send_email', email),
    [
      'response.completed',
      {
        response: {
          ...response,
          status: 'completed',
          usage: {
            input_tokens: 142,
            input_tokens_details: { cached_tokens: 40 },
            output_tokens: 58,
            output_tokens_details: { reasoning_tokens: 12 },
            total_tokens: 200,
          },
        },
      },
    ],
  ];
  return events.map(([type, data], sequence) => sse(type, { ...data, sequence_number: sequence }));
}

/** The sequence number of the last event attempt 2's first connection delivers before its cut. */
export const cutAfter = 4;

/** Options of the help-desk server: what attempt 2's connections do. */
export interface HelpDeskOptions {
  /** Keep the resumed connection open after its first event instead of ending the response (an unsubscribe test). */
  holdResume?: boolean;
}

type AttemptPlan = ReturnType<NonNullable<StreamTurnOptions['plan']>>;

/** Starts the server of the help-desk turn. */
export function startHelpDesk(options: HelpDeskOptions = {}): Promise<TestServer> {
  const events = responsesEvents();
  const created = events.slice(0, cutAfter + 1).join('');
  return startServer((_n, req) => {
    const url = req.url ?? '/';
    if (req.method === 'POST' && url === '/v1/messages')
      return { body: anthropicPrefix + anthropicRest, destroyAfter: Buffer.byteLength(anthropicPrefix) };
    if (req.method === 'POST' && url === '/v1/responses')
      return { body: created + events[cutAfter + 1], destroyAfter: Buffer.byteLength(created) };
    const resumed = /^\/v1\/responses\/resp_7\?stream=true&starting_after=(\d+)$/.exec(url);
    if (req.method === 'GET' && resumed !== null) {
      const rest = events.slice(Number(resumed[1]) + 1);
      if (options.holdResume) return { body: '', stream: () => rest.slice(0, 1), hold: true };
      return { body: rest.join('') };
    }
    if (req.method === 'POST' && url === '/v1/responses/resp_7/cancel')
      return { status: 200, headers: { 'content-type': 'application/json' }, body: '{"id":"resp_7"}' };
    return {
      status: 404,
      headers: { 'content-type': 'application/json' },
      body: '{"error":{"message":"no"}}',
    };
  });
}

/** The plan of the help-desk turn: Anthropic first, then OpenAI Responses in background mode. */
export function helpDeskPlan(server: TestServer): (context: { attempt: number }) => AttemptPlan {
  const post = (path: string, body: unknown, signal: AbortSignal) => ({
    url: `${server.url}${path}`,
    init: {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal,
    },
  });
  return ({ attempt }) =>
    attempt === 1
      ? {
          provider: 'anthropic',
          model: 'claude-sonnet-4-5',
          adapter: anthropicMessages(),
          request: ({ signal }) => post('/v1/messages', { model: 'claude-sonnet-4-5', stream: true }, signal),
        }
      : {
          provider: 'openai',
          model: 'gpt-4.1',
          adapter: openaiResponses(),
          resume: openaiBackground({ baseUrl: `${server.url}/v1` }),
          request: ({ signal }) =>
            post('/v1/responses', { model: 'gpt-4.1', background: true, stream: true }, signal),
        };
}
