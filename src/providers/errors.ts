import { CleanturnError } from 'cleanturn';

/** The wire formats that cleanturn's adapters read. */
export type ProviderName = 'openai-chat' | 'openai-responses' | 'anthropic-messages' | 'gemini' | 'ai-sdk';

/**
 * An error the provider reported inside a stream (an `error` event or payload), as an error notification.
 * `retryable` says whether a new attempt makes sense: overloaded, rate-limited and server-side errors yes;
 * invalid requests, authentication and permission errors no.
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
