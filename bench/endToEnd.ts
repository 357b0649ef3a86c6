// Item 2: end to end from bytes. A 100,000-event SSE body (text deltas and a tool call in about 1,000 argument
// fragments), read in 16 KiB pieces through a custom `fetch`, to the final clean turn. Against a parsing floor per
// wire format (eventsource-parser + JSON.parse + the concatenation the format needs), in the five formats: OpenAI
// Chat Completions, Anthropic Messages, OpenAI Responses, Gemini (Vertex AI's streamed arguments) and the AI SDK's
// UI message stream; for the first two also against the official SDK's stream helper.

import Anthropic from '@anthropic-ai/sdk';
import type { ProviderEvent } from 'cleanturn';
import { createParser } from 'eventsource-parser';
import OpenAI from 'openai';
import { count, lastValueFrom, type Observable, type OperatorFunction } from 'rxjs';
import type { Package } from './build.js';
import { compare, type Measured, pick, rate, ratio, same, times, type Variant } from './harness.js';
import {
  aiSdkBody,
  anthropicBody,
  type FinalTurn,
  fetchServing,
  geminiBody,
  openaiBody,
  responsesBody,
  type SseBody,
} from './sse.js';

const url = 'https://bench.invalid/v1/stream';

/** The fields of a Chat Completions chunk that the floor reads. */
interface ChatChunk {
  choices?: {
    delta?: {
      content?: string | null;
      tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[];
    };
  }[];
}

/** The fields of an Anthropic stream event that the floor reads. */
interface AnthropicEvent {
  type: string;
  index?: number;
  content_block?: { type: string; id?: string; name?: string };
  delta?: { type: string; text?: string; partial_json?: string };
}

/** The fields of an OpenAI Responses stream event that the floor reads. */
interface ResponsesEvent {
  type: string;
  delta?: string;
  item?: { type: string; call_id?: string; name?: string };
}

/** The fields of a Gemini chunk that the floor reads. */
interface GeminiChunk {
  candidates?: {
    content?: {
      parts?: {
        text?: string;
        thought?: boolean;
        functionCall?: {
          id?: string;
          name?: string;
          partialArgs?: { jsonPath: string; stringValue?: string }[];
        };
      }[];
    };
  }[];
}

/** The fields of an AI SDK UI message chunk that the floor reads. */
interface AiSdkChunk {
  type: string;
  delta?: string;
  toolCallId?: string;
  toolName?: string;
  input?: unknown;
}

/** Reads a body through `fetch`, decodes it and feeds each piece to `feed`; the floor's transport. */
async function readBody(doFetch: typeof fetch, feed: (text: string) => void): Promise<void> {
  const response = await doFetch(url);
  if (response.body === null) throw new Error('no body');
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    feed(decoder.decode(value, { stream: true }));
  }
  feed(decoder.decode());
}

/** The floor for Chat Completions: eventsource-parser, JSON.parse, string concatenation; nothing else. */
async function openaiFloor(doFetch: typeof fetch): Promise<FinalTurn> {
  let text = '';
  let id = '';
  let name = '';
  let args = '';
  const parser = createParser({
    onEvent(event) {
      if (event.data === '[DONE]') return;
      const delta = (JSON.parse(event.data) as ChatChunk).choices?.[0]?.delta;
      if (delta === undefined) return;
      if (delta.content) text += delta.content;
      const call = delta.tool_calls?.[0];
      if (call !== undefined) {
        if (call.id) id = call.id;
        if (call.function?.name) name = call.function.name;
        if (call.function?.arguments) args += call.function.arguments;
      }
    },
  });
  await readBody(doFetch, (piece) => parser.feed(piece));
  return { text, calls: [{ id, name, args: JSON.parse(args) }] };
}

/** The floor for Anthropic Messages. */
async function anthropicFloor(doFetch: typeof fetch): Promise<FinalTurn> {
  let text = '';
  let id = '';
  let name = '';
  let args = '';
  const parser = createParser({
    onEvent(message) {
      const event = JSON.parse(message.data) as AnthropicEvent;
      if (event.type === 'content_block_delta') {
        if (event.delta?.type === 'text_delta') text += event.delta.text;
        else if (event.delta?.type === 'input_json_delta') args += event.delta.partial_json;
      } else if (event.type === 'content_block_start' && event.content_block?.type === 'tool_use') {
        id = event.content_block.id ?? '';
        name = event.content_block.name ?? '';
      }
    },
  });
  await readBody(doFetch, (piece) => parser.feed(piece));
  return { text, calls: [{ id, name, args: JSON.parse(args) }] };
}

