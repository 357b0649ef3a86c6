// What the two OpenAI adapters share: reading an OpenAI error body and deciding whether a retry makes sense.
import { CleanturnError } from 'cleanturn';
import { ProviderError, type ProviderName } from './errors.js';
import { isRecord, isTransientStatus } from './shared.js';

/**
 * The error body OpenAI sends inside a stream: the `error` of a Chat Completions `{"error": {…}}` payload, the
 * nested `error` of a Responses `error` event, and the `error` field of the official SDK's `APIError`.
 */
export interface OpenAIErrorBody {
  message?: string | null;
  /** `server_error`, `invalid_request_error`, `insufficient_quota`… */
  type?: string | null;
  /** `rate_limit_exceeded`, `context_length_exceeded`…; some compatible servers send an HTTP status here. */
  code?: string | number | null;
  param?: string | null;
}

/** An in-stream OpenAI error as the adapters' `retryable` option sees it. */
export interface OpenAIErrorInfo {
  /** The error's `type`, when it has one. */
  type: string | undefined;
  /** The error's `code`, when it is a string. */
  code: string | undefined;
  /** A numeric `code` (`502`), as some OpenAI-compatible servers send, read as an HTTP status. */
  status: number | undefined;
  message: string;
}

/** Options both OpenAI adapters take. */
export interface OpenAIErrorOptions {
  /**
   * Decides whether an in-stream error deserves a new attempt; return `undefined` to use the default
   * classification (see {@link openaiChat}). For OpenAI-compatible servers with their own error codes.
   */
  retryable?: (error: OpenAIErrorInfo) => boolean | undefined;
}

// A new attempt can succeed: the server was busy, overloaded or broke down.
const transient = new Set([
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
  'vector_store_timeout',
  'slow_down',
]);

// The same request fails again: it is malformed, too long, not allowed or not paid for.
const permanent = new Set([
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
  'context_length_exceeded',
  'content_policy_violation',
  'unsupported_parameter',
  'unsupported_value',
  'bio_policy',
  'data_residency_mismatch',
]);

/**
 * The default classification: the error's `code`, then its `type`, looked up in two lists (overloaded, rate
 * limits and server errors are transient; invalid requests, authentication, quota and policy errors are not, nor
 * is any code starting with `invalid_` or `image_`); then a numeric status (408, 409, 429 and 5xx are
 * transient). Anything else counts as transient: an error in a stream that started with HTTP 200 is mostly the
 * server's, and retries are capped per turn.
 */
function isTransient(info: OpenAIErrorInfo): boolean {
  for (const word of [info.code, info.type]) {
    if (word === undefined) continue;
    if (transient.has(word)) return true;
    if (permanent.has(word) || word.startsWith('invalid_') || word.startsWith('image_')) return false;
  }
  if (info.status !== undefined) {
    return isTransientStatus(info.status);
  }
  return true;
}

/** A string field, or undefined when it is missing, null or not a string. */
export function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * The {@link ProviderError} for an OpenAI error body. Throws what the `retryable` option throws.
 *
 * @param provider The format that carried it.
 * @param body The error body (for Responses' flat `error` event, the event itself: it has `code` and `message`).
 * @param payload What to keep as the error's `payload`: the payload as received.
 */
export function openaiError(
  provider: ProviderName,
  body: OpenAIErrorBody,
  payload: unknown,
  options: OpenAIErrorOptions,
): ProviderError {
  const info: OpenAIErrorInfo = {
    type: stringOf(body.type) || undefined,
    code: stringOf(body.code) || undefined,
    status: typeof body.code === 'number' ? body.code : undefined,
    message: stringOf(body.message) || 'the stream reported an error',
  };
  const retryable = options.retryable?.(info) ?? isTransient(info);
  return new ProviderError(provider, info.message, {
    retryable,
    code: info.code ?? info.type ?? (info.status === undefined ? undefined : String(info.status)),
    status: info.status,
    payload,
  });
}

/**
 * The error body of the official SDK's in-stream error: openai-node throws an `APIError` without an HTTP status
 * when a payload has an `error` key, carrying that body as `error.error`. Other errors (connection errors have
 * no body; HTTP errors have a status) give undefined.
 */
export function sdkStreamErrorBody(error: unknown): OpenAIErrorBody | undefined {
  if (!(error instanceof Error) || !('status' in error) || error.status !== undefined) return undefined;
  const body = (error as { error?: unknown }).error;
  return isRecord(body) ? (body as OpenAIErrorBody) : undefined;
}

/** The error for an input that is not a parsed payload: a programming error, so not retryable. */
export function notAPayload(operator: string, input: unknown): CleanturnError {
  const shown = typeof input === 'string' ? JSON.stringify(input.slice(0, 40)) : String(input);
  return new CleanturnError(
    `${operator}: expected a parsed JSON payload (an object) or '[DONE]', got ${typeof input} ${shown}; JSON.parse the SSE data first`,
    { retryable: false },
  );
}
