// A strict Anthropic Messages server for tests: a real node:http server on 127.0.0.1 (a free port) that validates
// each POST /v1/messages body as the API documents it and answers an invalid one with HTTP 400 and the API's error
// JSON, and streams a scripted SSE response to a valid one (cut after N events when the script says so).
//
// The rules it checks are the ones a next request after a tool-using, thinking turn must keep:
// - every `tool_use` id of an assistant message has a `tool_result` in the user message right after it, and every
//   `tool_result` answers a `tool_use` of the assistant message right before it; ids are unique;
// - `thinking` blocks go back unmodified: each signature is one this server streamed, for exactly that thinking
//   text; a `redacted_thinking` block's data is one it streamed;
// - with `thinking` enabled, the last assistant message that uses tools starts with a thinking block;
// - text blocks are not empty, a message's content is not empty, the first message is the user's.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback } from './httpServer.js';

/** One response of the server: the stream events (SSE payloads, in order), cut after `cutAfter` of them. */
export interface AnthropicStep {
  events: readonly { type: string; [field: string]: unknown }[];
  /** Destroy the socket after this many events were written (a connection reset mid-stream). */
  cutAfter?: number;
}

/** A request the server received: its parsed body, and the status it answered with (400: why). */
export interface ReceivedRequest {
  body: unknown;
  status: number;
  /** The error message of a 400. */
  error?: string;
}

export interface StrictAnthropicServer {
  /** The base URL: POST `${url}/v1/messages`. */
  url: string;
  requests: ReceivedRequest[];
  close(): Promise<void>;
}

/** The API's error body of an invalid request. */
const errorBody = (message: string) =>
  JSON.stringify({
    type: 'error',
    error: { type: 'invalid_request_error', message },
    request_id: 'req_011StrictAnthropicServer',
  });

/** Why a request body is invalid, as the API words it; `undefined` when it is valid. */
type Check = string | undefined;

/**
 * Starts the server: the n-th valid request (0-based) gets `steps[n]` (the last one repeats). What the server
 * streamed (signatures, redacted data) is what later requests may send back.
 */
export async function startStrictAnthropicServer(
  steps: readonly AnthropicStep[],
): Promise<StrictAnthropicServer> {
  const requests: ReceivedRequest[] = [];
  /** signature → the thinking text it was streamed with. */
  const signatures = new Map<string, string>();
  /** The redacted_thinking data streamed. */
  const redacted = new Set<string>();
  let served = 0;

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(parts).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
      const problem =
        req.method !== 'POST' || req.url !== '/v1/messages'
          ? `${req.method} ${req.url}: not found`
          : (checkHeaders(req) ?? checkBody(body, signatures, redacted));
      if (problem !== undefined) {
        requests.push({ body, status: 400, error: problem });
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(errorBody(problem));
        return;
      }
      requests.push({ body, status: 200 });
      const step = steps[Math.min(served++, steps.length - 1)];
      if (step === undefined) throw new Error('the strict server has no step to serve');
      void stream(step, res, signatures, redacted);
    });
  });
  const { port, close } = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close,
  };
}

