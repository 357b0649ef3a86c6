// Per-adapter cost: each provider adapter on its own, over 100,000 parsed payloads of its format (1,000 turns of
// 100: text deltas, one tool call in fragments, the finish), one subscription per turn. Side by side: the bare
// source, whose time every adapter includes, and one RxJS `map` as a yardstick. An adapter's own cost is its
// time minus the bare source's, paired round by round; "no adapter slower than today" compares these between
// two checkouts (`--src=`).

import type * as Providers from 'cleanturn/providers';
import { from, map, type OperatorFunction } from 'rxjs';
import { compare, median, ms, pick, ratio, times, type Variant } from './harness.js';

type Op = OperatorFunction<unknown, unknown>;
const TURNS = 1_000;
const PER_TURN = 100;

/** One turn of each format: 100 payloads, `text` deltas, then a call in three fragments and the end. */
export function turnOf(format: string): unknown[] {
  const texts = (n: number, make: (i: number) => unknown) => Array.from({ length: n }, (_, i) => make(i));
  const word = (i: number) => `word ${i} `;
  switch (format) {
    case 'openaiChat': {
      const chunk = (delta: object, finish: string | null = null) => ({
        id: 'chatcmpl-1',
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
      const call = (args: string, start?: object) =>
        chunk({
          tool_calls: [
            { index: 0, ...start, function: { ...(start ? { name: 'issue_refund' } : {}), arguments: args } },
          ],
        });
      return [
        ...texts(94, (i) => chunk({ content: word(i) })),
        call('', { id: 'call_1', type: 'function' }),
        call('{"order_id":"ORD-7781",'),
        call('"amount":"full"}'),
        chunk({}, 'tool_calls'),
        {
          id: 'chatcmpl-1',
          object: 'chat.completion.chunk',
          choices: [],
          usage: { prompt_tokens: 10, completion_tokens: 90 },
        },
        '[DONE]',
      ];
    }
    case 'openaiResponses': {
      let n = 0;
      const ev = (e: object) => ({ ...e, sequence_number: n++ });
      return [
        ...texts(94, (i) =>
          ev({ type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, delta: word(i) }),
        ),
        ev({
          type: 'response.output_item.added',
          output_index: 1,
          item: { id: 'fc_1', type: 'function_call', call_id: 'call_1', name: 'issue_refund', arguments: '' },
        }),
        ev({
          type: 'response.function_call_arguments.delta',
          item_id: 'fc_1',
          output_index: 1,
          delta: '{"order_id":"ORD-7781",',
        }),
        ev({
          type: 'response.function_call_arguments.delta',
          item_id: 'fc_1',
          output_index: 1,
          delta: '"amount":"full"}',
        }),
        ev({
          type: 'response.function_call_arguments.done',
          item_id: 'fc_1',
          output_index: 1,
          arguments: '{"order_id":"ORD-7781","amount":"full"}',
        }),
        ev({
          type: 'response.output_item.done',
          output_index: 1,
          item: {
            id: 'fc_1',
            type: 'function_call',
            call_id: 'call_1',
            name: 'issue_refund',
            arguments: '{"order_id":"ORD-7781","amount":"full"}',
          },
        }),
        ev({
          type: 'response.completed',
          response: { status: 'completed', usage: { input_tokens: 10, output_tokens: 90 } },
        }),
      ];
    }
    case 'anthropicMessages':
      return [
        { type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 10, output_tokens: 1 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        ...texts(91, (i) => ({
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'text_delta', text: word(i) },
        })),
        { type: 'content_block_stop', index: 0 },
        {
          type: 'content_block_start',
          index: 1,
          content_block: { type: 'tool_use', id: 'toolu_1', name: 'issue_refund', input: {} },
        },
        {
          type: 'content_block_delta',
          index: 1,
          delta: { type: 'input_json_delta', partial_json: '{"order_id":"ORD-7781",' },
        },
        {
          type: 'content_block_delta',
          index: 1,
          delta: { type: 'input_json_delta', partial_json: '"amount":"full"}' },
        },
        { type: 'content_block_stop', index: 1 },
        { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 90 } },
        { type: 'message_stop' },
      ];
    case 'geminiContent':
      return [
        ...texts(99, (i) => ({
          candidates: [{ content: { role: 'model', parts: [{ text: word(i) }] }, index: 0 }],
          usageMetadata: { promptTokenCount: 10, candidatesTokenCount: i + 1 },
        })),
        {
          candidates: [
            {
              content: {
                role: 'model',
                parts: [
                  { functionCall: { name: 'issue_refund', args: { order_id: 'ORD-7781', amount: 'full' } } },
                ],
              },
              finishReason: 'STOP',
              index: 0,
            },
          ],
          usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 100 },
        },
      ];
    case 'aiSdkParts':
      return [
        { type: 'start' },
        { type: 'start-step' },
        { type: 'text-start', id: 't1' },
        ...texts(93, (i) => ({ type: 'text-delta', id: 't1', text: word(i) })),
        { type: 'text-end', id: 't1' },
        {
          type: 'tool-call',
          toolCallId: 'call_1',
          toolName: 'issue_refund',
          input: { order_id: 'ORD-7781', amount: 'full' },
        },
        { type: 'finish-step', finishReason: 'tool-calls', usage: { inputTokens: 10, outputTokens: 90 } },
        { type: 'finish', finishReason: 'tool-calls', totalUsage: { inputTokens: 10, outputTokens: 90 } },
      ];
    default:
      throw new Error(`adapters: no workload for ${format}`);
  }
}

