// The Gemini decoder on its own, without RxJS: decodeAll runs it under the rules of decodeWith (provisional
// finishes, the last one winning; an error before the end fails the attempt).
import { fileURLToPath } from 'node:url';
import { ProviderError } from 'cleanturn/providers';
import { call, finish, helpDesk, reasoning, text, usage } from 'cleanturn/testing';
import { describe, expect, it } from 'vitest';
import { decodeAll } from '../../src/providers/decodeWith.js';
import type { GeminiChunk } from '../../src/providers/geminiContent.js';
import {
  GeminiContentDecoder,
  type GeminiErrorInfo,
  type GeminiOutput,
} from '../../src/providers/geminiContent.js';
import type { AdapterOptions } from '../../src/providers/shared.js';
import { readPayloads } from '../support/sse.js';

const decode = (
  payloads: readonly (GeminiChunk | string)[],
  ending?: { error: unknown },
  options: AdapterOptions<GeminiErrorInfo> = {},
) =>
  decodeAll<GeminiChunk>(
    { name: 'geminiContent' },
    (sink) => new GeminiContentDecoder(sink, options),
    payloads,
    ending,
  );

const fixture = (name: string) =>
  readPayloads(fileURLToPath(new URL(`../fixtures/gemini/${name}`, import.meta.url))) as GeminiChunk[];

const chunk = (parts: object[], finishReason?: string, counts?: [number, number]): GeminiChunk => ({
  candidates: [{ content: { parts }, ...(finishReason === undefined ? {} : { finishReason }) }],
  ...(counts === undefined
    ? {}
    : { usageMetadata: { promptTokenCount: counts[0], candidatesTokenCount: counts[1] } }),
});

describe('the Gemini decoder, without RxJS', () => {
  it('every chunk with STOP: all the text, usage per change, one finish at the end', () => {
    const { events, error } = decode([
      chunk([{ text: 'Refund ' }], 'STOP', [20, 2]),
      chunk([{ text: 'started ' }], 'STOP', [20, 4]),
      chunk([{ text: 'for ORD-7781.' }], 'STOP', [20, 4]),
      chunk([], 'STOP', [20, 7]),
    ]);
    expect(error).toBeUndefined();
    expect(events).toEqual([
      text('Refund '),
      usage(20, 2),
      text('started '),
      usage(20, 4),
      text('for ORD-7781.'),
      usage(20, 7),
      done('stop', 'STOP', undefined, [{ text: 'Refund started for ORD-7781.' }]),
    ]);
  });

  it('the last finish reason wins: STOP then MAX_TOKENS is length', () => {
    const { events } = decode([
      chunk([{ text: 'The policy' }], 'STOP'),
      chunk([{ text: ' says' }], 'MAX_TOKENS'),
    ]);
    expect(events).toEqual([
      text('The policy'),
      text(' says'),
      done('length', 'MAX_TOKENS', undefined, [{ text: 'The policy says' }]),
    ]);
  });

  it('a call in an early chunk makes every later STOP tool-calls', () => {
    const { events } = decode([
      chunk([{ functionCall: { name: 'list_orders' } }], 'STOP'),
      chunk([{ text: 'Looking.' }], 'STOP'),
    ]);
    expect(events).toEqual([
      call('gemini-call-0', 'list_orders', {}),
      text('Looking.'),
      done('tool-calls', 'STOP', undefined, [
        { functionCall: { name: 'list_orders', args: {} } },
        { text: 'Looking.' },
      ]),
    ]);
  });

  it('an error tail after STOP chunks fails the attempt, no finish', () => {
    const { events, error } = decode(fixture('legacy-stop-then-cancelled.sse'));
    expect(events.some((e) => e.type === 'finish')).toBe(false);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      code: 'upstream',
      upstreamCode: 'CANCELLED',
      status: 499,
      retryable: true,
    });
  });

  it('a source error after STOP chunks fails the attempt; an ApiError is read as its tail', () => {
    const apiError = Object.assign(
      new Error(
        'got status: UNAVAILABLE. {"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}',
      ),
      { status: 503 },
    );
    const { events, error } = decode([chunk([{ text: 'Refund ' }], 'STOP')], { error: apiError });
    expect(events).toEqual([text('Refund ')]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      code: 'upstream',
      upstreamCode: 'UNAVAILABLE',
      status: 503,
      retryable: true,
      cause: apiError,
    });
    expect((error as Error).message).toBe('gemini: overloaded');
    const reset = new TypeError('terminated');
    expect(decode([chunk([{ text: 'Refund ' }], 'STOP')], { error: reset }).error).toBe(reset);
  });

  it('the retryable option is consulted first', () => {
    const { error } = decode([{ error: { code: 499, status: 'CANCELLED' } }], undefined, {
      retryable: () => false,
    });
    expect(error).toMatchObject({ retryable: false, code: 'upstream', upstreamCode: 'CANCELLED' });
  });

  it('path-built arguments never reach Object.prototype', () => {
    const { events, error } = decode(fixture('vertex-proto-dot-path.sse'));
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    expect(events).toEqual([text('Updating your account settings. ')]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      code: 'unsafe-path',
      field: 'candidates[0].content.parts[0].functionCall.partialArgs[0].jsonPath',
    });
  });

  it('a numeric tool name is invalid-field naming the part', () => {
    const { events, error } = decode([
      chunk([{ text: 'Hi. ' }, { functionCall: { name: 7, args: {} } }], 'STOP'),
    ]);
    expect(events).toEqual([text('Hi. ')]);
    expect(error).toMatchObject({
      code: 'invalid-field',
      field: 'candidates[0].content.parts[1].functionCall.name',
    });
  });

  it('a finish reason that is not a string is invalid-field, never a silent stop', () => {
    const { error } = decode([{ candidates: [{ finishReason: 1 as unknown as string }] }]);
    expect(error).toMatchObject({ code: 'invalid-field', field: 'candidates[0].finishReason' });
  });

  it('each decoder is one attempt: call ids count from 0 again', () => {
    const payloads = [chunk([{ functionCall: { name: 'list_orders' } }], 'STOP')];
    expect(decode(payloads).events[0]).toEqual(call('gemini-call-0', 'list_orders', {}));
    expect(decode(payloads).events[0]).toEqual(call('gemini-call-0', 'list_orders', {}));
  });
});

