// What the two OpenAI adapters share: reading an OpenAI error body as a ProviderError.

import { isInstance, readProperty, readString } from '../internal/describeError.js';
import { isRetryableUpstream } from '../upstreamErrors.js';
import { type ProviderError, type ProviderName, upstreamProviderError } from './errors.js';
import { type AdapterOptions, isRecord, nonEmptyText } from './shared.js';

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

/**
 * An in-stream OpenAI error as the adapters' `retryable` option sees it.
 *
 * @inline
 */
export interface OpenAIErrorInfo {
  /** The error's `type`, when it has one. */
  type: string | undefined;
  /** The error's `code`, when it is a string. */
  code: string | undefined;
  /** A numeric `code` (`502`), as some OpenAI-compatible servers send, read as an HTTP status. */
  status: number | undefined;
  message: string;
}

/**
 * The {@link ProviderError} for an OpenAI error body. Throws what the `retryable` option throws.
 *
 * @param provider The format that carried it.
 * @param body The error body; a string is its message (`{"error": "…"}` from some compatible servers).
 * @param payload What to keep as the error's `payload`: the payload as received.
 * @param extra The HTTP status and the SDK error it came from, when it came from one.
 */
export function openaiError(
  provider: ProviderName,
  body: OpenAIErrorBody | string,
  payload: unknown,
  options: AdapterOptions<OpenAIErrorInfo>,
  extra: { status?: number | undefined; cause?: unknown } = {},
): ProviderError {
  const fields: OpenAIErrorBody = typeof body === 'string' ? { message: body } : body;
  const info: OpenAIErrorInfo = {
    type: nonEmptyText(fields.type),
    code: nonEmptyText(fields.code),
    status: typeof fields.code === 'number' ? fields.code : extra.status,
    message: nonEmptyText(fields.message) ?? 'the stream reported an error',
  };
  const retryable =
    options.retryable?.(info) ?? isRetryableUpstream({ codes: [info.code, info.type], status: info.status });
  return upstreamProviderError(provider, info.message, {
    retryable,
    upstreamCode: info.code ?? info.type ?? (info.status === undefined ? undefined : String(info.status)),
    status: info.status,
    payload,
    cause: extra.cause,
  });
}

/**
 * The error body of an error the official SDK raised: `APIError` keeps the body it read as `error` (in a stream,
 * without an HTTP status; for an HTTP error, with one). Errors with neither (connection errors) give undefined.
 */
export function sdkErrorBody(error: unknown): { body: OpenAIErrorBody; status?: number } | undefined {
  if (!isInstance(error, Error)) return undefined;
  // Read without throwing: an error's getters are not ours.
  const body = readProperty(error, 'error');
  const status = readProperty(error, 'status');
  const httpStatus = typeof status === 'number' ? status : undefined;
  const message = readString(error, 'message');
  if (isRecord(body)) {
    const nested = readProperty(body, 'error');
    const inner = isRecord(nested) ? nested : body;
    return { body: { message, ...readBody(inner) }, status: httpStatus };
  }
  return httpStatus === undefined ? undefined : { body: { message }, status: httpStatus };
}

/** The fields of an error body the adapters read, each read without throwing. */
function readBody(body: object): OpenAIErrorBody {
  const read: Record<string, unknown> = {};
  for (const key of ['message', 'type', 'code', 'param'] as const) {
    const value = readProperty(body, key);
    if (value !== undefined) read[key] = value;
  }
  return read as OpenAIErrorBody;
}
