// A strict OpenAI Responses server on 127.0.0.1 (a free port), for the AI SDK path: `@ai-sdk/openai`'s responses
// model, driven by `streamText`, talks to it as to the API. Each response is scripted per request and streamed as
// the API streams it (SSE, one event a write); it can cut the connection after N events. Each request body is
// validated as the API documents it, and an invalid one gets the API's 400/404 error JSON:
// - every `function_call_output` answers a `function_call` earlier in the input, and every `function_call` has
//   its `function_call_output` ("No tool output found for function call …");
// - with `store: false`, nothing is referenced by id (`item_reference`: items are not persisted), every
//   `reasoning` item carries its `encrypted_content`, the content this server issued, and a `function_call` of a
//   response that reasoned comes after that response's reasoning item;
// - with `store` on, an `item_reference` names an item of a completed response.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback } from './httpServer.js';

/** An output item of a scripted response. */
export type ScriptItem =
  | { type: 'reasoning'; id: string; summary: string[]; encrypted: string }
  | { type: 'message'; id: string; text: string[] }
  | { type: 'function_call'; id: string; callId: string; name: string; arguments: string[] };

/** What the server streams for one request. */
export interface ResponsesScript {
  /** The response id (`resp_…`). */
  id: string;
  items: ScriptItem[];
  /** Destroy the socket after this many SSE events: a cut mid-stream (no `response.completed`). */
  cutAfterEvents?: number;
  usage?: { input: number; cached: number; output: number; reasoning: number };
}

/** One request the server received, and its answer. */
export interface ReceivedRequest {
  path: string;
  body: string;
  /** The JSON body, when it parsed. */
  json: Record<string, unknown> | undefined;
  /** 200, or the status of the error it was answered with. */
  status: number;
  /** The error message it was answered with. */
  error?: string;
}

export interface StrictResponsesServer {
  /** The base URL of the API (`…/v1`). */
  baseURL: string;
  requests: ReceivedRequest[];
  close(): Promise<void>;
}

/** A request the API rejects: its status and message. */
class Rejected extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null = null,
    readonly param: string | null = 'input',
  ) {
    super(message);
  }
}

/** What the server issued in its responses: what a later stateless request may bring back. */
interface Issued {
  /** Encrypted reasoning content it streamed, by reasoning item id. */
  encrypted: Map<string, string>;
  /** For each call id it streamed, the reasoning item of the same response (when it reasoned). */
  reasoningOfCall: Map<string, string | undefined>;
  /** Item ids of responses that completed with `store` on: what an `item_reference` may name. */
  stored: Set<string>;
}

