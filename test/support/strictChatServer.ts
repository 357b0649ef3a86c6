// A strict Chat Completions API on 127.0.0.1 (a free port) for the loop tests: `POST /v1/chat/completions` streams
// the chunks scripted for each request, and every request body is checked first, as the API and the compatible
// providers check it. An invalid one is an HTTP 400 with the OpenAI error JSON (`{"error":{"message":…,"type":
// "invalid_request_error","param":…,"code":null}}`) and streams nothing:
// - `model` is a non-empty string, `stream` is true, `messages` a non-empty list of messages whose `role` is
//   `system`, `developer`, `user`, `assistant` or `tool`;
// - an assistant message has `content` (a string, a list of parts, or null only when it has `tool_calls`), and
//   each of its `tool_calls` an `id`, the `type` "function", and a `function` with a non-empty `name` and its
//   `arguments` as a string;
// - the messages right after an assistant message with `tool_calls` are `tool` messages, exactly one per
//   `tool_call_id` (OpenAI: "An assistant message with 'tool_calls' must be followed by tool messages responding to
//   each 'tool_call_id'…"), each with string `content`; a tool message anywhere else is rejected ("messages with
//   role 'tool' must be a response to a preceeding message with 'tool_calls'");
// - an assistant message with calls is one this server streamed whole: its calls are the calls of a response that
//   reached its end (an id of a response cut short is unknown), with their names and argument text, and with
//   `requireBack` the reasoning of that response comes back too: `reasoning_content` as streamed (DeepSeek's
//   thinking mode: "The `reasoning_content` in the thinking mode must be passed back to the API."), or
//   `reasoning_details` exactly as merged (OpenRouter, relaying Anthropic: "Invalid `signature` in `thinking`
//   block").
// A step can cut the connection after a number of events (the socket destroyed mid-stream).

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isDeepStrictEqual } from 'node:util';
import { listenOnLoopback } from './httpServer.js';

/** The assistant message a step amounts to once streamed whole: what a next request must carry back. */
export interface ChatStepMessage {
  /** The calls, with their argument text as streamed. */
  tool_calls: readonly { id: string; name: string; arguments: string }[];
  reasoning_content?: string;
  reasoning_details?: readonly unknown[];
}

/** What the server streams for one valid request. */
export interface ChatStep {
  /** The SSE payloads in order: objects as JSON, strings (`[DONE]`) as they are. */
  events: readonly (object | string)[];
  /** Destroy the socket after this many events instead of ending the response. */
  cutAfter?: number;
  /** The assistant message the step amounts to when it is streamed whole (a step with calls needs one). */
  message?: ChatStepMessage;
}

/** A request the server received: its parsed body and the status it got. */
export interface ChatRequest {
  body: unknown;
  status: number;
  /** The error message of a rejected request. */
  error?: string;
}

export interface StrictChatServer {
  /** The base URL (`http://127.0.0.1:<port>/v1`): requests go to `/chat/completions` under it. */
  url: string;
  requests: ChatRequest[];
  close(): Promise<void>;
}

export interface StrictChatOptions {
  /** The step of the n-th valid request (0-based). */
  steps: readonly ChatStep[];
  /** The reasoning the provider wants back with the calls it made: DeepSeek's or OpenRouter's. */
  requireBack?: 'reasoning_content' | 'reasoning_details';
}

const roles = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

/** A rejection: the message and the parameter it is about. */
class Invalid extends Error {
  constructor(
    message: string,
    readonly param: string | null,
  ) {
    super(message);
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Starts the server; close it when the test is done. */
export async function startStrictChatServer(options: StrictChatOptions): Promise<StrictChatServer> {
  const requests: ChatRequest[] = [];
  /** The messages of the steps streamed whole, by call id. */
  const completed = new Map<string, ChatStepMessage>();
  let served = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const pieces: Buffer[] = [];
    req.on('data', (piece: Buffer) => pieces.push(piece));
    req.on('end', () => {
      const text = Buffer.concat(pieces).toString('utf8');
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: {
              message: `Unknown request URL: ${req.method} ${req.url}`,
              type: 'invalid_request_error',
              param: null,
              code: 'unknown_url',
            },
          }),
        );
        return;
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
        check(body, completed, options.requireBack);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        const param = error instanceof Invalid ? error.param : null;
        requests.push({ body, status: 400, error: message });
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', param, code: null } }));
        return;
      }
      requests.push({ body, status: 200 });
      const step = options.steps[served++];
      if (step === undefined) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: {
              message: 'no step scripted for this request',
              type: 'server_error',
              param: null,
              code: null,
            },
          }),
        );
        return;
      }
      void stream(step, res, () => {
        for (const call of step.message?.tool_calls ?? [])
          completed.set(call.id, step.message as ChatStepMessage);
      });
    });
  });
  const { port, close } = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close,
  };
}

/**
 * Writes the step's events one by one, and cuts the socket after `cutAfter`. `made` runs once the response is
 * generated whole: when its `finish_reason` went out (a client may close the stream there, before `[DONE]`).
 */
async function stream(step: ChatStep, res: ServerResponse, made: () => void): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const cut = step.cutAfter !== undefined;
  const limit = Math.min(step.events.length, step.cutAfter ?? step.events.length);
  for (let i = 0; i < limit; i++) {
    if (res.destroyed) return;
    const event = step.events[i];
    const data = typeof event === 'string' ? event : JSON.stringify(event);
    res.write(`data: ${data}\n\n`);
    if (!cut && finishes(event)) made();
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (cut) res.socket?.destroy();
  else if (!res.destroyed) res.end();
}