/** The floor for OpenAI Responses: the text deltas, the call's id and name from its item, the argument deltas. */
async function responsesFloor(doFetch: typeof fetch): Promise<FinalTurn> {
  let text = '';
  let id = '';
  let name = '';
  let args = '';
  const parser = createParser({
    onEvent(message) {
      const event = JSON.parse(message.data) as ResponsesEvent;
      if (event.type === 'response.output_text.delta') text += event.delta;
      else if (event.type === 'response.function_call_arguments.delta') args += event.delta;
      else if (event.type === 'response.output_item.added' && event.item?.type === 'function_call') {
        id = event.item.call_id ?? '';
        name = event.item.name ?? '';
      }
    },
  });
  await readBody(doFetch, (piece) => parser.feed(piece));
  return { text, calls: [{ id, name, args: JSON.parse(args) }] };
}

/**
 * The floor for Gemini with streamed arguments: the text parts, and each argument's string pieces joined by its
 * JSON path (`$.name`, one level: what this body sends). The call has no id on the wire; it gets the neutral one.
 */
async function geminiFloor(doFetch: typeof fetch): Promise<FinalTurn> {
  let text = '';
  let name = '';
  const values: Record<string, string> = {};
  const parser = createParser({
    onEvent(message) {
      const parts = (JSON.parse(message.data) as GeminiChunk).candidates?.[0]?.content?.parts;
      if (parts === undefined) return;
      for (const part of parts) {
        if (part.text !== undefined && part.thought !== true) text += part.text;
        const call = part.functionCall;
        if (call === undefined) continue;
        if (call.name !== undefined) name = call.name;
        for (const partial of call.partialArgs ?? []) {
          const key = partial.jsonPath.slice(2);
          values[key] = (values[key] ?? '') + (partial.stringValue ?? '');
        }
      }
    },
  });
  await readBody(doFetch, (piece) => parser.feed(piece));
  return { text, calls: [{ id: 'gemini-call-0', name, args: values }] };
}

/**
 * The floor for the AI SDK's UI message stream: the text deltas and the whole call of `tool-input-available` (the
 * SDK parsed its input already; the `tool-input-delta` previews are parsed as JSON and not needed).
 */
async function aiSdkFloor(doFetch: typeof fetch): Promise<FinalTurn> {
  let text = '';
  let id = '';
  let name = '';
  let args: unknown;
  const parser = createParser({
    onEvent(message) {
      if (message.data === '[DONE]') return;
      const chunk = JSON.parse(message.data) as AiSdkChunk;
      if (chunk.type === 'text-delta') text += chunk.delta;
      else if (chunk.type === 'tool-input-available') {
        id = chunk.toolCallId ?? '';
        name = chunk.toolName ?? '';
        args = chunk.input;
      }
    },
  });
  await readBody(doFetch, (piece) => parser.feed(piece));
  return { text, calls: [{ id, name, args }] };
}

/** The final clean turn of a cleanturn pipeline, as a {@link FinalTurn}. */
async function finalOf(pkg: Package, events: Observable<unknown>): Promise<FinalTurn> {
  const { accumulateTurn } = pkg.core;
  const state = await lastValueFrom(
    (events as Observable<{ type: string; attempt: number }>).pipe(accumulateTurn()),
  );
  const calls = state.toolCalls as unknown as { id: string; name: string; args: unknown }[];
  return { text: state.text, calls: calls.map(({ id, name, args }) => ({ id, name, args })) };
}

/** cleanturn's turn runner: fromSSE → sseJson → adapter → assembleToolCalls → requireFinish → retryAsEvents → cleanTurn. */
function ourStreamTurn<I>(
  pkg: Package,
  doFetch: typeof fetch,
  adapter: () => OperatorFunction<I, ProviderEvent>,
) {
  return () =>
    finalOf(
      pkg,
      pkg.transport.streamTurn<I>({
        turnId: 'turn-bench',
        request: () => url,
        adapter: adapter(),
        fetch: doFetch,
      }),
    );
}