/** A finish with the response id and the attempt's output: its parts as the API takes them back. */
const done = (
  reason: 'stop' | 'tool-calls' | 'error' | 'length',
  raw: string,
  responseId: string | undefined,
  parts: GeminiOutput['parts'],
) => ({
  ...finish(reason, raw),
  ...(responseId === undefined ? {} : { responseId }),
  output: { format: 'gemini', parts },
});
/** Usage with the details Gemini reports: tokens read from the cache, tokens spent on thoughts. */
const used = (input: number, output: number, details: { cached?: number; reasoning?: number }) => ({
  ...usage(input, output),
  ...(details.cached === undefined ? {} : { cachedInputTokens: details.cached }),
  ...(details.reasoning === undefined ? {} : { reasoningTokens: details.reasoning }),
});
const finishOf = (events: readonly unknown[]) =>
  events.find((e) => (e as { type: string }).type === 'finish');

describe('the Gemini decoder: reasoning, signatures and the output the next request sends back', () => {
  it('thought parts are reasoning, never text; the signature stays on the functionCall that carried it', () => {
    const { events, error } = decode(fixture('thought-summary-then-signed-call.sse'));
    expect(error).toBeUndefined();
    const thinking = [
      '**Checking the refund policy**\n\nThe customer reports a damaged book. ',
      'Damage in transit qualifies for a full refund.',
    ];
    expect(events).toEqual([
      reasoning(thinking[0] as string),
      used(412, 86, { cached: 256, reasoning: 86 }),
      reasoning(thinking[1] as string),
      used(412, 131, { cached: 256, reasoning: 131 }),
      text('Checking order ORD-7781. '),
      used(412, 138, { cached: 256, reasoning: 131 }),
      call('gemini-call-0', 'issue_refund', helpDesk.refundArgs),
      used(412, 156, { cached: 256, reasoning: 131 }),
      done('tool-calls', 'STOP', 'Ugx3acX2KqWZ28oP4uqPwQk', [
        { text: thinking.join(''), thought: true },
        { text: 'Checking order ORD-7781. ' },
        {
          functionCall: { name: 'issue_refund', args: helpDesk.refundArgs },
          thoughtSignature:
            'EpQCCpECAb4+9vt3kR1dZ0cQ7mJxW2s9YkVhLq8Zr0fN3uT5aP1bD4eG6hI8jK0lM2nO4pQ6rS8tU0vW2xY4z',
        },
      ]),
    ]);
  });

  it('a signed fragment ends its part: the next fragment of the same kind starts a new part', () => {
    const { events } = decode(fixture('signed-fragments-end-their-parts.sse'));
    expect(events.filter((e) => e.type === 'reasoning' || e.type === 'text')).toEqual([
      reasoning('The order was delivered damaged. '),
      reasoning('A full refund fits the policy.'),
      text('I have refunded order ORD-7781. '),
      text('The money is on its way.'),
    ]);
    expect(finishOf(events)).toEqual(
      done('stop', 'STOP', 'dX6LadKVC7SZ28oPr9yJoQs', [
        {
          text: 'The order was delivered damaged. ',
          thought: true,
          thoughtSignature: 'CiQB0e2Kb3NlYXJjaGluZyB0aGUgb3JkZXIgaGlzdG9yeQ==',
        },
        { text: 'A full refund fits the policy.', thought: true },
        {
          text: 'I have refunded order ORD-7781. ',
          thoughtSignature: 'CiQB0e2Kb2Fuc3dlcmluZyB0aGUgY3VzdG9tZXI=',
        },
        { text: 'The money is on its way.' },
      ]),
    );
  });

  it("a text answer's signature on an empty last part ends the text it follows, which is one part", () => {
    const { events } = decode(fixture('signature-on-empty-last-part.sse'));
    expect(events.filter((e) => e.type === 'text')).toEqual([
      text('Your refund for order ORD-7781 '),
      text('has been issued in full.'),
    ]);
    expect(finishOf(events)).toEqual(
      done('stop', 'STOP', 'vQRpaqzAPN2M9MoPxPq2uQ4', [
        {
          text: 'Your refund for order ORD-7781 has been issued in full.',
          thoughtSignature: 'EpcCCpQCARFNMg9GpVP+YGO3zJobwN8a+4XBKHGs8ZZ75yF6E7qlkth0vQN/W+uy',
        },
      ]),
    );
  });

  it('parallel calls: the signature on the first call only, as it was sent', () => {
    const { events } = decode(fixture('parallel-calls-first-signed.sse'));
    expect(finishOf(events)).toEqual(
      done('tool-calls', 'STOP', 'QHiLaa6LBrb8vdIPoNztsAg', [
        {
          functionCall: { name: 'lookup_order', args: { order_id: 'ORD-7781' } },
          thoughtSignature: 'EpEgCo4gAb4+9vvWwdN+NkNiCCwrqvFI8uf9IiD2A47Bm4Sga0kUTm4e/QuEnsZn',
        },
        { functionCall: { name: 'lookup_order', args: { order_id: 'ORD-7782' } } },
      ]),
    );
  });

  it('code the model ran itself is kept in the output and never makes tool-calls', () => {
    const { events } = decode(fixture('code-execution.sse'));
    expect(events.some((e) => e.type === 'tool-call')).toBe(false);
    expect(finishOf(events)).toEqual(
      done('stop', 'STOP', 'x7hVadT9OdKT_uMP792-mAc', [
        {
          executableCode: { language: 'PYTHON', code: 'print(round(34.90 * 0.15, 2))' },
          thoughtSignature: 'EjQKMgFyyNp8VRG2uDen0QENDjUJEy6ZQlvEGUhI8VcgTgNaspEC3M5Cao6lhYRG',
        },
        { codeExecutionResult: { outcome: 'OUTCOME_OK', output: '5.24\n' } },
        {
          text: 'The restocking fee would be $5.24, but it is waived for damaged items.',
          thoughtSignature: 'EjQKMgFyyNp8EcK2k/joUmmIxJlqtIvdJP/1F+ziwsCn9P4uyk2ZNeBiYz2Um4GX',
        },
      ]),
    );
  });

  it("a second candidate's parts, signatures and calls never join the first candidate's", () => {
    const { events } = decode(fixture('second-candidate.sse'));
    expect(events).toEqual([
      text('Checking order ORD-7781. '),
      usage(88, 12),
      usage(88, 30),
      call('gemini-call-0', 'issue_refund', helpDesk.refundArgs),
      usage(88, 52),
      done('tool-calls', 'STOP', 'kZ2LaaOaC4y2xN8PpLjvoQo', [
        { text: 'Checking order ORD-7781. ' },
        { functionCall: { name: 'issue_refund', args: helpDesk.refundArgs } },
      ]),
    ]);
  });

  it('MALFORMED_FUNCTION_CALL is an error finish that keeps the raw reason, with an empty output', () => {
    expect(decode(fixture('malformed-function-call.sse')).events.at(-1)).toEqual(
      done('error', 'MALFORMED_FUNCTION_CALL', 'b36LacjwM668nsEP2tbsgQQ', []),
    );
  });

  it('a streamed Vertex call keeps the signature of its opening part and the arguments built', () => {
    const { events } = decode([
      chunk([{ text: 'Checking order ORD-7781. ' }]),
      chunk([
        { functionCall: { name: 'issue_refund', willContinue: true }, thoughtSignature: 'VnJ0eFNpZw==' },
      ]),
      chunk([
        {
          functionCall: {
            partialArgs: [
              { jsonPath: '$.order_id', stringValue: 'ORD-7781' },
              { jsonPath: '$.amount', stringValue: 'full' },
            ],
            willContinue: true,
          },
        },
      ]),
      chunk([{ functionCall: {} }], 'STOP'),
    ]);
    expect(finishOf(events)).toEqual(
      done('tool-calls', 'STOP', undefined, [
        { text: 'Checking order ORD-7781. ' },
        {
          functionCall: { name: 'issue_refund', args: helpDesk.refundArgs },
          thoughtSignature: 'VnJ0eFNpZw==',
        },
      ]),
    );
  });

  it('a call id the provider sent is kept in the output; a generated one is not', () => {
    const { events } = decode([
      chunk([{ functionCall: { id: 'fc_1', name: 'lookup_order', args: { order_id: 'ORD-7781' } } }]),
      chunk([{ functionCall: { name: 'lookup_order', args: { order_id: 'ORD-7782' } } }], 'STOP'),
    ]);
    expect(events.filter((e) => e.type === 'tool-call').map((e) => e.id)).toEqual(['fc_1', 'gemini-call-1']);
    expect((finishOf(events) as { output: GeminiOutput }).output.parts).toEqual([
      { functionCall: { id: 'fc_1', name: 'lookup_order', args: { order_id: 'ORD-7781' } } },
      { functionCall: { name: 'lookup_order', args: { order_id: 'ORD-7782' } } },
    ]);
  });

  it('the output is plain JSON data, a fresh object per attempt, sharing nothing with the chunks', () => {
    const payloads = fixture('thought-summary-then-signed-call.sse');
    const first = finishOf(decode(payloads).events) as { output: GeminiOutput };
    const second = finishOf(decode(payloads).events) as { output: GeminiOutput };
    expect(first.output).toEqual(second.output);
    expect(first.output).not.toBe(second.output);
    expect(JSON.parse(JSON.stringify(first.output))).toEqual(first.output);
    const call = first.output.parts[2] as { functionCall: { args: object } };
    const sent = (
      payloads[3] as { candidates: [{ content: { parts: [{ functionCall: { args: object } }] } }] }
    ).candidates[0].content.parts[0].functionCall.args;
    expect(call.functionCall.args).toEqual(sent);
    expect(call.functionCall.args).not.toBe(sent);
  });

  it('a part with nothing but a signature ends the text part it follows; an empty part is nothing', () => {
    const { events } = decode([
      chunk([{ text: 'Refund issued.' }, { thoughtSignature: 'T25seVNpZw==' }]),
      chunk([{ thought: false }, {}], 'STOP'),
    ]);
    expect(finishOf(events)).toEqual(
      done('stop', 'STOP', undefined, [{ text: 'Refund issued.', thoughtSignature: 'T25seVNpZw==' }]),
    );
  });

  it('no finish reason, no finish and no output, whatever was read', () => {
    const { events } = decode(fixture('thought-summary-then-signed-call.sse').slice(0, 4));
    expect(events.some((e) => e.type === 'finish')).toBe(false);
  });

  it('a thought flag that is not a boolean, or a signature that is not a string: invalid-field', () => {
    expect(decode([chunk([{ text: 'Hmm', thought: 'yes' }], 'STOP')]).error).toMatchObject({
      code: 'invalid-field',
      field: 'candidates[0].content.parts[0].thought',
    });
    expect(
      decode([chunk([{ functionCall: { name: 'f' }, thoughtSignature: 7 }], 'STOP')]).error,
    ).toMatchObject({
      code: 'invalid-field',
      field: 'candidates[0].content.parts[0].thoughtSignature',
    });
    expect(decode([{ ...chunk([], 'STOP'), responseId: 5 } as unknown as GeminiChunk]).error).toMatchObject({
      code: 'invalid-field',
      field: 'responseId',
    });
  });
});
