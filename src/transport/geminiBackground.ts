import type { ResumeRequests } from './openaiBackground.js';
import { checkResumeOptions } from './resumeResponse.js';

/** Options of {@link geminiBackground}. */
export interface GeminiBackgroundOptions {
  /** The API's base URL, up to the version. Default `https://generativelanguage.googleapis.com/v1beta`. */
  baseUrl?: string | URL;
  /** Headers of both requests: `x-goog-api-key` (or an `authorization` bearer token). */
  headers?: HeadersInit;
  /** See {@link ResumeRequests.maxResumes}. */
  maxResumes?: number;
  /** See {@link ResumeRequests.delay}. */
  delay?: number;
}

/**
 * The resume requests of the Gemini Interactions API in background mode, for `streamTurn({ resume })`:
 * `GET {baseUrl}/interactions/{id}?stream=true&last_event_id={event id}` streams the rest of the interaction after
 * the last event that arrived, and `POST {baseUrl}/interactions/{id}:cancel` cancels it. Each attempt's own request
 * must create the interaction with `background: true, stream: true`, and the adapter must be `geminiInteractions()`.
 * A cut then emits a `resume` (its `cursor` is the last `event_id`) and the same generation goes on: no reset, billed
 * once. Events the server sends again (ids already read) are dropped; a resumed event without an `event_id` cannot
 * be placed, and an ordinary retry takes over.
 *
 * ## Example
 * ```ts
 * import { geminiInteractions } from 'cleanturn/providers';
 * import { geminiBackground, streamTurn } from 'cleanturn/transport';
 *
 * const headers = { 'x-goog-api-key': process.env.GEMINI_API_KEY ?? '', 'content-type': 'application/json' };
 * const body = { model: 'gemini-2.5-flash', input: 'Refund order ORD-7781.', background: true, stream: true };
 * streamTurn({
 *   turnId: 'turn-42',
 *   adapter: geminiInteractions(),
 *   request: () => ({
 *     url: 'https://generativelanguage.googleapis.com/v1beta/interactions',
 *     init: { method: 'POST', headers, body: JSON.stringify(body) },
 *   }),
 *   resume: geminiBackground({ headers }),
 * }).subscribe(render);
 * ```
 *
 * @param options The base URL and the headers of the requests.
 * @returns The resume requests, in the `interactions` format.
 */
export function geminiBackground(options: GeminiBackgroundOptions = {}): ResumeRequests {
  checkResumeOptions('geminiBackground', options.maxResumes, options.delay);
  const base = String(options.baseUrl ?? 'https://generativelanguage.googleapis.com/v1beta').replace(
    /\/+$/,
    '',
  );
  const headers = new Headers(options.headers);
  // A GET and a bodyless POST carry no content type.
  headers.delete('content-type');
  const at = (id: string) => `${base}/interactions/${encodeURIComponent(id)}`;
  const streaming = new Headers(headers);
  streaming.set('accept', 'text/event-stream');
  const requests: ResumeRequests = {
    format: 'interactions',
    retrieve: ({ id, cursor }) => ({
      url: `${at(id)}?stream=true${cursor === undefined ? '' : `&last_event_id=${encodeURIComponent(cursor)}`}`,
      init: { method: 'GET', headers: new Headers(streaming) },
    }),
    cancel: ({ id }) => ({
      url: `${at(id)}:cancel`,
      init: { method: 'POST', headers: new Headers(headers) },
    }),
  };
  if (options.maxResumes !== undefined) requests.maxResumes = options.maxResumes;
  if (options.delay !== undefined) requests.delay = options.delay;
  return requests;
}
