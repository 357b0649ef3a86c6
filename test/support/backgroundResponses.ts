// A loopback server (127.0.0.1, random port) that implements OpenAI Responses in background mode, for resume tests:
//
// - POST /v1/responses with { background: true, stream: true, input, … } creates resp_<n> and generates its events on
//   the server, driven by timers and independent of any connection: it goes on while no client is connected, and
//   keeps each response's whole event log;
// - GET /v1/responses/{id}?stream=true&starting_after={n} streams the logged events after n, then the live ones,
//   and ends after the terminal event (404 with an OpenAI error body for an unknown id);
// - POST /v1/responses/{id}/cancel stops the generation and answers the response object;
// - per connection, a `faults` hook chooses a fault: a cut (socket destroyed) or a clean close after k events, an
//   error status (404, 400 expired, 500…), a hang-up before any byte, a gap or a replay in a resumed stream, an event
//   left out, and a proxy that re-serialises the events without their sequence_number or streams from the start.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { prng } from './random.js';

/** A Responses stream event as the server logs and sends it. */
export interface ResponseEvent {
  type: string;
  sequence_number: number;
  [field: string]: unknown;
}

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'cancelled' | 'incomplete';

/** One response the server created: what it generates, what it generated so far, and what happened to it. */
export interface BackgroundResponse {
  /** `resp_<n>`. */
  readonly id: string;
  /** 1 for the first response the server created. */
  readonly n: number;
  /** The create request's JSON body. */
  readonly body: Record<string, unknown>;
  readonly background: boolean;
  /** The whole text this response generates (the deltas joined), different for every response. */
  readonly text: string;
  readonly deltas: readonly string[];
  /** How many events the generation produces in all (unless it is cancelled or forgotten). */
  total: number;
  /** Every event generated so far, in order: `events[i].sequence_number === i`. */
  readonly events: ResponseEvent[];
  status: ResponseStatus;
  /** Whether the server is still generating events. */
  generating: boolean;
  /** A cancel request arrived for it. */
  cancelled: boolean;
  /** It can no longer be streamed (a retrieve answers 400 `response_expired`). */
  expired: boolean;
  /** Connections opened to its stream: 1 for the create, plus one per retrieve. */
  connections: number;
  /** Retrieve requests for it (streamed or not, answered or failed). */
  retrieves: number;
}

export type ConnectionKind = 'create' | 'retrieve';

/** What the `faults` hook knows of a connection. */
export interface FaultContext {
  kind: ConnectionKind;
  responseId: string;
  /** 0 for the create, then 1, 2… for each retrieve of the response. */
  connection: number;
  /** `starting_after` of a retrieve (-1 for the create, or a retrieve without it). */
  after: number;
  response: BackgroundResponse;
}

/** What goes wrong on one connection; fields combine (a replay, then a cut). */
export interface Fault {
  /**
   * Answer with an error instead of the stream: `not-found` (404, as for an unknown id), `expired` (400
   * `response_expired`), or another status with a `server_error` body (500…).
   */
  status?: number | 'not-found' | 'expired';
  /** Destroy the socket before any byte of the response (no status line). */
  hangup?: boolean;
  /** Destroy the socket after this many events of this connection (replays count); 0: right after the headers. */
  cutAfter?: number;
  /** With `cutAfter`: a TCP reset (RST) instead of a FIN; events written just before may be lost. */
  rst?: boolean;
  /** End the HTTP response cleanly after this many events, before the response's end. */
  endAfter?: number;
  /** Retrieve: start this many events late (at `starting_after + 1 + skip`): a gap. */
  skip?: number;
  /** Retrieve: first send again this many events at or below `starting_after`: duplicates. */
  replay?: number;
  /** Leave out the event with this sequence number (a lost event), on a create or a retrieve: a hole in the stream. */
  lose?: number;
  /** Send each event without its `sequence_number`, as a proxy that re-serialises the events does. */
  strip?: boolean;
  /** Retrieve: ignore `starting_after` and stream from event 0, as a proxy that does not pass the query on does. */
  fromStart?: boolean;
}

/** How a response fails on the server: `response.failed` after `afterDeltas` text deltas. */
export interface GenerationFailure {
  afterDeltas: number;
  code?: string;
  message: string;
}