const formats = [
  'openaiChat',
  'openaiResponses',
  'anthropicMessages',
  'geminiContent',
  'aiSdkParts',
] as const;

/** What one adapter measured on its workload. */
export interface AdapterRow {
  name: string;
  /** Payloads in one run, and events out. */
  payloads: number;
  events: number;
  medianMs: number;
  /** Its own cost (adapter − bare source, paired by round) in ms per 100,000 payloads. */
  ownMs: number;
  /** Its time ÷ the yardstick's (source → map). */
  toYardstick: number;
}

function run(turn: readonly unknown[], make: (() => Op) | undefined): number {
  let count = 0;
  let failed: { error: unknown } | undefined;
  const observer = {
    next: () => {
      count++;
    },
    error: (error: unknown) => {
      failed = { error };
    },
  };
  for (let t = 0; t < TURNS; t++) {
    const source = from(turn);
    if (make === undefined) source.subscribe(observer);
    else source.pipe(make()).subscribe(observer);
  }
  if (failed !== undefined) throw failed.error;
  return count;
}

export async function benchAdapters(
  providers: typeof Providers,
  options: { quick: boolean; only?: string },
): Promise<AdapterRow[]> {
  const rows: AdapterRow[] = [];
  for (const format of formats) {
    if (options.only !== undefined && options.only !== format) continue;
    const turn = turnOf(format);
    if (turn.length !== PER_TURN) throw new Error(`adapters: ${format} turn has ${turn.length} payloads`);
    const adapter = providers[format] as unknown as () => Op;
    const variants: Variant[] = [
      { name: 'source only', fn: () => run(turn, undefined) },
      { name: 'rxjs map', fn: () => run(turn, () => map((x: unknown) => x)) },
      { name: format, fn: () => run(turn, adapter) },
    ];
    const events = run(turn, adapter);
    const results = await compare(variants, { rounds: options.quick ? 4 : 15, iterations: 1, warmup: 3 });
    const source = pick(results, 'source only');
    const m = pick(results, format);
    rows.push({
      name: format,
      payloads: TURNS * PER_TURN,
      events,
      medianMs: m.median,
      ownMs: median(m.samples.map((x, i) => x - (source.samples[i] as number))),
      toYardstick: ratio(m, pick(results, 'rxjs map')),
    });
  }
  return rows;
}

export function printAdapters(rows: readonly AdapterRow[]): void {
  console.log(
    `  ${'adapter'.padEnd(20)} ${'payloads'.padStart(9)} ${'events'.padStart(9)} ${'median'.padStart(9)} ${'own'.padStart(9)} ${'÷ map'.padStart(7)}`,
  );
  for (const r of rows) {
    console.log(
      `  ${r.name.padEnd(20)} ${r.payloads.toLocaleString('en').padStart(9)} ${r.events.toLocaleString('en').padStart(9)} ${ms(r.medianMs).padStart(9)} ${ms(r.ownMs).padStart(9)} ${times(r.toYardstick).padStart(7)}`,
    );
  }
}