/** Starts the server; `script(n)` is the response to the n-th valid request (0-based). */
export async function startStrictResponsesServer(
  script: (n: number) => ResponsesScript,
): Promise<StrictResponsesServer> {
  const requests: ReceivedRequest[] = [];
  const issued: Issued = { encrypted: new Map(), reasoningOfCall: new Map(), stored: new Set() };
  let valid = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on('data', (chunk: Buffer) => parts.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      const received: ReceivedRequest = { path: req.url ?? '/', body, json: undefined, status: 200 };
      requests.push(received);
      try {
        received.json = validate(req, body, issued);
      } catch (error) {
        if (!(error instanceof Rejected)) throw error;
        received.status = error.status;
        received.error = error.message;
        res.writeHead(error.status, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: {
              message: error.message,
              type: 'invalid_request_error',
              param: error.param,
              code: error.code,
            },
          }),
        );
        return;
      }
      void stream(script(valid++), received.json.store !== false, res, issued);
    });
  });
  const { port, close } = await listenOnLoopback(server);
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close,
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The request's JSON body, or what the API answers to it. */
function validate(req: IncomingMessage, body: string, issued: Issued): Record<string, unknown> {
  if (req.method !== 'POST' || req.url !== '/v1/responses') {
    throw new Rejected(404, `Invalid URL (${req.method} ${req.url})`, null, null);
  }
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new Rejected(400, 'We could not parse the JSON body of your request.', null, null);
  }
  if (!isRecord(json)) throw new Rejected(400, 'The body must be a JSON object.', null, null);
  if (typeof json.model !== 'string')
    throw new Rejected(400, "Missing required parameter: 'model'.", null, 'model');
  if (json.stream !== true)
    throw new Rejected(400, 'This server only streams: set stream to true.', null, 'stream');
  const input = json.input;
  if (!Array.isArray(input)) throw new Rejected(400, "Invalid type for 'input': expected an array.");
  const stateless = json.store === false;
  const calls = new Map<string, number>();
  const answered = new Set<string>();
  const reasoningSeen = new Set<string>();
  input.forEach((item: unknown, i) => {
    if (!isRecord(item)) throw new Rejected(400, `Invalid type for 'input[${i}]': expected an object.`);
    const where = `input[${i}]`;
    switch (item.type) {
      case 'item_reference': {
        const id = String(item.id);
        if (stateless) {
          throw new Rejected(
            404,
            `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`,
          );
        }
        if (!issued.stored.has(id)) throw new Rejected(404, `Item with id '${id}' not found.`);
        if (id.startsWith('rs_')) reasoningSeen.add(id);
        return;
      }
      case 'reasoning': {
        const id = typeof item.id === 'string' ? item.id : undefined;
        const content = item.encrypted_content;
        if (typeof content !== 'string') {
          if (stateless) {
            throw new Rejected(
              404,
              `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`,
            );
          }
          if (id === undefined || !issued.stored.has(id))
            throw new Rejected(404, `Item with id '${id}' not found.`);
        } else if (id === undefined || issued.encrypted.get(id) !== content) {
          throw new Rejected(
            400,
            `The encrypted content for item ${id} could not be verified.`,
            'invalid_encrypted_content',
          );
        }
        if (!Array.isArray(item.summary))
          throw new Rejected(400, `Missing required parameter: '${where}.summary'.`);
        if (id !== undefined) reasoningSeen.add(id);
        return;
      }
      case 'function_call': {
        const callId = item.call_id;
        if (typeof callId !== 'string' || callId === '') {
          throw new Rejected(400, `Missing required parameter: '${where}.call_id'.`);
        }
        if (typeof item.name !== 'string' || typeof item.arguments !== 'string') {
          throw new Rejected(
            400,
            `Invalid '${where}': a function_call needs a name and its arguments (a string).`,
          );
        }
        try {
          JSON.parse(item.arguments);
        } catch {
          throw new Rejected(400, `Invalid '${where}.arguments': not valid JSON.`);
        }
        const reasoning = issued.reasoningOfCall.get(callId);
        if (stateless && reasoning !== undefined && !reasoningSeen.has(reasoning)) {
          throw new Rejected(
            400,
            `Item of type 'function_call' (call_id ${callId}) was provided without its required 'reasoning' item: '${reasoning}'.`,
          );
        }
        calls.set(callId, i);
        return;
      }
      case 'function_call_output': {
        const callId = String(item.call_id);
        if (!calls.has(callId)) {
          throw new Rejected(400, `No tool call found for function call output with call_id ${callId}.`);
        }
        if (answered.has(callId))
          throw new Rejected(400, `Duplicate function call output for call_id ${callId}.`);
        if (typeof item.output !== 'string' && !Array.isArray(item.output)) {
          throw new Rejected(400, `Invalid type for '${where}.output': expected a string or an array.`);
        }
        answered.add(callId);
        return;
      }
      default:
        return; // messages and the rest
    }
  });
  for (const callId of calls.keys()) {
    if (!answered.has(callId)) throw new Rejected(400, `No tool output found for function call ${callId}.`);
  }
  return json;
}

