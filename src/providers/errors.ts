import { CleanturnError } from '../errors.js';

/**
 * The wire formats that cleanturn's adapters read.
 * @inline
 */
export type ProviderName = 'openai-chat' | 'openai-responses' | 'anthropic-messages' | 'gemini' | 'ai-sdk';

/**
 * The cases of a {@link ProviderError}:
 *
 * | code | the case | retryable |
 * |---|---|---|
 * | `upstream` | the provider reported an error inside the stream: an `error` event or payload, or an SDK's error for one (`provider`, `upstreamCode`, `status`, `payload`) | as `isRetryableUpstream` decides, or the adapter's `retryable` option |
 * | `not-a-payload` | the input is not a parsed payload (a string, an array, a number): `JSON.parse` it first (`operator`, `payload`) | no |
 * | `invalid-field` | a field has a type the format does not allow: arguments as a number, a numeric tool name (`operator`, `field`, `payload`) | no |
 * | `unsafe-path` | a path-addressed argument walks `__proto__`, `constructor` or `prototype` (`operator`, `field`, `payload`) | no |
 * | `unknown-reference` | a payload refers to a block, item or call the stream never opened: a piece was lost on the way (`operator`, `field`, `payload`) | yes |
 * | `not-finished` | a next request was asked for a turn without a finish: it failed, or it is still streaming (`builder`) | no |
 * | `wrong-format` | the final attempt's output is another wire format's: a Gemini turn given to the Anthropic builder (`builder`) | no |
 * | `unanswered` | a call id of the final attempt has no result (`builder`, `callId`) | no |
 * | `unknown-call` | a result answers a call id the final attempt does not have: an abandoned attempt's call (`builder`, `callId`) | no |
 * | `answered-twice` | two results answer the same call id (`builder`, `callId`) | no |
 * | `still-running` | a call's result says another process still runs it (`in-progress`): there is no answer to send yet (`builder`, `callId`) | no |
 * | `not-a-result` | an entry of the results given to a builder is not a `tool-result` (`builder`) | no |
 *
 * @inline
 */
export type ProviderErrorCode =
  | 'upstream'
  | 'not-a-payload'
  | 'invalid-field'
  | 'unsafe-path'
  | 'unknown-reference'
  | 'not-finished'
  | 'wrong-format'
  | 'unanswered'
  | 'unknown-call'
  | 'answered-twice'
  | 'still-running'
  | 'not-a-result';

/**
 * An error of `cleanturn/providers`; its code names the case, and the fields that its
 * code names are set (the others are `undefined`). Three families of cases:
 *
 * - `upstream`: the provider reported an error inside a stream (an `error` event or payload, or an SDK's error for
 *   one), as an error notification. `retryable` is the answer of the one classification table,
 *   `isRetryableUpstream`, unless the adapter's `retryable` option decided otherwise. The
 *   provider's own code is `upstreamCode`.
 * - a payload the adapter cannot read correctly (`not-a-payload`, `invalid-field`, `unsafe-path`,
 *   `unknown-reference`), raised instead of dropping the payload or releasing a call with a wrong name or empty
 *   arguments. Only `unknown-reference` is retryable: a stream that refers to what it never opened lost a piece on
 *   the way, and a new attempt usually arrives whole; the other problems repeat.
 * - a next request that cannot be built from the turn and results given (`not-finished`, `wrong-format`,
 *   `unanswered`, `unknown-call`, `answered-twice`, `still-running`, `not-a-result`): the provider would reject it
 *   (a call id left unanswered, or answered for a call it never made). Not retryable: the same inputs fail the same
 *   way.
 *
 * Messages are one line:
 * - `anthropic-messages: Overloaded` (`upstream`: the format, then the provider's message);
 * - `openaiChat: expected a tool name (a non-empty string), got number (choices[0].delta.tool_calls[0].function.name): {…}`
 *   (a payload case: the operator, the problem, the field, the start of the payload);
 * - `toAnthropicMessages: call toolu_01 (lookup_order) of the final attempt has no result: …` (a next-request case:
 *   the builder, then the problem).
 *
 * @example
 * ```ts
 * catchError((error) => {
 *   if (error instanceof ProviderError && error.code === 'upstream') report(error.provider, error.upstreamCode);
 *   throw error;
 * });
 * ```
 */
