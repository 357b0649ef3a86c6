// The one table that decides whether an upstream error deserves a new attempt. Every adapter and the transport
// ask it, so an error gets the same answer whichever route it took (an SSE payload, an SDK's thrown error, an
// HTTP status).

/**
 * Provider error codes, types and gRPC status names, lower-cased, and whether a new attempt can succeed after
 * them. `true`: the service was busy, rate-limited, overloaded or broke down. `false`: the same request fails
 * again (malformed, too long, not allowed, not paid for, filtered, unknown model). Codes starting with
 * `invalid_` or `image_` count as `false` too.
 *
 * | Kind | Retryable | Not retryable |
 * |---|---|---|
 * | OpenAI (`code`, `type`) | `server_error`, `internal_error`, `internal_server_error`, `api_error`, `overloaded`, `engine_overloaded`, `service_unavailable`, `unavailable`, `rate_limit_exceeded`, `requests`, `tokens`, `timeout`, `vector_store_timeout`, `slow_down` | `invalid_request_error`, `invalid_prompt`, `invalid_api_key`, `authentication_error`, `permission_error`, `permission_denied`, `model_not_found`, `insufficient_quota`, `billing_hard_limit_reached`, `context_length_exceeded`, `content_policy_violation`, `unsupported_parameter`, `unsupported_value`, `bio_policy`, `data_residency_mismatch` |
 * | Anthropic (`error.type`) | `overloaded_error`, `api_error`, `rate_limit_error`, `timeout_error`, `conflict_error` | `invalid_request_error`, `authentication_error`, `permission_error`, `not_found_error`, `request_too_large`, `billing_error`, `memory_precondition_failed_error`, `memory_path_conflict_error` |
 * | Google (`error.status`) | `UNAVAILABLE`, `RESOURCE_EXHAUSTED`, `INTERNAL`, `DEADLINE_EXCEEDED`, `ABORTED`, `CANCELLED` | `INVALID_ARGUMENT`, `FAILED_PRECONDITION`, `PERMISSION_DENIED`, `UNAUTHENTICATED`, `NOT_FOUND`, `OUT_OF_RANGE`, `UNIMPLEMENTED` |
 *
 * `CANCELLED` counts as retryable: a stream this client was still reading was cancelled by the server, so
 * nothing about the request was wrong.
 */
export const upstreamErrorCodes: ReadonlyMap<string, boolean> = new Map<string, boolean>([
  ...[
    'server_error',
    'internal_error',
    'internal_server_error',
    'api_error',
    'overloaded',
    'overloaded_error',
    'engine_overloaded',
    'service_unavailable',
    'unavailable',
    'rate_limit_exceeded',
    'rate_limit_error',
    'requests',
    'tokens',
    'timeout',
    'timeout_error',
    'vector_store_timeout',
    'slow_down',
    'conflict_error',
    'resource_exhausted',
    'internal',
    'deadline_exceeded',
    'aborted',
    'cancelled',
  ].map((code) => [code, true] as const),
  ...[
    'invalid_request_error',
    'invalid_prompt',
    'invalid_api_key',
    'authentication_error',
    'permission_error',
    'permission_denied',
    'not_found_error',
    'model_not_found',
    'insufficient_quota',
    'billing_hard_limit_reached',
    'billing_error',
    'context_length_exceeded',
    'content_policy_violation',
    'unsupported_parameter',
    'unsupported_value',
    'bio_policy',
    'data_residency_mismatch',
    'request_too_large',
    'memory_precondition_failed_error',
    'memory_path_conflict_error',
    'invalid_argument',
    'failed_precondition',
    'unauthenticated',
    'not_found',
    'out_of_range',
    'unimplemented',
  ].map((code) => [code, false] as const),
]);

/**
 * Whether a new attempt could succeed after this HTTP status: 408, 409, 429 and 5xx. Every other status (1xx,
 * 2xx, 3xx, other 4xx) says the same request gets the same answer.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || (status >= 500 && status < 600);
}

/**
 * What an upstream error says about itself, as {@link isRetryableUpstream} reads it.
 *
 * @inline
 */
export interface UpstreamErrorFacts {
  /** Its code words, most specific first: an error `code`, then its `type`, then a gRPC status name; non-strings are skipped. */
  codes?: readonly unknown[];
  /**
   * The HTTP status it carried, if any. A status below 400 does not decide: the response was fine and the error
   * came later, in its body (an SDK's error for a stream that broke carries the 200 it was reading).
   */
  status?: number | undefined;
  /** The answer when neither a code nor the status decides; by default `true` (see {@link isRetryableUpstream}). */
  otherwise?: boolean;
}

/**
 * The retry answer for an upstream error: the first of its code words found in {@link upstreamErrorCodes}
 * (or starting with `invalid_` or `image_`: no); else its HTTP status from 400 up (408, 409, 429 and 5xx may pass); else
 * `otherwise`, by default yes: an error in a stream that started with HTTP 200 is mostly the server's, and
 * retries are capped per turn.
 *
 * @example
 * ```ts
 * isRetryableUpstream({ codes: ['insufficient_quota'], status: 429 }); // false: the quota is gone
 * isRetryableUpstream({ codes: ['UNAVAILABLE'], status: 503 }); // true
 * ```
 */
export function isRetryableUpstream(facts: UpstreamErrorFacts): boolean {
  for (const code of facts.codes ?? []) {
    if (typeof code !== 'string' || code === '') continue;
    const word = code.toLowerCase();
    const known = upstreamErrorCodes.get(word);
    if (known !== undefined) return known;
    if (word.startsWith('invalid_') || word.startsWith('image_')) return false;
  }
  if (facts.status !== undefined && facts.status >= 400) return isRetryableStatus(facts.status);
  return facts.otherwise ?? true;
}
