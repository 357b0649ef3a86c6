import { CleanturnError, isRetryableStatus, isRetryableUpstream } from 'cleanturn';

export { isRetryableStatus };

/**
 * The server answered with a status other than 2xx. Whether it is retryable is the answer of the table the
 * provider adapters use (`isRetryableUpstream` in `cleanturn`): a provider error code in the JSON body decides
 * first (a 429 for `insufficient_quota` is final), then the status: 408, 409, 429 and 5xx yes; other 4xx
 * (400, 401, 403, 404…), which a new attempt would only repeat, no.
 */
export class HttpStatusError extends CleanturnError {
  /** The HTTP status. */
  readonly status: number;
  /** How long the server asked the client to wait (`retry-after`), in milliseconds. */
  readonly retryAfterMs: number | undefined;
  /** The start of the response body (up to 2 KiB), for logs. */
  readonly body: string;

  constructor(status: number, statusText: string, body: string, retryAfterMs: number | undefined) {
    super(`HTTP ${status}${statusText ? ` ${statusText}` : ''}${body ? `: ${body.slice(0, 200)}` : ''}`, {
      retryable: isRetryableUpstream({
        codes: bodyCodes(body),
        status,
        otherwise: isRetryableStatus(status),
      }),
    });
    this.status = status;
    this.retryAfterMs = retryAfterMs;
    this.body = body;
  }
}

/** The connection failed or broke mid-stream (refused, reset, closed by a proxy). Retryable. */
export class ConnectionError extends CleanturnError {
  constructor(message: string, cause: unknown) {
    super(message, { retryable: true, cause });
  }
}

/** No event arrived for the stall timeout; the attempt was aborted. Retryable. */
export class StallError extends CleanturnError {
  /** The timeout that expired, in milliseconds. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`no event for ${timeoutMs} ms: the stream stalled`, { retryable: true });
    this.timeoutMs = timeoutMs;
  }
}

/** An SSE `data` payload that should be JSON is not. Retryable: a garbled or cut payload. */
export class SseDataError extends CleanturnError {
  /** The payload as received. */
  readonly data: string;

  constructor(data: string, cause: unknown) {
    super(`SSE data is not JSON: ${JSON.stringify(data.slice(0, 80))}`, { retryable: true, cause });
    this.data = data;
  }
}

/**
 * Parses a `retry-after` header: delay-seconds or an HTTP date. Returns milliseconds, or undefined when absent
 * or unreadable.
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * The provider error codes of a JSON error body, most specific first: `error.code`, `error.type`,
 * `error.status` (OpenAI, Anthropic, Google), then the top-level `code` and `type`. None for a body that is not
 * JSON or was cut.
 */
function bodyCodes(body: string): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [];
  }
  if (typeof parsed !== 'object' || parsed === null) return [];
  const { error, code, type } = parsed as { error?: unknown; code?: unknown; type?: unknown };
  const inner = typeof error === 'object' && error !== null ? (error as Record<string, unknown>) : {};
  return [inner.code, inner.type, inner.status, code, type];
}
