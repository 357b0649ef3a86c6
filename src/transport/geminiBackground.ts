import { backgroundRequests, type OpenAIBackgroundOptions, type ResumeRequests } from './openaiBackground.js';

/**
 * Options of {@link geminiBackground}: the API's base URL (default `https://generativelanguage.googleapis.com/v1beta`),
 * the headers of both requests (`x-goog-api-key`, or an `authorization` bearer token), `maxResumes` and `delay`.
 *
 * @inline
 */
export type GeminiBackgroundOptions = OpenAIBackgroundOptions;

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
  return backgroundRequests('geminiBackground', 'https://generativelanguage.googleapis.com/v1beta', options, {
    collection: 'interactions',
    retrieve: (at, { cursor }) =>
      `${at}?stream=true${cursor === undefined ? '' : `&last_event_id=${encodeURIComponent(cursor)}`}`,
    cancel: (at) => `${at}:cancel`,
    format: 'interactions',
  });
}