/** The same operators composed by hand, without the retry machinery: fromSSE → … → cleanTurn. */
function ourComposed<I>(
  pkg: Package,
  doFetch: typeof fetch,
  adapter: () => OperatorFunction<I, ProviderEvent>,
) {
  const { assembleToolCalls, cleanTurn } = pkg.core;
  const { fromSSE, sseJson } = pkg.transport;
  return () =>
    finalOf(
      pkg,
      fromSSE(() => url, { fetch: doFetch }).pipe(
        sseJson<I>(),
        adapter(),
        assembleToolCalls(),
        cleanTurn({ turnId: 'turn-bench' }),
      ),
    );
}

/** The official openai SDK's helper: `chat.completions.stream(…).finalChatCompletion()`. */
function openaiSdk(doFetch: typeof fetch): () => Promise<FinalTurn> {
  const client = new OpenAI({
    apiKey: 'sk-bench',
    baseURL: 'https://bench.invalid/v1',
    fetch: doFetch,
    maxRetries: 0,
  });
  return async () => {
    const completion = await client.chat.completions
      .stream({
        model: 'gpt-4o',
        messages: [{ role: 'user', content: 'Refund order ORD-7781, the book arrived damaged.' }],
        tools: [{ type: 'function', function: { name: 'issue_refund', parameters: { type: 'object' } } }],
        stream_options: { include_usage: true },
      })
      .finalChatCompletion();
    const message = completion.choices[0]?.message;
    const calls = (message?.tool_calls ?? []).flatMap((c) =>
      c.type === 'function'
        ? [{ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) }]
        : [],
    );
    return { text: message?.content ?? '', calls };
  };
}

/** The official @anthropic-ai/sdk's helper: `messages.stream(…).finalMessage()` (MessageStream). */
function anthropicSdk(doFetch: typeof fetch): () => Promise<FinalTurn> {
  const client = new Anthropic({
    apiKey: 'sk-bench',
    baseURL: 'https://bench.invalid',
    fetch: doFetch,
    maxRetries: 0,
  });
  return async () => {
    const message = await client.messages
      .stream({
        model: 'claude-sonnet-5-5',
        max_tokens: 1024,
        messages: [{ role: 'user', content: 'Refund order ORD-7781, the book arrived damaged.' }],
        tools: [{ name: 'issue_refund', input_schema: { type: 'object' } }],
      })
      .finalMessage();
    let text = '';
    const calls: FinalTurn['calls'] = [];
    for (const block of message.content) {
      if (block.type === 'text') text += block.text;
      else if (block.type === 'tool_use') calls.push({ id: block.id, name: block.name, args: block.input });
    }
    return { text, calls };
  };
}

/** The result of one format. */
export interface FormatResult {
  format: string;
  /** The adapter streamTurn ran (`openaiChat`, `anthropicMessages`…). */
  adapter: string;
  events: number;
  bytes: number;
  floor: Measured;
  streamTurn: Measured;
  composed: Measured;
  /** The official SDK's stream helper, for the formats that have one in this bench. */
  sdk?: Measured | undefined;
  /** What the SDK variant runs, when there is one. */
  sdkLabel?: string | undefined;
  /** streamTurn / floor (paired by round): the target is at most 1.15. */
  ratioToFloor: number;
  composedToFloor: number;
  /** sdk / streamTurn: the target is at least 5. */
  speedupOverSdk?: number | undefined;
  /** Where the time goes: the stages of streamTurn added one at a time (not in quick mode). */
  breakdown: Measured[];
}

/** The target of streamTurn against the floor of its format. */
export const FLOOR_TARGET = 1.15;

/** One wire format of the end-to-end bench: its body, its floor, its adapter and, optionally, its SDK. */
interface FormatSpec<I> {
  format: string;
  body: () => SseBody;
  floor: (doFetch: typeof fetch) => Promise<FinalTurn>;
  adapterName: string;
  adapter: (pkg: Package) => () => OperatorFunction<I, ProviderEvent>;
  sdk?: { label: string; run: (doFetch: typeof fetch) => () => Promise<FinalTurn> };
}

/** Builds a spec, keeping the adapter's input type local to it. */
function spec<I>(s: FormatSpec<I>): FormatSpec<unknown> {
  return s as unknown as FormatSpec<unknown>;
}