export interface BackgroundServerOptions {
  /** Seeds the generated texts. Default 1. */
  seed?: number;
  /** Text deltas per response; default 8 to 24, drawn per response. */
  deltas?: number | ((response: { n: number; body: Record<string, unknown> }) => number);
  /** Milliseconds between two generated events; 0 generates one per `setImmediate`. Default 1. */
  interval?: number;
  /** Chooses the fault of each create and retrieve connection; `undefined`: none. */
  faults?: (context: FaultContext) => Fault | undefined;
  /** Makes a response fail on the server (`response.failed`). */
  fail?: (response: BackgroundResponse) => GenerationFailure | undefined;
}

export interface RequestRecord {
  kind: 'create' | 'retrieve' | 'cancel' | 'other';
  method: string;
  url: string;
  responseId?: string;
  /** The status answered; undefined when the socket was destroyed instead (a hang-up, or a cut mid-stream). */
  status?: number;
  /** The fault the hook chose for the connection, if any. */
  fault?: Fault;
  /** A stream's `starting_after` (-1 for a create), and the sequence numbers it wrote, in order. */
  after?: number;
  sent?: number[];
}

export interface BackgroundServer {
  /** `http://127.0.0.1:<port>`; the API is under `/v1`. */
  url: string;
  /** `{url}/v1`, the `baseUrl` of `openaiBackground`. */
  baseUrl: string;
  /** Every request, in arrival order. */
  requests: RequestRecord[];
  /** Requests by kind. */
  counts: { create: number; retrieve: number; cancel: number; other: number };
  /** The ids of every cancel request that arrived (unknown ids too), in order. */
  cancels: string[];
  /** Every response created, by id (forgotten ones too). */
  responses: Map<string, BackgroundResponse>;
  /** The response `resp_<n>`; throws when there is none. */
  response(id: string): BackgroundResponse;
  /** The server stops streaming the response: a retrieve answers 400 `response_expired`. */
  expire(id: string): void;
  /** The server forgets the response (its generation stops): a retrieve or cancel answers 404. */
  forget(id: string): void;
  /** Stops every generator and timer, destroys open sockets and closes the server. */
  close(): Promise<void>;
}

/** The terminal event types: nothing is generated after them. */
const TERMINAL = new Set(['response.completed', 'response.failed', 'response.incomplete', 'error']);

const WORDS = (
  'refund order book damaged arrived parcel courier invoice account credit card shipping label return ' +
  'warehouse replacement apology tracking number delivery address customer support ticket week monday ' +
  'friday voucher discount receipt payment bank transfer balance policy days window box cover torn page'
).split(' ');

interface Internal extends BackgroundResponse {
  /** Connections waiting for the next event. */
  readonly listeners: Set<() => void>;
  /** Live streams of this response, to end them when it is cancelled or forgotten. */
  readonly streams: Set<() => void>;
  /** The next delta to generate. */
  step: number;
  timer?: ReturnType<typeof setTimeout>;
  immediate?: ReturnType<typeof setImmediate>;
  failure?: GenerationFailure;
  forgotten: boolean;
}

/**
 * Starts the server.
 *
 * @param options The generation (seed, length, pace, failures) and the faults per connection.
 */
