// What makes an HTTP response readable as an event stream, and how a failed one is described: the rules of every
// transport (fromSSE over fetch, httpClientSSE over Angular's HttpClient), written once. Internal: not exported from
// the entry point.
import { describeError } from '../errors.js';
import { isInstance, readProperty } from '../internal/describeError.js';

/**
 * How much of a body that is not an event stream (an HTTP error, an HTML page) is kept for the error: 4 KiB (bytes
 * over fetch, characters of the decoded text over Angular's HttpClient).
 */
export const ERROR_BODY_SIZE = 4096;

/**
 * Why a response cannot be read as an event stream:
 * - `status`: not 2xx (a `TransportError` `http-status`);
 * - `no-body`: a 204, or a 2xx without a body (a `not-event-stream` without a body);
 * - `not-event-stream`: a `content-type` other than `text/event-stream` (a `not-event-stream`). A response
 *   without a `content-type` is read as SSE.
 */
export type ResponseProblem = 'status' | 'no-body' | 'not-event-stream';

/**
 * What is wrong with a response for an event stream, or `undefined` when it can be read as one.
 *
 * @param status The HTTP status.
 * @param contentType The `content-type` header, if any.
 * @param hasBody Whether the response has a body (as far as the transport knows yet).
 */
export function responseProblem(
  status: number,
  contentType: string | undefined,
  hasBody = true,
): ResponseProblem | undefined {
  if (status < 200 || status > 299) return 'status';
  if (status === 204 || !hasBody) return 'no-body';
  if (contentType !== undefined && !isEventStream(contentType)) return 'not-event-stream';
  return undefined;
}

/** Whether a `content-type` names an event stream (`text/event-stream`, with or without parameters). */
export function isEventStream(contentType: string): boolean {
  const semicolon = contentType.indexOf(';');
  const type = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  return type === 'text/event-stream';
}

/**
 * The message of a `connection` error: what failed (`request failed`, `the stream broke`) and why. `fetch`
 * rejects with `TypeError: fetch failed` and puts what happened (ECONNRESET…) in its cause: the cause is shown.
 */
export function describeFailure(what: string, error: unknown): string {
  const inner = isInstance(error, Error) ? readProperty(error, 'cause') : undefined;
  const cause = inner !== undefined ? inner : error;
  return `${what}: ${describeError(cause)}`;
}