/** The five formats, in the order the bench runs them. */
const formats: FormatSpec<unknown>[] = [
  spec({
    format: 'OpenAI Chat Completions',
    body: () => openaiBody(),
    floor: openaiFloor,
    adapterName: 'openaiChat',
    adapter: (pkg) => () => pkg.providers.openaiChat(),
    sdk: {
      label: '`openai` `chat.completions.stream(…).finalChatCompletion()`',
      run: openaiSdk,
    },
  }),
  spec({
    format: 'Anthropic Messages',
    body: () => anthropicBody(),
    floor: anthropicFloor,
    adapterName: 'anthropicMessages',
    adapter: (pkg) => () => pkg.providers.anthropicMessages(),
    sdk: {
      label: '`@anthropic-ai/sdk` `messages.stream(…).finalMessage()` (MessageStream)',
      run: anthropicSdk,
    },
  }),
  spec({
    format: 'OpenAI Responses',
    body: () => responsesBody(),
    floor: responsesFloor,
    adapterName: 'openaiResponses',
    adapter: (pkg) => () => pkg.providers.openaiResponses(),
  }),
  spec({
    format: 'Gemini streamGenerateContent (Vertex AI streamed arguments)',
    body: () => geminiBody(),
    floor: geminiFloor,
    adapterName: 'geminiContent',
    adapter: (pkg) => () => pkg.providers.geminiContent(),
  }),
  spec({
    format: 'AI SDK UI message stream (SSE)',
    body: () => aiSdkBody(),
    floor: aiSdkFloor,
    adapterName: 'aiSdkParts',
    adapter: (pkg) => () => pkg.providers.aiSdkParts(),
  }),
];

/** The format names, in the order {@link benchFormats} runs them. */
export const FORMAT_NAMES: readonly string[] = formats.map((f) => f.format);

/** A format's body, what the turn must reach, streamTurn on it (the CPU profile's workload) and its floor. */
export function formatCase(
  pkg: Package,
  format: string,
): { body: SseBody; run: () => Promise<FinalTurn>; floor: () => Promise<FinalTurn> } {
  const spec = formats.find((f) => f.format === format);
  if (spec === undefined) throw new Error(`no end-to-end format ${format}`);
  const body = spec.body();
  const doFetch = fetchServing(body.bytes);
  return { body, run: ourStreamTurn(pkg, doFetch, spec.adapter(pkg)), floor: () => spec.floor(doFetch) };
}

async function benchFormat(pkg: Package, format: FormatSpec<unknown>, quick: boolean): Promise<FormatResult> {
  const body = format.body();
  const doFetch = fetchServing(body.bytes);
  const adapter = format.adapter(pkg);
  const variants: Variant[] = [
    { name: 'floor', fn: () => format.floor(doFetch) },
    { name: 'streamTurn', fn: ourStreamTurn(pkg, doFetch, adapter) },
    { name: 'composed', fn: ourComposed(pkg, doFetch, adapter) },
  ];
  if (format.sdk !== undefined) variants.push({ name: 'sdk', fn: format.sdk.run(doFetch) });
  // Every variant must reach the same text and the same call, or the comparison means nothing.
  for (const { name, fn } of variants) {
    same(`${format.format}: ${name}`, (await fn()) as FinalTurn, body.expected);
  }
  // One run of each per round, rotated (A B C D, B C D A, …): a change of load hits every variant alike.
  const results = await compare(variants, { rounds: quick ? 3 : 12, iterations: 1, warmup: 2 });
  const floor = pick(results, 'floor');
  const streamTurn = pick(results, 'streamTurn');
  const composed = pick(results, 'composed');
  const sdk = format.sdk === undefined ? undefined : pick(results, 'sdk');
  // The stages one at a time, side by side with the floor again (so that the steps compare within one run).
  const breakdown = quick
    ? []
    : await compare([variants[0] as Variant, ...stagesOf(pkg, doFetch, adapter)], {
        rounds: 3,
        iterations: 3,
        warmup: 2,
      });
  return {
    format: format.format,
    adapter: format.adapterName,
    events: body.events,
    bytes: body.bytes.length,
    floor,
    streamTurn,
    composed,
    sdk,
    sdkLabel: format.sdk?.label,
    ratioToFloor: ratio(streamTurn, floor),
    composedToFloor: ratio(composed, floor),
    speedupOverSdk: sdk === undefined ? undefined : ratio(sdk, streamTurn),
    breakdown,
  };
}