export async function startBackgroundResponses(
  options: BackgroundServerOptions = {},
): Promise<BackgroundServer> {
  const seed = options.seed ?? 1;
  const interval = options.interval ?? 1;
  const requests: RequestRecord[] = [];
  const counts = { create: 0, retrieve: 0, cancel: 0, other: 0 };
  const cancels: string[] = [];
  const responses = new Map<string, Internal>();
  const sockets = new Set<Socket>();
  const immediates = new Set<ReturnType<typeof setImmediate>>();
  let created = 0;
  let closed = false;

  /** A `setImmediate` that `close()` clears. */
  const soon = (fn: () => void) => {
    const handle = setImmediate(() => {
      immediates.delete(handle);
      fn();
    });
    immediates.add(handle);
  };

  // --- generation ---

  const textOf = (n: number, count: number): string[] => {
    const random = prng((seed ^ Math.imul(n, 0x9e3779b1)) >>> 0);
    const deltas: string[] = [];
    for (let i = 0; i < count; i++) {
      const words: string[] = [];
      const size = 1 + Math.floor(random() * 3);
      for (let w = 0; w < size; w++) words.push(WORDS[Math.floor(random() * WORDS.length)] as string);
      // The first delta names the response, so that no two generations have the same text.
      deltas.push(i === 0 ? `[resp_${n}] ${words.join(' ')}` : ` ${words.join(' ')}`);
    }
    return deltas;
  };

  const snapshot = (r: Internal, extra: Record<string, unknown> = {}) => ({
    id: r.id,
    object: 'response',
    created_at: 1_700_000_000 + r.n,
    status: r.status,
    background: r.background,
    model: typeof r.body.model === 'string' ? r.body.model : 'gpt-4.1',
    output: [],
    ...extra,
  });

  const messageId = (r: Internal) => `msg_${r.n}`;

  const push = (r: Internal, event: { type: string; [field: string]: unknown }) => {
    r.events.push({ ...event, sequence_number: r.events.length } as ResponseEvent);
    if (TERMINAL.has(event.type)) stopGenerating(r);
    for (const listener of [...r.listeners]) listener();
  };

  /** Generates the event after the last one. */
  const generate = (r: Internal) => {
    const item = { id: messageId(r), type: 'message', role: 'assistant' };
    const at = { item_id: messageId(r), output_index: 0, content_index: 0 };
    const seq = r.events.length;
    if (seq === 1) {
      push(r, { type: 'response.in_progress', response: snapshot(r) });
    } else if (seq === 2) {
      push(r, {
        type: 'response.output_item.added',
        output_index: 0,
        item: { ...item, status: 'in_progress', content: [] },
      });
    } else if (seq === 3) {
      push(r, { type: 'response.content_part.added', ...at, part: { type: 'output_text', text: '' } });
    } else if (r.failure !== undefined && r.step >= r.failure.afterDeltas) {
      r.status = 'failed';
      const error = { code: r.failure.code ?? 'server_error', message: r.failure.message };
      push(r, { type: 'response.failed', response: snapshot(r, { error }) });
    } else if (r.step < r.deltas.length) {
      push(r, { type: 'response.output_text.delta', ...at, delta: r.deltas[r.step++] as string });
    } else {
      const done = seq - 4 - r.deltas.length;
      const part = { type: 'output_text', text: r.text, annotations: [] };
      if (done === 0) push(r, { type: 'response.output_text.done', ...at, text: r.text });
      else if (done === 1) push(r, { type: 'response.content_part.done', ...at, part });
      else if (done === 2)
        push(r, {
          type: 'response.output_item.done',
          output_index: 0,
          item: { ...item, status: 'completed', content: [part] },
        });
      else {
        r.status = 'completed';
        const output = [{ ...item, status: 'completed', content: [part] }];
        const inputTokens = JSON.stringify(r.body.input ?? '').length;
        const usage = {
          input_tokens: inputTokens,
          output_tokens: r.deltas.length,
          total_tokens: inputTokens + r.deltas.length,
        };
        push(r, { type: 'response.completed', response: snapshot(r, { output, usage }) });
      }
    }
  };

  const schedule = (r: Internal) => {
    if (!r.generating || closed) return;
    const tick = () => {
      r.timer = undefined;
      r.immediate = undefined;
      if (!r.generating || closed) return;
      generate(r);
      schedule(r);
    };
    if (interval > 0) r.timer = setTimeout(tick, interval);
    else r.immediate = setImmediate(tick);
  };

  const stopGenerating = (r: Internal) => {
    r.generating = false;
    if (r.timer !== undefined) clearTimeout(r.timer);
    if (r.immediate !== undefined) clearImmediate(r.immediate);
    r.timer = undefined;
    r.immediate = undefined;
  };

  const createResponse = (body: Record<string, unknown>): Internal => {
    const n = ++created;
    const count =
      typeof options.deltas === 'function'
        ? options.deltas({ n, body })
        : (options.deltas ?? 8 + Math.floor(prng(seed + n)() * 17));
    const deltas = textOf(n, count);
    const r: Internal = {
      id: `resp_${n}`,
      n,
      body,
      background: body.background === true,
      text: deltas.join(''),
      deltas,
      total: 4 + count + 4,
      events: [],
      status: 'in_progress',
      generating: true,
      cancelled: false,
      expired: false,
      connections: 0,
      retrieves: 0,
      listeners: new Set(),
      streams: new Set(),
      step: 0,
      forgotten: false,
    };
    const failure = options.fail?.(r);
    if (failure !== undefined) {
      r.failure = failure;
      if (failure.afterDeltas <= count) r.total = 4 + failure.afterDeltas + 1;
    }
    responses.set(r.id, r);
    // response.created goes into the log at once; the rest comes on the generator's pace.
    push(r, { type: 'response.created', response: snapshot(r) });
    schedule(r);
    return r;
  };

  // --- streaming ---

  const openaiError = (message: string, code: string | null, type = 'invalid_request_error') =>
    JSON.stringify({ error: { message, type, param: null, code } });

  const sendJson = (res: ServerResponse, status: number, body: string, record: RequestRecord) => {
    record.status = status;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(body);
  };

  const notFound = (res: ServerResponse, id: string, record: RequestRecord) =>
    sendJson(res, 404, openaiError(`Response with id '${id}' not found.`, null), record);

  /** Streams `r`'s events from index `start` on the connection, with its fault. */
  const stream = (r: Internal, res: ServerResponse, start: number, fault: Fault, record: RequestRecord) => {
    record.status = 200;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    res.flushHeaders();
    let pos = Math.max(0, start);
    let written = 0;
    const sent: number[] = [];
    record.sent = sent;
    let done = false;
    // Writes not yet handed to the kernel, and what to do once they all are.
    let unflushed = 0;
    let flushed: (() => void) | undefined;
    const onFlushed = () => {
      unflushed--;
      if (unflushed === 0 && flushed !== undefined) {
        const then = flushed;
        flushed = undefined;
        then();
      }
    };
    const stop = () => {
      done = true;
      r.listeners.delete(pump);
      r.streams.delete(end);
    };
    const end = () => {
      if (done) return;
      stop();
      if (!res.destroyed) res.end();
    };
    const cut = () => {
      stop();
      record.status = undefined;
      const socket = res.socket;
      if (socket === null) return;
      const kill = () => {
        if (fault.rst) socket.resetAndDestroy();
        else socket.destroy();
      };
      // Let the events written so far leave before the socket goes.
      if (unflushed === 0) soon(kill);
      else flushed = () => soon(kill);
    };
    const pump = () => {
      for (;;) {
        if (done || res.destroyed) {
          stop();
          return;
        }
        if (fault.cutAfter !== undefined && written >= fault.cutAfter) return cut();
        if (fault.endAfter !== undefined && written >= fault.endAfter) return end();
        const event = r.events[pos];
        if (event === undefined) {
          // Nothing more will come (cancelled, forgotten, or a gap past the end): close the stream.
          if (!r.generating) end();
          return;
        }
        pos++;
        if (event.sequence_number === fault.lose) continue;
        written++;
        sent.push(event.sequence_number);
        unflushed++;
        const { sequence_number: _, ...stripped } = event;
        const data = JSON.stringify(fault.strip ? stripped : event);
        res.write(`event: ${event.type}\ndata: ${data}\n\n`, onFlushed);
        if (TERMINAL.has(event.type)) return end();
      }
    };
    r.listeners.add(pump);
    r.streams.add(end);
    res.on('close', () => {
      stop();
      // A response streamed without background mode stops when its client goes away.
      if (!r.background && r.generating) {
        r.status = 'cancelled';
        stopGenerating(r);
      }
    });
    pump();
  };

  const faultOf = (kind: ConnectionKind, r: Internal, after: number): Fault => {
    const connection = r.connections++;
    return options.faults?.({ kind, responseId: r.id, connection, after, response: r }) ?? {};
  };
  const withFault = (record: RequestRecord, fault: Fault): Fault => {
    if (Object.keys(fault).length > 0) record.fault = fault;
    return fault;
  };

  /** Answers a fault that replaces the stream; true when it did. */
  const refuse = (
    fault: Fault,
    r: Internal,
    req: IncomingMessage,
    res: ServerResponse,
    record: RequestRecord,
  ) => {
    if (fault.hangup) {
      record.status = undefined;
      req.socket.destroy();
      return true;
    }
    if (fault.status === undefined) return false;
    if (fault.status === 'not-found') notFound(res, r.id, record);
    else if (fault.status === 'expired')
      sendJson(
        res,
        400,
        openaiError(`Response '${r.id}' can no longer be streamed.`, 'response_expired'),
        record,
      );
    else
      sendJson(
        res,
        fault.status,
        openaiError('The server had an error while processing your request.', null, 'server_error'),
        record,
      );
    return true;
  };

  // --- routes ---

  const onCreate = (req: IncomingMessage, res: ServerResponse, text: string, record: RequestRecord) => {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return sendJson(res, 400, openaiError('The request body is not valid JSON.', null), record);
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return sendJson(res, 400, openaiError('The request body must be a JSON object.', null), record);
    const fields = body as Record<string, unknown>;
    const r = createResponse(fields);
    record.responseId = r.id;
    record.after = -1;
    const fault = withFault(record, faultOf('create', r, -1));
    if (refuse(fault, r, req, res, record)) return;
    if (fields.stream !== true) return sendJson(res, 200, JSON.stringify(snapshot(r)), record);
    stream(r, res, 0, fault, record);
  };

  const onRetrieve = (
    req: IncomingMessage,
    res: ServerResponse,
    id: string,
    query: URLSearchParams,
    record: RequestRecord,
  ) => {
    const r = responses.get(id);
    if (r !== undefined) r.retrieves++;
    if (r === undefined || r.forgotten) return notFound(res, id, record);
    if (query.get('stream') !== 'true') return sendJson(res, 200, JSON.stringify(snapshot(r)), record);
    const raw = query.get('starting_after');
    const after = raw === null ? -1 : Number(raw);
    if (!Number.isInteger(after) || after < -1)
      return sendJson(res, 400, openaiError(`Invalid 'starting_after': ${raw}.`, 'invalid_value'), record);
    record.after = after;
    const fault = withFault(record, faultOf('retrieve', r, after));
    if (refuse(fault, r, req, res, record)) return;
    // Only a background response can be streamed again (the hook may have forgotten or expired this one).
    if (!r.background || r.forgotten) return notFound(res, id, record);
    if (r.expired)
      return sendJson(
        res,
        400,
        openaiError(`Response '${r.id}' can no longer be streamed.`, 'response_expired'),
        record,
      );
    const start = fault.fromStart ? 0 : after + 1 + (fault.skip ?? 0) - (fault.replay ?? 0);
    stream(r, res, start, fault, record);
  };

  const onCancel = (res: ServerResponse, id: string, record: RequestRecord) => {
    cancels.push(id);
    const r = responses.get(id);
    if (r === undefined || r.forgotten) return notFound(res, id, record);
    if (!r.background)
      return sendJson(
        res,
        400,
        openaiError('Only responses created with background=true can be cancelled.', null),
        record,
      );
    r.cancelled = true;
    if (r.generating) {
      r.status = 'cancelled';
      stopGenerating(r);
      for (const end of [...r.streams]) end();
    }
    sendJson(res, 200, JSON.stringify(snapshot(r)), record);
  };

  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (chunk: Buffer) => parts.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const method = req.method ?? 'GET';
      const record: RequestRecord = { kind: 'other', method, url: req.url ?? '/' };
      requests.push(record);
      const cancel = /^\/v1\/responses\/([^/]+)\/cancel$/.exec(url.pathname);
      const one = /^\/v1\/responses\/([^/]+)$/.exec(url.pathname);
      if (method === 'POST' && url.pathname === '/v1/responses') {
        record.kind = 'create';
        counts.create++;
        onCreate(req, res, text, record);
      } else if (method === 'POST' && cancel !== null) {
        record.kind = 'cancel';
        record.responseId = decodeURIComponent(cancel[1] as string);
        counts.cancel++;
        onCancel(res, record.responseId, record);
      } else if (method === 'GET' && one !== null) {
        record.kind = 'retrieve';
        record.responseId = decodeURIComponent(one[1] as string);
        counts.retrieve++;
        onRetrieve(req, res, record.responseId, url.searchParams, record);
      } else {
        counts.other++;
        sendJson(res, 404, openaiError(`Unknown request URL: ${method} ${url.pathname}.`, null), record);
      }
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  const find = (id: string): Internal => {
    const r = responses.get(id);
    if (r === undefined) throw new Error(`no response ${id}`);
    return r;
  };

  return {
    url,
    baseUrl: `${url}/v1`,
    requests,
    counts,
    cancels,
    responses: responses as Map<string, BackgroundResponse>,
    response: find,
    expire(id) {
      find(id).expired = true;
    },
    forget(id) {
      const r = find(id);
      r.forgotten = true;
      stopGenerating(r);
      for (const end of [...r.streams]) end();
    },
    close: () =>
      new Promise<void>((resolve) => {
        closed = true;
        for (const r of responses.values()) {
          stopGenerating(r);
          r.listeners.clear();
        }
        for (const handle of immediates) clearImmediate(handle);
        immediates.clear();
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