/** Writes the step's events as SSE, one write per event; records what it streamed of thinking. */
async function stream(
  step: AnthropicStep,
  res: ServerResponse,
  signatures: Map<string, string>,
  redacted: Set<string>,
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const thinking = new Map<number, string>();
  const count = Math.min(step.events.length, step.cutAfter ?? step.events.length);
  for (let i = 0; i < count; i++) {
    const event = step.events[i] as Record<string, unknown>;
    if (res.destroyed) return;
    record(event, thinking, signatures, redacted);
    res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (step.cutAfter !== undefined) res.socket?.destroy();
  else res.end();
}

/** Keeps the thinking text of each block, and each signature and redacted data as they are written. */
function record(
  event: Record<string, unknown>,
  thinking: Map<number, string>,
  signatures: Map<string, string>,
  redacted: Set<string>,
): void {
  const index = event.index as number;
  const block = event.content_block as Record<string, unknown> | undefined;
  const delta = event.delta as Record<string, unknown> | undefined;
  if (event.type === 'content_block_start' && block?.type === 'thinking') thinking.set(index, '');
  if (event.type === 'content_block_start' && block?.type === 'redacted_thinking')
    redacted.add(block.data as string);
  if (delta?.type === 'thinking_delta')
    thinking.set(index, (thinking.get(index) ?? '') + String(delta.thinking));
  if (delta?.type === 'signature_delta') signatures.set(String(delta.signature), thinking.get(index) ?? '');
}

function checkHeaders(req: IncomingMessage): Check {
  if (req.headers['anthropic-version'] === undefined) return 'anthropic-version: header is required';
  if (req.headers['x-api-key'] === undefined) return 'x-api-key header is required';
  if (!String(req.headers['content-type']).startsWith('application/json')) return 'content-type must be JSON';
  return undefined;
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The request body's rules, in the order the API reports them. */
function checkBody(body: unknown, signatures: Map<string, string>, redacted: Set<string>): Check {
  if (!isObject(body)) return 'body: expected an object';
  if (typeof body.model !== 'string') return 'model: Field required';
  if (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 1)
    return 'max_tokens: Field required';
  if (body.stream !== true) return 'stream: this server streams only';
  const { messages } = body;
  if (!Array.isArray(messages) || messages.length === 0) return 'messages: at least one message is required';
  const seen = new Set<string>();
  for (let m = 0; m < messages.length; m++) {
    const message = messages[m];
    const at = `messages.${m}`;
    if (!isObject(message)) return `${at}: expected an object`;
    if (message.role !== 'user' && message.role !== 'assistant')
      return `${at}.role: Input should be 'user' or 'assistant'`;
    if (m === 0 && message.role !== 'user') return `${at}: the first message must use the "user" role`;
    const { content } = message;
    if (typeof content === 'string') {
      if (content === '') return `${at}: all messages must have non-empty content`;
      continue;
    }
    if (!Array.isArray(content) || content.length === 0)
      return `${at}: all messages must have non-empty content`;
    for (let b = 0; b < content.length; b++) {
      const problem = checkBlock(content[b], `${at}.content.${b}`, message.role, seen, signatures, redacted);
      if (problem !== undefined) return problem;
    }
    const answers = checkAnswers(messages, m);
    if (answers !== undefined) return answers;
  }
  return checkThinkingFirst(body, messages as Json[]);
}

function checkBlock(
  block: unknown,
  at: string,
  role: unknown,
  seen: Set<string>,
  signatures: Map<string, string>,
  redacted: Set<string>,
): Check {
  if (!isObject(block) || typeof block.type !== 'string') return `${at}: expected a content block`;
  switch (block.type) {
    case 'text':
      if (typeof block.text !== 'string' || block.text === '')
        return `${at}.text: text content blocks must be non-empty`;
      return undefined;
    case 'thinking': {
      if (role !== 'assistant') return `${at}: thinking blocks are only allowed in assistant messages`;
      const issued = signatures.get(String(block.signature));
      if (typeof block.signature !== 'string' || issued === undefined || issued !== block.thinking)
        return `${at}: Invalid \`signature\` in \`thinking\` block`;
      return undefined;
    }
    case 'redacted_thinking':
      if (role !== 'assistant')
        return `${at}: redacted_thinking blocks are only allowed in assistant messages`;
      if (typeof block.data !== 'string' || !redacted.has(block.data))
        return `${at}: Invalid \`data\` in \`redacted_thinking\` block`;
      return undefined;
    case 'tool_use':
      if (role !== 'assistant') return `${at}: tool_use blocks are only allowed in assistant messages`;
      if (typeof block.id !== 'string' || typeof block.name !== 'string' || !isObject(block.input))
        return `${at}: tool_use: id, name and an input object are required`;
      if (seen.has(block.id)) return `${at}: \`tool_use\` ids must be unique`;
      seen.add(block.id);
      return undefined;
    case 'tool_result':
      if (role !== 'user') return `${at}: tool_result blocks are only allowed in user messages`;
      if (typeof block.tool_use_id !== 'string') return `${at}.tool_use_id: Field required`;
      if (block.is_error !== undefined && typeof block.is_error !== 'boolean')
        return `${at}.is_error: Input should be a valid boolean`;
      if (block.content !== undefined && typeof block.content !== 'string' && !Array.isArray(block.content))
        return `${at}.content: Input should be a valid string or list`;
      return undefined;
    default:
      return undefined; // server tools and the rest: not this server's business
  }
}

/** The tool_use ids of an assistant message must be answered, first thing, by the user message after it. */
function checkAnswers(messages: unknown[], m: number): Check {
  const message = messages[m] as Json;
  const blocks = Array.isArray(message.content) ? (message.content as Json[]) : [];
  if (message.role === 'user') {
    const previous = messages[m - 1] as Json | undefined;
    const asked = new Set(
      (Array.isArray(previous?.content) ? (previous.content as Json[]) : [])
        .filter((b) => b.type === 'tool_use')
        .map((b) => b.id),
    );
    for (let b = 0; b < blocks.length; b++) {
      const block = blocks[b] as Json;
      if (block.type === 'tool_result' && !asked.has(block.tool_use_id))
        return `messages.${m}.content.${b}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
    }
    return undefined;
  }
  const ids = blocks.filter((b) => b.type === 'tool_use').map((b) => String(b.id));
  if (ids.length === 0) return undefined;
  const next = messages[m + 1] as Json | undefined;
  const answers = Array.isArray(next?.content) ? (next.content as Json[]) : [];
  const leading: Json[] = [];
  for (const block of answers) {
    if (block.type !== 'tool_result') break;
    leading.push(block);
  }
  const answered = new Set(leading.map((b) => b.tool_use_id));
  const missing = ids.filter((id) => !answered.has(id));
  if (next?.role !== 'user' || missing.length > 0)
    return `messages.${m + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
  return undefined;
}

/** With thinking enabled, the last assistant message with tool_use starts with thinking or redacted_thinking. */
function checkThinkingFirst(body: Json, messages: Json[]): Check {
  if (!isObject(body.thinking) || body.thinking.type !== 'enabled') return undefined;
  for (let m = messages.length - 1; m >= 0; m--) {
    const message = messages[m] as Json;
    if (message.role !== 'assistant' || !Array.isArray(message.content)) continue;
    const blocks = message.content as Json[];
    if (!blocks.some((b) => b.type === 'tool_use')) continue;
    const first = blocks[0]?.type;
    if (first === 'thinking' || first === 'redacted_thinking') return undefined;
    return `messages.${m}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks).`;
  }
  return undefined;
}
