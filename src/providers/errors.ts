import { CleanturnError } from 'cleanturn';

/** The wire formats that cleanturn's adapters read. */
export type ProviderName = 'openai-chat' | 'openai-responses' | 'anthropic-messages' | 'gemini' | 'ai-sdk';

/**
 * An error the provider reported inside a stream (an `error` event or payload, or an SDK's error for one), as an
 * error notification. `retryable` is the answer of the one classification table, `isRetryableUpstream` from
 * `cleanturn`, unless the adapter's `retryable` option decided otherwise.
 */
export class ProviderError extends CleanturnError {
  /** The wire format that carried the error. */
  readonly provider: ProviderName;
  /** The provider's error type or code (`overloaded_error`, `server_error`, `UNAVAILABLE`…), when it sent one. */
  readonly code: string | undefined;
  /** The HTTP-like status the payload carried, when it carried one (Gemini's `error.code`). */
  readonly status: number | undefined;
  /** The error payload as received. */
  readonly payload: unknown;

  constructor(
    provider: ProviderName,
    message: string,
    details: {
      retryable: boolean;
      code?: string | undefined;
      status?: number | undefined;
      payload: unknown;
      /** The error this one wraps (an SDK's own error), when there is one. */
      cause?: unknown;
    },
  ) {
    super(`${provider}: ${message}`, { retryable: details.retryable, cause: details.cause });
    this.provider = provider;
    this.code = details.code;
    this.status = details.status;
    this.payload = details.payload;
  }
}

/**
 * What an adapter could not read:
 * - `not-a-payload`: the input is not a parsed payload (a string, an array, a number): `JSON.parse` it first.
 * - `invalid-field`: a field has a type the format does not allow (arguments as a number, a numeric tool name).
 * - `unsafe-path`: a path-addressed argument walks `__proto__`, `constructor` or `prototype`.
 * - `unknown-reference`: a payload refers to a block, item or call the stream never opened.
 */
export type PayloadProblem = 'not-a-payload' | 'invalid-field' | 'unsafe-path' | 'unknown-reference';

/**
 * A payload the adapter cannot read correctly. Raised instead of dropping the payload or releasing a call with a
 * wrong name or empty arguments. Only `unknown-reference` is retryable: a stream that refers to what it never
 * opened lost a piece on the way, and a new attempt usually arrives whole; the other problems repeat.
 */
export class ProviderPayloadError extends CleanturnError {
  /** Which check failed. */
  readonly code: PayloadProblem;
  /** The operator that read it (`openaiChat`, `geminiContent`…). */
  readonly operator: string;
  /** The field that could not be read (`choices[0].delta.tool_calls[0].function.arguments`), if one. */
  readonly field: string | undefined;
  /** The payload as received. */
  readonly payload: unknown;

  constructor(
    operator: string,
    code: PayloadProblem,
    message: string,
    details: { field?: string | undefined; payload: unknown },
  ) {
    const where = details.field === undefined ? '' : ` (${details.field})`;
    super(`${operator}: ${message}${where}: ${preview(details.payload)}`, {
      retryable: code === 'unknown-reference',
    });
    this.code = code;
    this.operator = operator;
    this.field = details.field;
    this.payload = details.payload;
  }
}

/** The start of a payload for a message; never throws (a payload's `toJSON` or `toString` may). */
function preview(payload: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(payload);
  } catch {
    text = undefined;
  }
  if (text === undefined) {
    try {
      text = String(payload);
    } catch {
      text = 'a payload that cannot be printed';
    }
  }
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
