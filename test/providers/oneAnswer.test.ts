// One upstream error, one retry answer, whichever route it took: a payload of each format, an SDK's thrown error,
// an HTTP status with a JSON body. Every route asks the one table, isRetryableUpstream.

import {
  aiSdkParts,
  anthropicMessages,
  geminiContent,
  openaiChat,
  openaiResponses,
} from 'cleanturn/providers';
import { from, Observable, type OperatorFunction } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { httpStatusError } from '../../src/transport/errors.js';
import { isRetryableUpstream } from '../../src/upstreamErrors.js';
import { collect } from '../support/collect.js';

/** Upstream errors: a code word and the HTTP status it came with. */
const samples: [code: string, status: number][] = [
  ['insufficient_quota', 429],
  ['rate_limit_exceeded', 429],
  ['UNAVAILABLE', 503],
  ['RESOURCE_EXHAUSTED', 429],
  ['CANCELLED', 499],
  ['model_not_found', 404],
  ['content_policy_violation', 400],
  ['OUT_OF_RANGE', 400],
  ['UNIMPLEMENTED', 501],
  ['overloaded_error', 529],
  ['invalid_request_error', 400],
  ['server_error', 500],
  ['a_code_no_table_knows', 502],
  ['a_code_no_table_knows', 403],
];

const retryableOf = (source: Observable<unknown>, adapter: OperatorFunction<never, unknown>) => {
  const { error } = collect(source.pipe(adapter as OperatorFunction<unknown, unknown>));
  expect(error).toBeDefined();
  return (error as { retryable?: unknown }).retryable;
};
const payload = (value: unknown) => from([value]);
const thrown = (error: unknown) => new Observable<unknown>((s) => s.error(error));
const sdkError = (message: string, fields: object) => Object.assign(new Error(message), fields);

describe.each(samples)('%s with HTTP %i', (code, status) => {
  const answer = isRetryableUpstream({ codes: [code], status });

  it('gets the same answer by every route that carries the code alone', () => {
    const alone = isRetryableUpstream({ codes: [code] });
    expect({
      'an OpenAI Chat error payload': retryableOf(
        payload({ error: { message: 'm', type: code, code: null } }),
        openaiChat(),
      ),
      'an OpenAI Responses error event': retryableOf(
        payload({ type: 'error', code, message: 'm', sequence_number: 1 }),
        openaiResponses(),
      ),
      'an Anthropic error event': retryableOf(
        payload({ type: 'error', error: { type: code, message: 'm' } }),
        anthropicMessages(),
      ),
    }).toEqual({
      'an OpenAI Chat error payload': alone,
      'an OpenAI Responses error event': alone,
      'an Anthropic error event': alone,
    });
  });

  it('gets the same answer by every route that carries the code and the status', () => {
    const routes: Record<string, unknown> = {
      "the OpenAI SDK's APIError": retryableOf(
        thrown(sdkError(`${status} m`, { status, error: { message: 'm', type: code, code } })),
        openaiChat(),
      ),
      "the Anthropic SDK's APIError": retryableOf(
        thrown(
          sdkError(`${status} m`, { status, error: { type: 'error', error: { type: code, message: 'm' } } }),
        ),
        anthropicMessages(),
      ),
      'a Gemini error tail': retryableOf(
        payload({ error: { code: status, message: 'm', status: code } }),
        geminiContent(),
      ),
      'an AI SDK error part': retryableOf(
        payload({ type: 'error', error: { statusCode: status, data: { error: { code, message: 'm' } } } }),
        aiSdkParts(),
      ),
      'an HTTP error with a JSON body': httpStatusError(
        status,
        '',
        JSON.stringify({ error: { code, message: 'm' } }),
        undefined,
      ).retryable,
    };
    expect(routes).toEqual(Object.fromEntries(Object.keys(routes).map((route) => [route, answer])));
  });
});
