// Which failed attempts may send their request again: the replay rule of `streamTurn`. One rule, one place: the failure says whether the request may have reached the server, the request says
// what a second run would repeat there.
import { CleanturnError, describeError } from '../errors.js';
import { isInstance, oneLine, readProperty } from '../internal/describeError.js';
import { TransportError, unsafeReplayError } from './errors.js';
import type { SseRequest } from './fromSSE.js';

/**
 * Whether sending a failed attempt's request again is harmless:
 * - `safe`: it cannot repeat anything on the server (nothing reached it, the server refused it, or the request keeps
 *   no state there: a second run is a second bill, which the turn's report counts, and nothing else);
 * - `unsafe`: it may repeat what the first one did to server-side state (append to a conversation twice);
 * - `unknown`: the request cannot be read (a body that is not JSON, a stream, an endpoint cleanturn does not know).
 *
 * @inline
 */
export type ReplaySafety = 'safe' | 'unsafe' | 'unknown';

/**
 * Why a replay is as safe as it is:
 * - `not-sent`: the request never reached the server (no request was made, DNS failed, the connection was refused
 *   or the host unreachable, TLS failed): `safe`;
 * - `refused`: the server answered with a status that says it did nothing (any 4xx, such as 400, 408, 409, 429, and
 *   503): `safe`;
 * - `stateless`: the request may have run, and running it again keeps no state on the server (a generation request
 *   of Chat Completions, Messages, Gemini, or Responses without a `conversation`; a `GET`): `safe`;
 * - `stateful`: the request may have run, and it changes state on the server (a Responses `conversation`, a run on
 *   an Assistants thread): `unsafe`;
 * - `unreadable`: the request may have run, and what it does cannot be read: `unknown`.
 *
 * @inline
 */
export type ReplayBasis = 'not-sent' | 'refused' | 'stateless' | 'stateful' | 'unreadable';

/** What `replaySafety` decided about one failed attempt. */
export interface ReplayVerdict {
  /** Whether the request may be sent again. */
  safety: ReplaySafety;
  /** The rule that decided. */
  basis: ReplayBasis;
  /** Why, for people and logs: `the server answered 429 before doing anything`. */
  reason: string;
}

/**
 * What `streamTurn`'s `replay` callback is asked about: a failed attempt whose request is not known to be safe to send
 * again. Return `true` to retry it all the same.
 *
 * @inline
 */
export interface ReplayInfo {
  /** The attempt that failed (1 for the first). */
  attempt: number;
  /** `unsafe` or `unknown`: a safe replay is retried without asking. */
  safety: Exclude<ReplaySafety, 'safe'>;
  /** The rule that decided (`stateful`, `unreadable`). */
  basis: ReplayBasis;
  /** Why, for people and logs. */
  reason: string;
  /** The request the attempt made, as its `request` function returned it; `undefined` when it made none. */
  request: SseRequest | undefined;
  /** What failed the attempt. */
  error: unknown;
}

/**
 * Whether a failed attempt's request may be sent again, from the request and what failed it.
 *
 * Two questions, in this order:
 * 1. Can the request have reached the server? No when no request was made (`request` undefined), when the
 *    connection failed before anything was sent (`ECONNREFUSED`, `ENOTFOUND`, `EAI_AGAIN`, `ENETUNREACH`,
 *    `EHOSTUNREACH`, a connect timeout, a TLS certificate error: the code anywhere in the error's `cause` chain), or
 *    when the server answered with a status that says it did nothing (a `TransportError` `http-status` with a 4xx or a 503): `safe`.
 *    Anything else may have run on the server: a reset or a close (the request may have been written), a stall, a
 *    cut mid-stream, a stream without its finish, an error event in the stream, a 500, 502 or 504, a failed resume.
 * 2. What would running it again repeat? Read from the request (its method, URL and JSON body):
 *    - a `GET` or `HEAD`: nothing (HTTP's safe methods): `safe`;
 *    - a Responses request with a `conversation` (a string or `{ id }`): its input and output are appended to the
 *      conversation again: `unsafe`; so is a run on an Assistants thread (`/threads/{id}/runs`);
 *    - Chat Completions, Messages, Gemini (`:streamGenerateContent`) and Responses requests without a
 *      `conversation` (with `store: true` or `previous_response_id` as well: a new response with a new id; the
 *      earlier one is not changed), by endpoint or by body (`messages`, `contents`, `model` with `input`): a second
 *      generation and a second bill, nothing else: `safe`;
 *    - a body that is not JSON, or that cannot be read synchronously (a `Request` object's body, a stream, a
 *      `Blob`, a form), or an endpoint and body of no known shape: `unknown`.
 *
 * Reading the request never throws: what cannot be read is `unknown`.
 *
 * @param request The request the failed attempt made, as its request factory returned it; `undefined` when it
 *   made none (the factory failed).
 * @param error What failed the attempt.
 * @returns Whether a replay is safe, by which rule, and why.
 * @internal
 */
