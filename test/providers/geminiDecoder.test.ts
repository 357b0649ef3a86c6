// The Gemini decoder on its own, without RxJS: decodeAll runs it under the rules of decodeWith (provisional
// finishes, the last one winning; an error before the end fails the attempt).
import { fileURLToPath } from 'node:url';
import { decodeAll, type GeminiChunk, ProviderError, ProviderPayloadError } from 'cleanturn/providers';
import { call, finish, text, usage } from 'cleanturn/testing';
import { describe, expect, it } from 'vitest';
import { createGeminiDecoder, type GeminiContentOptions } from '../../src/providers/geminiContent.js';
import { readPayloads } from '../support/sse.js';

const decode = (
  payloads: readonly (GeminiChunk | string)[],
  ending?: { error: unknown },
  options: GeminiContentOptions = {},
) =>
  decodeAll<GeminiChunk>(
    { name: 'geminiContent' },
    (sink) => createGeminiDecoder(sink, options),
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
      finish('stop', 'STOP'),
    ]);
  });

  it('the last finish reason wins: STOP then MAX_TOKENS is length', () => {
    const { events } = decode([
      chunk([{ text: 'The policy' }], 'STOP'),
      chunk([{ text: ' says' }], 'MAX_TOKENS'),
    ]);
    expect(events).toEqual([text('The policy'), text(' says'), finish('length', 'MAX_TOKENS')]);
  });

  it('a call in an early chunk makes every later STOP tool-calls', () => {
    const { events } = decode([
      chunk([{ functionCall: { name: 'list_orders' } }], 'STOP'),
      chunk([{ text: 'Looking.' }], 'STOP'),
    ]);
    expect(events).toEqual([
      call('gemini-call-0', 'list_orders', {}),
      text('Looking.'),
      finish('tool-calls', 'STOP'),
    ]);
  });

  it('an error tail after STOP chunks fails the attempt, no finish', () => {
    const { events, error } = decode(fixture('legacy-stop-then-cancelled.sse'));
    expect(events.some((e) => e.type === 'finish')).toBe(false);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ code: 'CANCELLED', status: 499, retryable: true });
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
    expect(error).toMatchObject({ code: 'UNAVAILABLE', status: 503, retryable: true, cause: apiError });
    expect((error as Error).message).toBe('gemini: overloaded');
    const reset = new TypeError('terminated');
    expect(decode([chunk([{ text: 'Refund ' }], 'STOP')], { error: reset }).error).toBe(reset);
  });

  it('the retryable option is consulted first', () => {
    const { error } = decode([{ error: { code: 499, status: 'CANCELLED' } }], undefined, {
      retryable: () => false,
    });
    expect(error).toMatchObject({ retryable: false, code: 'CANCELLED' });
  });

  it('path-built arguments never reach Object.prototype', () => {
    const { events, error } = decode(fixture('vertex-proto-dot-path.sse'));
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    expect(events).toEqual([text('Updating your account settings. ')]);
    expect(error).toBeInstanceOf(ProviderPayloadError);
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
