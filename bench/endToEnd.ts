// Item 2: end to end from bytes. A 100,000-event SSE body (text deltas and a tool call in 1,000 argument
// fragments), read in 16 KiB pieces through a custom `fetch`, to the final clean turn. Against the parsing floor
// (eventsource-parser + JSON.parse + string concatenation) and the official SDK's stream helper, in the OpenAI
// Chat Completions format and in the Anthropic Messages format.

import Anthropic from '@anthropic-ai/sdk';
import type { ProviderEvent } from 'cleanturn';
import { createParser } from 'eventsource-parser';
import OpenAI from 'openai';
import { count, lastValueFrom, type Observable, type OperatorFunction } from 'rxjs';
import type { Package } from './build.js';
import { compare, type Measured, pick, rate, ratio, same, times, type Variant } from './harness.js';
import { anthropicBody, type FinalTurn, fetchServing, openaiBody, type SseBody } from './sse.js';

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
  events: number;
  bytes: number;
  floor: Measured;
  streamTurn: Measured;
  composed: Measured;
  sdk: Measured;
  /** streamTurn / floor (paired by round): the target is at most 1.25. */
  ratioToFloor: number;
  composedToFloor: number;
  /** sdk / streamTurn: the target is at least 5. */
  speedupOverSdk: number;
  /** Where the time goes: the stages of streamTurn added one at a time (not in quick mode). */
  breakdown: Measured[];
}

async function benchFormat(
  format: string,
  body: SseBody,
  variants: {
    floor: () => Promise<FinalTurn>;
    streamTurn: () => Promise<FinalTurn>;
    composed: () => Promise<FinalTurn>;
    sdk: () => Promise<FinalTurn>;
  },
  stages: Variant[],
  quick: boolean,
): Promise<FormatResult> {
  // Every variant must reach the same text and the same call, or the comparison means nothing.
  for (const [name, run] of Object.entries(variants)) {
    same(`${format}: ${name}`, await run(), body.expected);
  }
  // One run of each per round, rotated (A B C D, B C D A, …): a change of load hits every variant alike.
  const list: Variant[] = [
    { name: 'floor', fn: variants.floor },
    { name: 'streamTurn', fn: variants.streamTurn },
    { name: 'composed', fn: variants.composed },
    { name: 'sdk', fn: variants.sdk },
  ];
  const results = await compare(list, { rounds: quick ? 3 : 12, iterations: 1, warmup: 2 });
  const sdk = pick(results, 'sdk');
  const floor = pick(results, 'floor');
  const streamTurn = pick(results, 'streamTurn');
  const composed = pick(results, 'composed');
  // The stages one at a time, side by side with the floor again (so that the steps compare within one run).
  const breakdown = quick
    ? []
    : await compare([{ name: 'floor', fn: variants.floor }, ...stages], {
        rounds: 3,
        iterations: 3,
        warmup: 2,
      });
  return {
    format,
    events: body.events,
    bytes: body.bytes.length,
    floor,
    streamTurn,
    composed,
    sdk,
    ratioToFloor: ratio(streamTurn, floor),
    composedToFloor: ratio(composed, floor),
    speedupOverSdk: ratio(sdk, streamTurn),
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

export async function benchOpenAI(pkg: Package, options: { quick: boolean }): Promise<FormatResult> {
  const body = openaiBody();
  const doFetch = fetchServing(body.bytes);
  const { openaiChat } = pkg.providers;
  return benchFormat(
    'OpenAI Chat Completions',
    body,
    {
      floor: () => openaiFloor(doFetch),
      streamTurn: ourStreamTurn(pkg, doFetch, () => openaiChat()),
      composed: ourComposed(pkg, doFetch, () => openaiChat()),
      sdk: openaiSdk(doFetch),
    },
    stagesOf(pkg, doFetch, () => openaiChat()),
    options.quick,
  );
}

export async function benchAnthropic(pkg: Package, options: { quick: boolean }): Promise<FormatResult> {
  const body = anthropicBody();
  const doFetch = fetchServing(body.bytes);
  const { anthropicMessages } = pkg.providers;
  return benchFormat(
    'Anthropic Messages',
    body,
    {
      floor: () => anthropicFloor(doFetch),
      streamTurn: ourStreamTurn(pkg, doFetch, () => anthropicMessages()),
      composed: ourComposed(pkg, doFetch, () => anthropicMessages()),
      sdk: anthropicSdk(doFetch),
    },
    stagesOf(pkg, doFetch, () => anthropicMessages()),
    options.quick,
  );
}

export function printFormat(r: FormatResult): void {
  console.log(
    `  ${r.format}: ${r.events.toLocaleString('en')} events, ${(r.bytes / 1024 / 1024).toFixed(1)} MiB`,
  );
  for (const [label, m] of [
    ['floor (eventsource-parser + JSON.parse)', r.floor],
    ['cleanturn streamTurn → accumulateTurn', r.streamTurn],
    ['cleanturn fromSSE → … → cleanTurn', r.composed],
    ['official SDK stream helper', r.sdk],
  ] as const) {
    console.log(
      `    ${label.padEnd(42)} ${m.median.toFixed(0).padStart(6)} ms  ${rate((r.events / m.median) * 1000, 'chunks').padStart(16)}`,
    );
  }
  console.log(
    `    streamTurn / floor = ${times(r.ratioToFloor)} (target ≤ 1.25×); composed / floor = ${times(r.composedToFloor)}; SDK / streamTurn = ${times(r.speedupOverSdk)} (target ≥ 5×)`,
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
  printFormat(await benchOpenAI(pkg, { quick }));
  printFormat(await benchAnthropic(pkg, { quick }));
}