export function replaySafety(request: SseRequest | undefined, error: unknown): ReplayVerdict {
  if (request === undefined)
    return verdict('not-sent', 'no request was made: the attempt failed before sending one');
  const unsent = notSentCode(error);
  if (unsent !== undefined)
    return verdict('not-sent', `the request was never sent: the connection failed first (${unsent})`);
  if (isInstance(error, TransportError) && error.code === 'http-status' && refusedStatus(error.status ?? 0))
    return verdict('refused', `the server answered ${error.status} before doing anything`);
  const state = stateOf(request);
  return verdict(
    state.basis,
    `${state.reason}; the failure (${oneLine(describeError(error), 300)}) may come after it ran`,
  );
}

/**
 * `streamTurn`'s rule for one failed attempt: `true` when it may be sent again (a safe replay; an unknown one
 * without `approve`; any that `approve` returns `true` for), else a `TransportError` `unsafe-replay`, thrown. What `approve`
 * throws is thrown as it is. `sent.readable` is the request to classify in place of `sent.request` (a `Request`
 * object with its body read); `approve` is shown the request as it was made.
 *
 * @internal
 */
export function replayApproved(
  sent: { attempt: number; request: SseRequest | undefined; readable?: SseRequest | undefined },
  error: unknown,
  approve: ((info: ReplayInfo) => boolean) | undefined,
): true {
  const { attempt, request } = sent;
  // A `Request` object is classified by a copy whose body was read before it was sent.
  const found = replaySafety(sent.readable ?? request, error);
  if (found.safety === 'safe') return true;
  const { basis, reason } = found;
  const approved =
    approve === undefined
      ? found.safety === 'unknown'
      : approve({ attempt, safety: found.safety, basis, reason, request, error }) === true;
  if (!approved) throw unsafeReplayError(attempt, found, error);
  return true;
}

function verdict(basis: ReplayBasis, reason: string): ReplayVerdict {
  const safety: ReplaySafety = basis === 'stateful' ? 'unsafe' : basis === 'unreadable' ? 'unknown' : 'safe';
  return { safety, basis, reason };
}

/** A status by which the server says it did nothing with the request: any 4xx, and 503 (overloaded, not started). */
function refusedStatus(status: number): boolean {
  return (status >= 400 && status <= 499) || status === 503;
}

/**
 * The codes of failures that come before a byte of the request is written: name resolution, the TCP connect, the
 * TLS handshake. A reset, a close or a timeout of an open connection (`ECONNRESET`, `EPIPE`, `ETIMEDOUT`,
 * `UND_ERR_SOCKET`) may come after the request was written, and is not one of them.
 */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_NONAME',
  'EAI_FAIL',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
]);

/** How deep the `cause` chain is followed (fetch nests two levels: `TypeError: fetch failed`, then the socket's). */
const MAX_CAUSE_DEPTH = 6;

/**
 * The code that proves the request was never sent, when the error is a connection failure (ours, or a foreign one: a
 * transport of your own) whose `cause` chain holds one; an `AggregateError` (every address of a host tried) proves
 * it only when each of its errors does. Our other errors (a stall, a failed resume, a missing finish) come after the
 * request was sent, whatever their cause says.
 */
function notSentCode(error: unknown): string | undefined {
  if (
    isInstance(error, CleanturnError) &&
    !(isInstance(error, TransportError) && error.code === 'connection')
  )
    return undefined;
  return codeInChain(error, 0);
}

function codeInChain(error: unknown, depth: number): string | undefined {
  if (depth > MAX_CAUSE_DEPTH || typeof error !== 'object' || error === null) return undefined;
  const code = readProperty(error, 'code');
  if (typeof code === 'string' && NOT_SENT_CODES.has(code)) return code;
  const errors = readProperty(error, 'errors');
  if (Array.isArray(errors) && errors.length > 0) {
    const codes = errors.map((inner) => codeInChain(inner, depth + 1));
    if (codes.every((c) => c !== undefined)) return codes[0];
    return undefined;
  }
  return codeInChain(readProperty(error, 'cause'), depth + 1);
}