/** Whether an event is a chunk that reports a finish_reason. */
function finishes(event: unknown): boolean {
  const choices = isObject(event) ? event.choices : undefined;
  return Array.isArray(choices) && choices.some((c) => isObject(c) && typeof c.finish_reason === 'string');
}

/** Checks a request body as the API does; throws an {@link Invalid} naming what is wrong. */
function check(
  body: unknown,
  completed: ReadonlyMap<string, ChatStepMessage>,
  requireBack: StrictChatOptions['requireBack'],
): void {
  if (!isObject(body)) throw new Invalid('We could not parse the JSON body of your request.', null);
  if (typeof body.model !== 'string' || body.model === '')
    throw new Invalid('you must provide a model parameter', 'model');
  if (body.stream !== true) throw new Invalid('this server only streams: stream must be true', 'stream');
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0)
    throw new Invalid(
      "Invalid 'messages': empty array. Expected an array with minimum length 1.",
      'messages',
    );
  /** The call ids of the assistant message being answered, and those answered so far. */
  let open: { ids: string[]; answered: Set<string>; at: number } | undefined;
  messages.forEach((message: unknown, i) => {
    if (!isObject(message) || typeof message.role !== 'string' || !roles.has(message.role))
      throw new Invalid(`Invalid value for 'messages[${i}].role'.`, `messages.[${i}].role`);
    if (message.role !== 'tool' && open !== undefined) unanswered(open);
    if (message.role !== 'tool') open = undefined;
    switch (message.role) {
      case 'assistant': {
        open = assistant(message, i, completed, requireBack);
        break;
      }
      case 'tool': {
        const id = message.tool_call_id;
        if (open === undefined || typeof id !== 'string' || !open.ids.includes(id)) {
          throw new Invalid(
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
            `messages.[${i}].role`,
          );
        }
        if (open.answered.has(id))
          throw new Invalid(`Duplicate tool message for tool_call_id ${id}.`, `messages.[${i}].tool_call_id`);
        if (typeof message.content !== 'string')
          throw new Invalid(
            `Invalid type for 'messages[${i}].content': expected a string.`,
            `messages.[${i}].content`,
          );
        open.answered.add(id);
        break;
      }
      default:
        if (typeof message.content !== 'string' && !Array.isArray(message.content))
          throw new Invalid(
            `Invalid type for 'messages[${i}].content': expected a string.`,
            `messages.[${i}].content`,
          );
    }
  });
  if (open !== undefined) unanswered(open);
}

function unanswered(open: { ids: string[]; answered: Set<string>; at: number }): void {
  const missing = open.ids.filter((id) => !open.answered.has(id));
  if (missing.length > 0) {
    throw new Invalid(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(', ')}`,
      `messages.[${open.at}].role`,
    );
  }
}

/** Checks an assistant message; returns its calls to answer, if it has any. */
function assistant(
  message: Record<string, unknown>,
  i: number,
  completed: ReadonlyMap<string, ChatStepMessage>,
  requireBack: StrictChatOptions['requireBack'],
): { ids: string[]; answered: Set<string>; at: number } | undefined {
  const calls = message.tool_calls;
  const content = message.content;
  if (calls !== undefined && !Array.isArray(calls))
    throw new Invalid(
      `Invalid type for 'messages[${i}].tool_calls': expected an array.`,
      `messages.[${i}].tool_calls`,
    );
  const hasCalls = Array.isArray(calls) && calls.length > 0;
  if (
    !(
      typeof content === 'string' ||
      Array.isArray(content) ||
      (content === null && hasCalls) ||
      (content === undefined && hasCalls)
    )
  )
    throw new Invalid(
      `Invalid value for 'messages[${i}].content': expected a string, got null.`,
      `messages.[${i}].content`,
    );
  if (!hasCalls) return undefined;
  const ids: string[] = [];
  (calls as unknown[]).forEach((call, j) => {
    const at = `messages.[${i}].tool_calls.[${j}]`;
    if (!isObject(call) || typeof call.id !== 'string' || call.id === '')
      throw new Invalid(`Missing required parameter: '${at}.id'.`, `${at}.id`);
    if (call.type !== 'function')
      throw new Invalid(
        `Invalid value: '${String(call.type)}'. Supported values are: 'function'.`,
        `${at}.type`,
      );
    const fn = call.function;
    if (!isObject(fn) || typeof fn.name !== 'string' || fn.name === '')
      throw new Invalid(`Missing required parameter: '${at}.function.name'.`, `${at}.function.name`);
    if (typeof fn.arguments !== 'string')
      throw new Invalid(
        `Invalid type for '${at}.function.arguments': expected a string.`,
        `${at}.function.arguments`,
      );
    ids.push(call.id);
  });
  const first = ids[0] as string;
  const made = completed.get(first);
  const sent = (calls as { id: string; function: { name: string; arguments: string } }[]).map((c) => ({
    id: c.id,
    name: c.function.name,
    arguments: c.function.arguments,
  }));
  if (made === undefined || !isDeepStrictEqual(sent, made.tool_calls)) {
    throw new Invalid(
      `messages[${i}].tool_calls do not match a response of this model: unknown or altered tool call ${first}.`,
      `messages.[${i}].tool_calls`,
    );
  }
  if (requireBack === 'reasoning_content' && message.reasoning_content !== made.reasoning_content)
    throw new Invalid(
      'The `reasoning_content` in the thinking mode must be passed back to the API.',
      `messages.[${i}].reasoning_content`,
    );
  if (
    requireBack === 'reasoning_details' &&
    !isDeepStrictEqual(message.reasoning_details, made.reasoning_details)
  )
    throw new Invalid(
      `messages.${i}.content.0: Invalid \`signature\` in \`thinking\` block`,
      `messages.[${i}].reasoning_details`,
    );
  return { ids, answered: new Set(), at: i };
}
