import type { SseRequest } from './fromSSE.js';
import type { ResumeFormatName } from './resumeResponse.js';
import { checkResumeOptions } from './resumeResponse.js';

/**
 * How {@link streamTurn} resumes a cut attempt instead of retrying it (`resume`, or `AttemptPlan.resume`): the
 * request that streams the rest of a response, and the one that cancels it. {@link openaiBackground} makes them
 * for OpenAI's API.
 *
 * @inline
 */
export interface ResumeRequests {
  /**
   * The request that streams response `id` after sequence number `after` (for the `interactions` format: after the
   * event whose `event_id` is `cursor`); from its start when `after` is -1 (a takeover reads it again).
   */
  retrieve: (context: {
    id: string;
    after: number;
    cursor?: string;
    signal: AbortSignal;
  }) => SseRequest | Promise<SseRequest>;
  /** How the stream places its events (see `resumeResponse`'s `format`): `'responses'` (default) or `'interactions'`. */
  format?: ResumeFormatName;
  /**
   * The request that cancels response `id`, sent when the turn abandons it before its end. It runs after the turn,
   * for at most 10 s; its answer is not read, and a failure is ignored (the response then runs to its end).
   */
  cancel?: (context: { id: string; signal: AbortSignal }) => SseRequest | Promise<SseRequest>;
  /** Resumes in a row that may deliver no new event before an ordinary retry takes over. Default 3. */
  maxResumes?: number;
  /** Milliseconds before the second resume in a row that delivered nothing, doubled after. Default 250. */
  delay?: number;
}

/**
 * Options of {@link openaiBackground}.
 *
 * @inline
 */
export interface OpenAIBackgroundOptions {
  /** The API's base URL, up to `/v1`. Default `https://api.openai.com/v1`. */
  baseUrl?: string | URL;
  /** Headers of both requests: `authorization`, and `openai-organization` or `openai-project` if you use them. */
  headers?: HeadersInit;
  /** See `ResumeRequests.maxResumes`. */
  maxResumes?: number;
  /** See `ResumeRequests.delay`. */
  delay?: number;
}

/**
 * The resume requests of OpenAI's Responses API in background mode, for `streamTurn({ resume })`:
 * `GET {baseUrl}/responses/{id}?stream=true&starting_after={after}` streams the rest of the response, and
 * `POST {baseUrl}/responses/{id}/cancel` cancels it. Each attempt's own request must create the response with
 * `background: true, stream: true` (only a background response goes on generating while no client is
 * connected), and the adapter must be `openaiResponses()`.
 *
 * ## Example
 * ```ts
 * import { openaiResponses } from 'cleanturn/providers';
 * import { openaiBackground, streamTurn } from 'cleanturn/transport';
 *
 * const headers = { authorization: `Bearer ${process.env.OPENAI_API_KEY}`, 'content-type': 'application/json' };
 * const body = { model: 'gpt-4.1', input: 'Refund order ORD-7781.', background: true, stream: true };
 * streamTurn({
 *   turnId: 'turn-42',
 *   adapter: openaiResponses(),
 *   request: () => ({ url: 'https://api.openai.com/v1/responses', init: { method: 'POST', headers, body: JSON.stringify(body) } }),
 *   resume: openaiBackground({ headers }),
 * }).subscribe(render);
 * ```
 *
 * @param options The base URL and the headers of the requests.
 * @returns The resume requests.
 */
export function openaiBackground(options: OpenAIBackgroundOptions = {}): ResumeRequests {
  return backgroundRequests('openaiBackground', 'https://api.openai.com/v1', options, {
    // From the start (a takeover reads the response again): no starting_after.
    retrieve: (at, { after }) => `${at}?stream=true${after < 0 ? '' : `&starting_after=${after}`}`,
    cancel: (at) => `${at}/cancel`,
    collection: 'responses',
  });
}

/** Where a provider's background API streams and cancels a resource, from its URL (`…/responses/{id}`). */
export interface BackgroundUrls {
  /** The path segment of the resources: `responses`, `interactions`. */
  collection: string;
  retrieve: (at: string, position: { after: number; cursor?: string }) => string;
  cancel: (at: string) => string;
  format?: ResumeFormatName;
}

/**
 * The resume requests of a background API (OpenAI Responses, Gemini Interactions): a GET that streams the rest of
 * resource `id` and a bodyless POST that cancels it, with the caller's headers but its content type.
 */
export function backgroundRequests(
  who: string,
  defaultBase: string,
  options: OpenAIBackgroundOptions,
  urls: BackgroundUrls,
): ResumeRequests {
  checkResumeOptions(who, options.maxResumes, options.delay);
  const base = String(options.baseUrl ?? defaultBase).replace(/\/+$/, '');
  const headers = new Headers(options.headers);
  // A GET and a bodyless POST carry no content type.
  headers.delete('content-type');
  const at = (id: string) => `${base}/${urls.collection}/${encodeURIComponent(id)}`;
  const streaming = new Headers(headers);
  streaming.set('accept', 'text/event-stream');
  const requests: ResumeRequests = {
    retrieve: ({ id, after, cursor }) => ({
      url: urls.retrieve(at(id), cursor === undefined ? { after } : { after, cursor }),
      init: { method: 'GET', headers: new Headers(streaming) },
    }),
    cancel: ({ id }) => ({
      url: urls.cancel(at(id)),
      init: { method: 'POST', headers: new Headers(headers) },
    }),
  };
  if (urls.format !== undefined) requests.format = urls.format;
  if (options.maxResumes !== undefined) requests.maxResumes = options.maxResumes;
  if (options.delay !== undefined) requests.delay = options.delay;
  return requests;
}