/**
 * streamTurn's stages added one at a time, each run to the end of the body: fromSSE → sseJson, then the adapter,
 * assembleToolCalls, requireFinish → retryAsEvents, cleanTurn and accumulateTurn.
 */
function stagesOf<I>(
  pkg: Package,
  doFetch: typeof fetch,
  adapter: () => OperatorFunction<I, ProviderEvent>,
): Variant[] {
  const { accumulateTurn, assembleToolCalls, cleanTurn, requireFinish, retryAsEvents } = pkg.core;
  const { fromSSE, sseJson } = pkg.transport;
  const parsed = () => fromSSE(() => url, { fetch: doFetch }).pipe(sseJson<I>());
  const attempt = () => parsed().pipe(adapter(), assembleToolCalls(), requireFinish(), retryAsEvents());
  const drain = (events: Observable<unknown>) => lastValueFrom(events.pipe(count()));
  return [
    { name: 'fromSSE → sseJson', fn: () => drain(parsed()) },
    { name: '+ adapter', fn: () => drain(parsed().pipe(adapter())) },
    { name: '+ assembleToolCalls', fn: () => drain(parsed().pipe(adapter(), assembleToolCalls())) },
    { name: '+ requireFinish → retryAsEvents', fn: () => drain(attempt()) },
    { name: '+ cleanTurn', fn: () => drain(attempt().pipe(cleanTurn({ turnId: 'turn-bench' }))) },
    {
      name: '+ accumulateTurn (builds the text, as the floor does)',
      fn: () => lastValueFrom(attempt().pipe(cleanTurn({ turnId: 'turn-bench' }), accumulateTurn())),
    },
  ];
}

/**
 * The end-to-end bench of every format (or of those named in `only`), one after the other; `onResult` sees each
 * result as soon as it is measured.
 */
export async function benchFormats(
  pkg: Package,
  options: { quick: boolean; only?: readonly string[]; onResult?: (result: FormatResult) => void },
): Promise<FormatResult[]> {
  const out: FormatResult[] = [];
  for (const format of formats) {
    if (options.only !== undefined && !options.only.includes(format.format)) continue;
    const result = await benchFormat(pkg, format, options.quick);
    options.onResult?.(result);
    out.push(result);
  }
  return out;
}

export function printFormat(r: FormatResult): void {
  console.log(
    `  ${r.format}: ${r.events.toLocaleString('en')} events, ${(r.bytes / 1024 / 1024).toFixed(1)} MiB`,
  );
  const rows: [string, Measured][] = [
    ['floor (eventsource-parser + JSON.parse)', r.floor],
    [`cleanturn streamTurn(${r.adapter}) → accumulateTurn`, r.streamTurn],
    ['cleanturn fromSSE → … → cleanTurn', r.composed],
  ];
  if (r.sdk !== undefined) rows.push(['official SDK stream helper', r.sdk]);
  for (const [label, m] of rows) {
    console.log(
      `    ${label.padEnd(58)} ${m.median.toFixed(0).padStart(6)} ms  ${rate((r.events / m.median) * 1000, 'chunks').padStart(16)}`,
    );
  }
  console.log(
    `    streamTurn / floor = ${times(r.ratioToFloor)} (target ≤ ${times(FLOOR_TARGET)}); composed / floor = ${times(r.composedToFloor)}${r.speedupOverSdk === undefined ? '' : `; SDK / streamTurn = ${times(r.speedupOverSdk)} (target ≥ 5×)`}`,
  );
  if (r.breakdown.length === 0) return;
  console.log('    where the time goes (stages added one at a time):');
  const floor = r.breakdown[0] as Measured;
  for (const m of r.breakdown) {
    console.log(
      `      ${m.name.padEnd(56)} ${m.median.toFixed(0).padStart(6)} ms  ${times(ratio(m, floor))}`,
    );
  }
}

// Run alone: npx tsx bench/endToEnd.ts
if (import.meta.url === `file://${process.argv[1]}`) {
  const { loadPackage } = await import('./build.js');
  const pkg = await loadPackage();
  const quick = process.argv.includes('--quick');
  await benchFormats(pkg, { quick, onResult: printFormat });
}