/** What running the request again would do on the server, read from its method, URL and body. */
function stateOf(request: SseRequest): { basis: 'stateless' | 'stateful' | 'unreadable'; reason: string } {
  const read = readRequest(request);
  if (read === undefined) return { basis: 'unreadable', reason: 'the request cannot be read' };
  const { method, path, body } = read;
  if (method === 'GET' || method === 'HEAD')
    return {
      basis: 'stateless',
      reason: `a ${method} request changes nothing on the server (HTTP's safe methods)`,
    };
  const thread = /\/threads\/([^/]+)\/runs(?:\/|$)/.exec(path)?.[1];
  if (thread !== undefined)
    return {
      basis: 'stateful',
      reason: `a run on Assistants thread ${thread} adds its messages to the thread: a replay may add them twice`,
    };
  if (body.kind === 'unreadable')
    return { basis: 'unreadable', reason: `${body.what} cannot be read to see what the request does` };
  if (body.kind === 'not-json') return { basis: 'unreadable', reason: 'the request body is not JSON' };
  const value = body.kind === 'json' ? body.value : {};
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { basis: 'unreadable', reason: 'the request body is not a JSON object' };
  const fields = value as Record<string, unknown>;
  const conversation = conversationOf(fields.conversation);
  if (conversation !== undefined)
    return {
      basis: 'stateful',
      reason: `a Responses request bound to conversation ${conversation} appends its input and output to it: a replay may append them twice`,
    };
  const format = formatOf(path, fields);
  if (format === undefined)
    return { basis: 'unreadable', reason: 'neither the endpoint nor the body is of a shape cleanturn knows' };
  if (format === 'Responses') {
    const previous =
      typeof fields.previous_response_id === 'string' ? fields.previous_response_id : undefined;
    const chained =
      previous === undefined ? '' : `, chained to previous_response_id ${previous}, which is not changed`;
    return {
      basis: 'stateless',
      reason: `a Responses request without a conversation makes a new response${chained}: a replay makes another, billed again`,
    };
  }
  return {
    basis: 'stateless',
    reason: `a ${format} request keeps no state on the server: a replay is a second generation, billed again`,
  };
}

/** The id of a Responses `conversation` (a string, or an object with an `id`); any other value that is set counts. */
function conversationOf(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  const id = readProperty(value, 'id');
  return typeof id === 'string' ? id : describeShape(value);
}

function describeShape(value: unknown): string {
  return typeof value === 'object' ? 'given as an object without an id' : `given as a ${typeof value}`;
}

type GenerationFormat = 'Chat Completions' | 'Messages' | 'Gemini' | 'Responses';

/** The generation API a request is for, by its endpoint, else by the fields of its body (a proxy's own URL). */
function formatOf(path: string, fields: Record<string, unknown>): GenerationFormat | undefined {
  if (/\/chat\/completions\/?$/.test(path) || /\/completions\/?$/.test(path)) return 'Chat Completions';
  if (/\/messages\/?$/.test(path)) return 'Messages';
  if (/:(?:stream)?generateContent$/i.test(path)) return 'Gemini';
  if (/\/responses\/?$/.test(path)) return 'Responses';
  if (Array.isArray(fields.messages)) return 'Chat Completions';
  if (Array.isArray(fields.contents)) return 'Gemini';
  if (typeof fields.model === 'string' && fields.input !== undefined) return 'Responses';
  return undefined;
}

type ReadBody =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown }
  | { kind: 'not-json' }
  | { kind: 'unreadable'; what: string };

/** The method, the URL's path and the body of a request, or `undefined` when they cannot be read. */
function readRequest(request: SseRequest): { method: string; path: string; body: ReadBody } | undefined {
  try {
    if (typeof request === 'string' || isInstance(request, URL))
      return { method: 'GET', path: pathOf(String(request)), body: { kind: 'none' } };
    if (typeof Request !== 'undefined' && isInstance(request, Request)) {
      const body: ReadBody =
        request.body === null ? { kind: 'none' } : { kind: 'unreadable', what: "a Request object's body" };
      return { method: request.method.toUpperCase(), path: pathOf(request.url), body };
    }
    // Read directly, inside the try: a getter that throws makes the request unreadable, not a GET without a body.
    const { url, init } = request as { url: unknown; init?: unknown };
    if (typeof url !== 'string' && !isInstance(url, URL)) return undefined;
    if (init !== undefined && (typeof init !== 'object' || init === null)) return undefined;
    const { method: rawMethod, body: rawBody } = (init ?? {}) as { method?: unknown; body?: unknown };
    const body = readBody(rawBody);
    const method =
      typeof rawMethod === 'string' ? rawMethod.toUpperCase() : body.kind === 'none' ? 'GET' : 'POST';
    return { method, path: pathOf(String(url)), body };
  } catch {
    return undefined;
  }
}

/** The path of a URL, absolute or relative. */
function pathOf(url: string): string {
  return new URL(url, 'http://relative.invalid').pathname;
}

/** A fetch body, read without waiting: a string or bytes are parsed as JSON; anything else cannot be read. */
function readBody(body: unknown): ReadBody {
  if (body === undefined || body === null) return { kind: 'none' };
  let text: string;
  if (typeof body === 'string') text = body;
  else if (isInstance(body, ArrayBuffer) || ArrayBuffer.isView(body)) {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(body as ArrayBuffer | ArrayBufferView);
    } catch {
      return { kind: 'not-json' };
    }
  } else return { kind: 'unreadable', what: `a body of type ${bodyType(body)}` };
  try {
    return { kind: 'json', value: JSON.parse(text) };
  } catch {
    return { kind: 'not-json' };
  }
}

function bodyType(body: unknown): string {
  if (typeof body !== 'object') return typeof body;
  const name = readProperty(readProperty(body, 'constructor'), 'name');
  return typeof name === 'string' && name !== '' ? name : 'object';
}
