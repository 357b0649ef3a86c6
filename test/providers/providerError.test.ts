// The one error class of cleanturn/providers: every case is a ProviderError whose code names it, and instanceof
// holds for an error made by another copy of the package (its CommonJS build, a second version).
import { CleanturnError, isRetryable } from 'cleanturn';
import { ProviderError } from 'cleanturn/providers';
import { describe, expect, it } from 'vitest';
import { nextRequestError, providerPayloadError, upstreamProviderError } from '../../src/providers/errors.js';
import { fromAnotherCopy } from '../support/errors.js';

describe('ProviderError', () => {
  it.each([
    [
      upstreamProviderError('anthropic-messages', 'Overloaded', {
        retryable: true,
        upstreamCode: 'overloaded_error',
        status: 529,
        payload: { type: 'error' },
      }),
      'upstream',
      true,
      {
        message: 'anthropic-messages: Overloaded',
        provider: 'anthropic-messages',
        upstreamCode: 'overloaded_error',
        status: 529,
        payload: { type: 'error' },
        operator: undefined,
        builder: undefined,
      },
    ],
    [
      providerPayloadError('lines', 'not-a-payload', 'expected a parsed payload (an object), got string', {
        payload: 'x',
      }),
      'not-a-payload',
      false,
      {
        message: 'lines: expected a parsed payload (an object), got string: "x"',
        operator: 'lines',
        payload: 'x',
      },
    ],
    [
      providerPayloadError('openaiChat', 'invalid-field', 'expected a string, got number', {
        field: 'choices[0].delta.content',
        payload: { n: 1 },
      }),
      'invalid-field',
      false,
      {
        message: 'openaiChat: expected a string, got number (choices[0].delta.content): {"n":1}',
        operator: 'openaiChat',
        field: 'choices[0].delta.content',
        provider: undefined,
        upstreamCode: undefined,
      },
    ],
    [
      providerPayloadError('geminiContent', 'unsafe-path', 'a step named __proto__', {
        field: 'f',
        payload: {},
      }),
      'unsafe-path',
      false,
      { operator: 'geminiContent', field: 'f' },
    ],
    [
      providerPayloadError('anthropicMessages', 'unknown-reference', 'a delta for block 3, never opened', {
        field: 'index',
        payload: {},
      }),
      'unknown-reference',
      true,
      { operator: 'anthropicMessages', field: 'index' },
    ],
    [
      nextRequestError('toAnthropicMessages', 'not-finished', 'the turn has no finish'),
      'not-finished',
      false,
      {
        message: 'toAnthropicMessages: the turn has no finish',
        builder: 'toAnthropicMessages',
        callId: undefined,
      },
    ],
    [
      nextRequestError('toGeminiContents', 'wrong-format', 'w'),
      'wrong-format',
      false,
      { builder: 'toGeminiContents' },
    ],
    [
      nextRequestError('b', 'unanswered', 'u', 'call_1'),
      'unanswered',
      false,
      { builder: 'b', callId: 'call_1' },
    ],
    [nextRequestError('b', 'unknown-call', 'u', 'call_2'), 'unknown-call', false, { callId: 'call_2' }],
    [nextRequestError('b', 'answered-twice', 'u', 'call_3'), 'answered-twice', false, { callId: 'call_3' }],
    [nextRequestError('b', 'still-running', 'u', 'call_4'), 'still-running', false, { callId: 'call_4' }],
    [nextRequestError('b', 'not-a-result', 'u'), 'not-a-result', false, { builder: 'b' }],
  ] as const)('%s: code %s', (error, code, retryable, fields) => {
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toBeInstanceOf(CleanturnError);
    expect(error).toMatchObject({ name: 'ProviderError', code, retryable, ...fields });
    expect(isRetryable(error)).toBe(retryable);
  });

  it('instanceof holds for an error made by another copy of the class', () => {
    const foreign = fromAnotherCopy(['CleanturnError', 'ProviderError'], {
      message: 'gemini: The model is overloaded.',
      code: 'upstream',
      upstreamCode: 'UNAVAILABLE',
      retryable: true,
    });
    expect(foreign).toBeInstanceOf(ProviderError);
    expect(foreign).toBeInstanceOf(CleanturnError);
    expect(new Error('plain')).not.toBeInstanceOf(ProviderError);
    const other = fromAnotherCopy(['CleanturnError', 'TransportError']);
    expect(other).not.toBeInstanceOf(ProviderError);
  });
});