/** The SSE events of a scripted response, in order, as the API streams them. */
function eventsOf(script: ResponsesScript): Record<string, unknown>[] {
  const response = (status: string, output: unknown[], usage: unknown = null) => ({
    id: script.id,
    object: 'response',
    created_at: 1767225800,
    status,
    error: null,
    incomplete_details: null,
    model: 'o4-mini-2025-04-16',
    output,
    usage,
  });
  const events: Record<string, unknown>[] = [
    { type: 'response.created', response: response('in_progress', []) },
    { type: 'response.in_progress', response: response('in_progress', []) },
  ];
  const done: unknown[] = [];
  script.items.forEach((item, output_index) => {
    const item_id = item.id;
    if (item.type === 'reasoning') {
      events.push({
        type: 'response.output_item.added',
        output_index,
        item: { id: item_id, type: 'reasoning', summary: [], encrypted_content: null },
      });
      item.summary.forEach((text, summary_index) => {
        const part = { type: 'summary_text', text: '' };
        events.push({
          type: 'response.reasoning_summary_part.added',
          item_id,
          output_index,
          summary_index,
          part,
        });
        const half = Math.ceil(text.length / 2);
        for (const delta of [text.slice(0, half), text.slice(half)]) {
          events.push({
            type: 'response.reasoning_summary_text.delta',
            item_id,
            output_index,
            summary_index,
            delta,
          });
        }
        events.push({
          type: 'response.reasoning_summary_text.done',
          item_id,
          output_index,
          summary_index,
          text,
        });
        events.push({
          type: 'response.reasoning_summary_part.done',
          item_id,
          output_index,
          summary_index,
          part: { type: 'summary_text', text },
        });
      });
      const whole = {
        id: item_id,
        type: 'reasoning',
        summary: item.summary.map((text) => ({ type: 'summary_text', text })),
        encrypted_content: item.encrypted,
      };
      events.push({ type: 'response.output_item.done', output_index, item: whole });
      done.push(whole);
    } else if (item.type === 'message') {
      const text = item.text.join('');
      const start = { id: item_id, type: 'message', status: 'in_progress', role: 'assistant', content: [] };
      events.push({ type: 'response.output_item.added', output_index, item: start });
      const part = { type: 'output_text', text: '', annotations: [] };
      events.push({ type: 'response.content_part.added', item_id, output_index, content_index: 0, part });
      for (const delta of item.text) {
        events.push({
          type: 'response.output_text.delta',
          item_id,
          output_index,
          content_index: 0,
          delta,
          logprobs: [],
        });
      }
      events.push({
        type: 'response.output_text.done',
        item_id,
        output_index,
        content_index: 0,
        text,
        logprobs: [],
      });
      const finished = { type: 'output_text', text, annotations: [], logprobs: [] };
      events.push({
        type: 'response.content_part.done',
        item_id,
        output_index,
        content_index: 0,
        part: finished,
      });
      const whole = { ...start, status: 'completed', content: [finished] };
      events.push({ type: 'response.output_item.done', output_index, item: whole });
      done.push(whole);
    } else {
      const args = item.arguments.join('');
      const base = { id: item_id, type: 'function_call', call_id: item.callId, name: item.name };
      events.push({
        type: 'response.output_item.added',
        output_index,
        item: { ...base, status: 'in_progress', arguments: '' },
      });
      for (const delta of item.arguments) {
        events.push({ type: 'response.function_call_arguments.delta', item_id, output_index, delta });
      }
      events.push({ type: 'response.function_call_arguments.done', item_id, output_index, arguments: args });
      const whole = { ...base, status: 'completed', arguments: args };
      events.push({ type: 'response.output_item.done', output_index, item: whole });
      done.push(whole);
    }
  });
  const u = script.usage ?? { input: 310, cached: 0, output: 212, reasoning: 192 };
  const usage = {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cached },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.input + u.output,
  };
  events.push({ type: 'response.completed', response: response('completed', done, usage) });
  return events.map((event, sequence_number) => ({ ...event, sequence_number }));
}

/** Streams a scripted response, one event a write; records what it issued; cuts it if the script says so. */
async function stream(
  script: ResponsesScript,
  store: boolean,
  res: ServerResponse,
  issued: Issued,
): Promise<void> {
  const events = eventsOf(script);
  const limit = script.cutAfterEvents ?? events.length;
  let reasoning: string | undefined;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const event of events.slice(0, limit)) {
    if (res.destroyed) return;
    const item = event.item as Record<string, unknown> | undefined;
    if (event.type === 'response.output_item.added' && item?.type === 'reasoning')
      reasoning = String(item.id);
    if (event.type === 'response.output_item.added' && item?.type === 'function_call') {
      issued.reasoningOfCall.set(String(item.call_id), reasoning);
    }
    if (item !== undefined && typeof item.encrypted_content === 'string') {
      issued.encrypted.set(String(item.id), item.encrypted_content);
    }
    if (event.type === 'response.completed' && store) {
      for (const done of (event.response as { output: { id: string }[] }).output) issued.stored.add(done.id);
    }
    res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (limit < events.length) {
    await new Promise((resolve) => setImmediate(resolve)); // let the written events leave before the reset
    res.socket?.destroy();
  } else {
    res.end();
  }
}
