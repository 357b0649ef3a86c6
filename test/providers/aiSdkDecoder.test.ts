// The AI SDK decoder without RxJS: decodeAll runs it under the same rules as aiSdkParts().

import { ProviderError } from 'cleanturn/providers';
import { call, finish, helpDesk, text, usage } from 'cleanturn/testing';
import { describe, expect, it } from 'vitest';
import type { AiSdkOutput, AiSdkStreamPart } from '../../src/providers/aiSdkParts.js';
import { AiSdkPartsDecoder } from '../../src/providers/aiSdkParts.js';
import { decodeAll } from '../../src/providers/decodeWith.js';
import type { FinishEvent } from '../../src/types.js';

const run = (parts: unknown[], ending: { error: unknown } | 'complete' = 'complete') =>
  decodeAll<AiSdkStreamPart>(
    { name: 'aiSdkParts', endMarker: '[DONE]' },
    (sink) => new AiSdkPartsDecoder(sink),
    parts as AiSdkStreamPart[],
    ending,
  );

const refund = { type: 'tool-call', toolCallId: 'c1', toolName: 'issue_refund', input: helpDesk.refundArgs };
const step = { type: 'finish-step', usage: { inputTokens: 10, outputTokens: 4 } };
const end = { type: 'finish', finishReason: 'stop', rawFinishReason: 'end_turn' };
const refundPart = {
  type: 'tool-call',
  toolCallId: 'c1',
  toolName: 'issue_refund',
  input: helpDesk.refundArgs,
} as const;
/** A finish with the attempt's output. */
const ended = (event: FinishEvent, content: AiSdkOutput['content']): FinishEvent => {
  const output: AiSdkOutput = { format: 'ai-sdk', content };
  return { ...event, output };
};

describe('the AI SDK decoder', () => {
  it('finish is the end: nothing after it is read, a later source error completes', () => {
    const later = [
      { type: 'text-delta', text: 'more' },
      { type: 'error', error: 'late' },
    ];
    expect(run([refund, step, end, ...later], { error: new Error('reset') })).toEqual({
      events: [
        call('c1', 'issue_refund', helpDesk.refundArgs),
        usage(10, 4),
        ended(finish('tool-calls', 'end_turn'), [refundPart]),
      ],
    });
  });

  it("the UI stream's [DONE] is the end, with or without a finish before it", () => {
    const parts = [{ type: 'text-delta', delta: 'a' }, '[DONE]', { type: 'text-delta', delta: 'b' }];
    expect(run(parts)).toEqual({ events: [text('a')] });
  });

  it('a finish-step is not a finish: a stream cut after it ends without one, its calls released', () => {
    expect(run([refund, step])).toEqual({
      events: [call('c1', 'issue_refund', helpDesk.refundArgs), usage(10, 4)],
    });
    expect(run([refund])).toEqual({ events: [] }); // a step that never ended: its call is void
  });

  it('a call the SDK ran is not released; the next step decides the reason', () => {
    const result = run([refund, { type: 'tool-result', toolCallId: 'c1' }, step, step, end]);
    expect(result.events).toEqual([
      usage(10, 4),
      usage(20, 8),
      ended(finish('stop', 'end_turn'), [
        refundPart,
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'issue_refund',
          output: { type: 'json', value: null },
        },
      ]),
    ]);
  });

  it('two calls without toolCallId: an invalid-field error at the first, never a drop of the second', () => {
    const noId = { type: 'tool-call', toolName: 'lookup_order', input: {} };
    const result = run([{ type: 'text-delta', text: 'x' }, noId, noId, step, end]);
    expect(result.events).toEqual([text('x')]);
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({ code: 'invalid-field', field: 'toolCallId', payload: noId });
  });

  it('a toolName that is not a string is an invalid-field error naming toolName', () => {
    const result = run([{ ...refund, toolName: 42 }]);
    expect(result.error).toMatchObject({ code: 'invalid-field', field: 'toolName', retryable: false });
  });

  it('a source APICallError is read by the table: a body code before the status and the flag', () => {
    const thrown = Object.assign(new Error('quota'), {
      statusCode: 429,
      isRetryable: true,
      data: { error: { type: 'insufficient_quota', code: 'insufficient_quota' } },
    });
    const result = run([{ type: 'text-delta', text: 'x' }], { error: thrown });
    expect(result.events).toEqual([text('x')]);
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({
      retryable: false,
      status: 429,
      code: 'upstream',
      upstreamCode: 'insufficient_quota',
      cause: thrown,
    });
  });

  it("ai@6's error for a dropped stream (statusCode 200, the response it was reading) is retryable", () => {
    const dropped = Object.assign(new Error('Failed to process successful response'), {
      name: 'AI_APICallError',
      statusCode: 200,
      isRetryable: true,
      cause: new TypeError('terminated'),
    });
    const result = run([refund], { error: dropped });
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({
      retryable: true,
      status: 200,
      code: 'upstream',
      upstreamCode: undefined,
      cause: dropped,
    });
  });

  it('a source error without the SDK flag passes unchanged, even after a finish-step', () => {
    const reset = new TypeError('terminated');
    expect(run([refund, step], { error: reset })).toMatchObject({ error: reset });
  });

  it('the SDK flag decides only when neither a code nor a status does', () => {
    const flagged = (isRetryable: boolean) =>
      run([{ type: 'error', error: { message: 'm', isRetryable } }]).error;
    expect(flagged(false)).toMatchObject({ retryable: false });
    expect(flagged(true)).toMatchObject({ retryable: true });
  });

  it('an error that wraps itself is read without looping', () => {
    const selfish: Record<string, unknown> = { code: 'server_error' };
    selfish.error = selfish;
    const result = run([{ type: 'error', error: selfish } as AiSdkStreamPart]);
    expect(result.error).toMatchObject({ retryable: true, code: 'upstream', upstreamCode: 'server_error' });
  });
});