export class ProviderError extends CleanturnError<ProviderErrorCode> {
  static override readonly kind: string = 'ProviderError';

  /** The wire format that carried the error (`upstream`). */
  readonly provider: ProviderName | undefined;
  /**
   * The provider's own error type or code (`overloaded_error`, `server_error`, `UNAVAILABLE`…), when it sent one
   * (`upstream`).
   */
  readonly upstreamCode: string | undefined;
  /** The HTTP-like status the payload carried, when it carried one: Gemini's `error.code` (`upstream`). */
  readonly status: number | undefined;
  /** The payload as received (`upstream` and the payload cases). */
  readonly payload: unknown;
  /** The operator that read the payload: `openaiChat`, `geminiContent`… (the payload cases). */
  readonly operator: string | undefined;
  /**
   * The field that could not be read (`choices[0].delta.tool_calls[0].function.arguments`), if one (the payload
   * cases).
   */
  readonly field: string | undefined;
  /** The builder that refused: `toAnthropicMessages`… (the next-request cases). */
  readonly builder: string | undefined;
  /** The call id concerned, when one is (`unanswered`, `unknown-call`, `answered-twice`, `still-running`). */
  readonly callId: string | undefined;

  /**
   * @param code Which case this is.
   * @param message One line for people and logs.
   * @param details The fields of the case, whether a new attempt could succeed, and the cause.
   */
  constructor(
    code: ProviderErrorCode,
    message: string,
    details: Partial<Omit<ProviderError, keyof CleanturnError>> & { retryable: boolean; cause?: unknown },
  ) {
    super(code, message, details);
    this.provider = details.provider;
    this.upstreamCode = details.upstreamCode;
    this.status = details.status;
    this.payload = details.payload;
    this.operator = details.operator;
    this.field = details.field;
    this.builder = details.builder;
    this.callId = details.callId;
  }
}

/**
 * An error the provider reported inside a stream (`upstream`); the message is prefixed with the format's name.
 * @internal
 */
export function upstreamProviderError(
  provider: ProviderName,
  message: string,
  details: {
    retryable: boolean;
    upstreamCode?: string | undefined;
    status?: number | undefined;
    payload: unknown;
    /** The error this one wraps (an SDK's own error), when there is one. */
    cause?: unknown;
  },
): ProviderError {
  return new ProviderError('upstream', `${provider}: ${message}`, {
    retryable: details.retryable,
    cause: details.cause,
    provider,
    upstreamCode: details.upstreamCode,
    status: details.status,
    payload: details.payload,
  });
}

/**
 * A payload the adapter cannot read correctly. Only `unknown-reference` is retryable.
 * @internal
 */
export function providerPayloadError(
  operator: string,
  code: 'not-a-payload' | 'invalid-field' | 'unsafe-path' | 'unknown-reference',
  message: string,
  details: { field?: string | undefined; payload: unknown },
): ProviderError {
  const where = details.field === undefined ? '' : ` (${details.field})`;
  return new ProviderError(code, `${operator}: ${message}${where}: ${preview(details.payload)}`, {
    retryable: code === 'unknown-reference',
    operator,
    field: details.field,
    payload: details.payload,
  });
}

/**
 * A next request cannot be built from the turn and results given. Not retryable.
 * @internal
 */
export function nextRequestError(
  builder: string,
  code: Exclude<
    ProviderErrorCode,
    'upstream' | 'not-a-payload' | 'invalid-field' | 'unsafe-path' | 'unknown-reference'
  >,
  message: string,
  callId?: string,
): ProviderError {
  return new ProviderError(code, `${builder}: ${message}`, { retryable: false, builder, callId });
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
