// A strict OpenAI Responses API on 127.0.0.1 (a free port) for the loop tests: `POST /v1/responses` streams the
// events scripted for each request, and every request body is checked first, as the Responses API checks it. An
// invalid one gets OpenAI's error JSON (`{"error":{"message":…,"type":"invalid_request_error","param":…,
// "code":…}}`) with a 400 (a 404 for an item the server cannot find) and streams nothing:
// - `model` is a string, `stream` is true, `input` a string or a list of items;
// - each input item is a type the API takes as input, with its required fields, and no field its type does not
//   have (`Unknown parameter: 'input[3].logprobs'.`): `message` (an assistant one with `output_text` or `refusal`
//   parts), `reasoning`, `function_call`, `function_call_output`, and the items of provider-run tools;
// - every `function_call` is answered by a `function_call_output` with its `call_id` later in the input ("No tool
//   output found for function call call_….") and every output answers a call before it ("No tool call found for
//   function call output with call_id call_….");
// - with `store: false`: a reasoning item must carry its `encrypted_content` (else 404 "Item with id 'rs_…' not
//   found. Items are not persisted when `store` is set to false…"), one this server streamed for that id ("The
//   encrypted content for item rs_… could not be verified."); and a function call this server streamed must come
//   after the reasoning items that preceded it in its response ("Item 'fc_…' of type 'function_call' was
//   provided without its required 'reasoning' item: 'rs_…'.").
// Reasoning items are streamed with their `encrypted_content` only when the request asks for it (`include:
// ['reasoning.encrypted_content']`), as the API does. A step can cut the connection after a number of events (the
// socket destroyed mid-stream).

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback } from './httpServer.js';

/** What the server streams for one request. */
export interface ResponsesStep {
  /** The events, each sent as `event: <type>` and `data: <json>`. */
  events: readonly object[];
  /** Destroy the socket after this many events instead of ending the response. */
  cutAfter?: number;
}

/** A request the server received: its parsed body, and the HTTP status it got. */
export interface ResponsesRequest {
  body: unknown;
  status: number;
  /** The error message of a rejected request. */
  error?: string;
}

export interface StrictResponsesServer {
  /** The base URL (`http://127.0.0.1:<port>/v1`); requests go to `/responses`. */
  url: string;
  requests: ResponsesRequest[];
  close(): Promise<void>;
}

type Item = Record<string, unknown>;

/** A rejection, in the API's words. */
interface Problem {
  status: number;
  message: string;
  param: string | null;
  code: string | null;
}

/** What the streamed responses said, to check what comes back. */
interface Issued {
  /** The encrypted content streamed for each reasoning item id. */
  encrypted: Map<string, Set<string>>;
  /** For each function call streamed (by call id): its item id and the reasoning items before it in its response. */
  calls: Map<string, { id: string | undefined; reasoning: string[] }>;
}

const required = (fields: string): Set<string> => new Set(fields.split(' '));
/** The fields each input item type takes: the required ones first, then `|` and the optional ones. */
const inputFields: Record<string, { required: Set<string>; optional: Set<string> }> = Object.fromEntries(
  Object.entries({
    message: 'role content | type id status phase',
    reasoning: 'type id summary | encrypted_content content status',
    function_call: 'type call_id name arguments | id status namespace caller',
    function_call_output: 'type call_id output | id status caller',
    web_search_call: 'type id status action |',
    file_search_call: 'type id queries status | results',
    code_interpreter_call: 'type id code container_id outputs status |',
    image_generation_call: 'type id result status |',
    mcp_list_tools: 'type id server_label tools | error',
    mcp_approval_request: 'type id name arguments server_label |',
    mcp_call: 'type id name arguments server_label | approval_request_id error output status',
    compaction: 'type encrypted_content | id',
  }).map(([type, spec]) => {
    const [must = '', may = ''] = spec.split('|').map((s) => s.trim());
    return [type, { required: required(must), optional: may === '' ? new Set<string>() : required(may) }];
  }),
);

/** Starts the server for `steps` (the step of the n-th valid request, 0-based); close it when the test is done. */
export async function startStrictResponsesServer(
  steps: readonly ResponsesStep[],
): Promise<StrictResponsesServer> {
  const requests: ResponsesRequest[] = [];
  const issued: Issued = { encrypted: new Map(), calls: new Map() };
  let served = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const pieces: Buffer[] = [];
    req.on('data', (piece: Buffer) => pieces.push(piece));
    req.on('end', () => {
      const text = Buffer.concat(pieces).toString('utf8');
      if (req.method !== 'POST' || req.url !== '/v1/responses') {
        reject(res, requests, text, {
          status: 404,
          message: `Invalid URL (${req.method} ${req.url})`,
          param: null,
          code: null,
        });
        return;
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        const message =
          "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)";
        reject(res, requests, text, { status: 400, message, param: null, code: null });
        return;
      }
      const problem = checkRequest(body, issued);
      if (problem !== undefined) {
        reject(res, requests, body, problem);
        return;
      }
      requests.push({ body, status: 200 });
      const step = steps[Math.min(served++, steps.length - 1)] ?? { events: [] };
      const include = (body as Item).include;
      const encrypted = Array.isArray(include) && include.includes('reasoning.encrypted_content');
      void stream(res, step, encrypted, issued);
    });
  });
  const { port, close } = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close,
  };
}

function reject(res: ServerResponse, requests: ResponsesRequest[], body: unknown, problem: Problem): void {
  requests.push({ body, status: problem.status, error: problem.message });
  res.writeHead(problem.status, { 'content-type': 'application/json' });
  const { message, param, code } = problem;
  res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', param, code } }, null, 2));
}

/** Streams a step's events (reasoning without its encrypted content unless asked for), noting what they issue. */
async function stream(
  res: ServerResponse,
  step: ResponsesStep,
  encrypted: boolean,
  issued: Issued,
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
  const count = Math.min(step.events.length, step.cutAfter ?? step.events.length);
  const reasoning: string[] = [];
  for (let i = 0; i < count; i++) {
    const event = encrypted ? step.events[i] : withoutEncrypted(step.events[i]);
    note(event as Item, reasoning, issued);
    res.write(`event: ${(event as Item).type}\ndata: ${JSON.stringify(event)}\n\n`);
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (step.cutAfter === undefined) res.end();
  else res.socket?.destroy();
}

/** Notes the reasoning and the calls a streamed event's done item issues. */
function note(event: Item, reasoning: string[], issued: Issued): void {
  if (event.type !== 'response.output_item.done' || !isRecord(event.item)) return;
  const { item } = event;
  if (item.type === 'reasoning' && typeof item.id === 'string') {
    reasoning.push(item.id);
    if (typeof item.encrypted_content === 'string') {
      const known = issued.encrypted.get(item.id) ?? new Set();
      known.add(item.encrypted_content);
      issued.encrypted.set(item.id, known);
    }
  }
  if (item.type === 'function_call' && typeof item.call_id === 'string') {
    const id = typeof item.id === 'string' ? item.id : undefined;
    issued.calls.set(item.call_id, { id, reasoning: [...reasoning] });
  }
}

/** A copy of an event without `encrypted_content` on its reasoning items. */
function withoutEncrypted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutEncrypted);
  if (!isRecord(value)) return value;
  const copy: Item = {};
  for (const [key, field] of Object.entries(value)) {
    if (key === 'encrypted_content' && value.type === 'reasoning') continue;
    copy[key] = withoutEncrypted(field);
  }
  return copy;
}

const isRecord = (value: unknown): value is Item =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const invalid = (message: string, param: string | null, code: string | null = null): Problem => ({
  status: 400,
  message,
  param,
  code,
});

/** The first problem of a request body, in the Responses API's words where they are known; undefined if valid. */
function checkRequest(body: unknown, issued: Issued): Problem | undefined {
  if (!isRecord(body)) return invalid('The request body must be a JSON object.', null);
  if (typeof body.model !== 'string')
    return invalid("Missing required parameter: 'model'.", 'model', 'missing_required_parameter');
  if (body.stream !== true) return invalid('This server only streams: set stream to true.', 'stream');
  if (typeof body.input === 'string') return undefined;
  if (!Array.isArray(body.input))
    return invalid("Missing required parameter: 'input'.", 'input', 'missing_required_parameter');
  const items = body.input as unknown[];
  for (const [i, item] of items.entries()) {
    const problem = checkItem(item, `input[${i}]`);
    if (problem !== undefined) return problem;
  }
  return (
    checkAnswers(items as Item[]) ??
    (body.store === false ? checkStateless(items as Item[], issued) : undefined)
  );
}

function checkItem(item: unknown, at: string): Problem | undefined {
  if (!isRecord(item)) return invalid(`Invalid type for '${at}': expected an object.`, at, 'invalid_type');
  const type = item.type ?? (item.role === undefined ? undefined : 'message');
  const fields = typeof type === 'string' && Object.hasOwn(inputFields, type) ? inputFields[type] : undefined;
  if (fields === undefined) {
    const supported = Object.keys(inputFields).join(', ');
    return invalid(
      `Invalid value: '${String(type)}'. Supported values are: ${supported}.`,
      `${at}.type`,
      'invalid_value',
    );
  }
  for (const key of Object.keys(item)) {
    if (!fields.required.has(key) && !fields.optional.has(key)) {
      return invalid(`Unknown parameter: '${at}.${key}'.`, `${at}.${key}`, 'unknown_parameter');
    }
  }
  for (const key of fields.required) {
    if (item[key] === undefined && !(key === 'type' && type === 'message')) {
      return invalid(
        `Missing required parameter: '${at}.${key}'.`,
        `${at}.${key}`,
        'missing_required_parameter',
      );
    }
  }
  switch (type) {
    case 'message':
      return checkMessage(item, at);
    case 'reasoning':
      if (typeof item.id !== 'string')
        return invalid(`Invalid type for '${at}.id': expected a string.`, `${at}.id`, 'invalid_type');
      if (
        !Array.isArray(item.summary) ||
        !item.summary.every((p) => isRecord(p) && p.type === 'summary_text' && typeof p.text === 'string')
      ) {
        return invalid(
          `Invalid value for '${at}.summary': expected summary_text parts.`,
          `${at}.summary`,
          'invalid_value',
        );
      }
      return undefined;
    case 'function_call':
      for (const key of ['call_id', 'name', 'arguments']) {
        if (typeof item[key] !== 'string')
          return invalid(
            `Invalid type for '${at}.${key}': expected a string.`,
            `${at}.${key}`,
            'invalid_type',
          );
      }
      return undefined;
    case 'function_call_output':
      if (typeof item.call_id !== 'string')
        return invalid(
          `Invalid type for '${at}.call_id': expected a string.`,
          `${at}.call_id`,
          'invalid_type',
        );
      if (typeof item.output !== 'string' && !Array.isArray(item.output)) {
        return invalid(
          `Invalid type for '${at}.output': expected a string or an array.`,
          `${at}.output`,
          'invalid_type',
        );
      }
      return undefined;
  }
  return undefined;
}

function checkMessage(item: Item, at: string): Problem | undefined {
  const { role, content } = item;
  if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer') {
    return invalid(
      `Invalid value: '${String(role)}'. Supported values are: 'assistant', 'system', 'developer', and 'user'.`,
      `${at}.role`,
      'invalid_value',
    );
  }
  if (typeof content === 'string') return undefined;
  if (!Array.isArray(content))
    return invalid(
      `Invalid type for '${at}.content': expected a string or an array.`,
      `${at}.content`,
      'invalid_type',
    );
  const kinds =
    role === 'assistant' ? ['output_text', 'refusal'] : ['input_text', 'input_image', 'input_file'];
  for (const [j, part] of content.entries()) {
    const where = `${at}.content[${j}]`;
    if (!isRecord(part) || !kinds.includes(part.type as string)) {
      return invalid(
        `Invalid value: '${isRecord(part) ? String(part.type) : typeof part}'. Supported values are: ${kinds.map((k) => `'${k}'`).join(', ')}.`,
        `${where}.type`,
        'invalid_value',
      );
    }
    const allowed =
      part.type === 'output_text'
        ? ['type', 'text', 'annotations', 'logprobs']
        : part.type === 'refusal'
          ? ['type', 'refusal']
          : undefined;
    for (const key of allowed === undefined ? [] : Object.keys(part)) {
      if (!allowed?.includes(key))
        return invalid(`Unknown parameter: '${where}.${key}'.`, `${where}.${key}`, 'unknown_parameter');
    }
  }
  return undefined;
}

/** Every function call answered once, later; every output answering a call before it. */
function checkAnswers(items: Item[]): Problem | undefined {
  const calls = new Set<string>();
  const answered = new Set<string>();
  for (const item of items) {
    if (item.type === 'function_call') calls.add(item.call_id as string);
    if (item.type === 'function_call_output') {
      const id = item.call_id as string;
      if (!calls.has(id))
        return invalid(`No tool call found for function call output with call_id ${id}.`, 'input');
      if (answered.has(id)) return invalid(`Duplicate tool output for function call ${id}.`, 'input');
      answered.add(id);
    }
  }
  for (const id of calls) {
    if (!answered.has(id)) return invalid(`No tool output found for function call ${id}.`, 'input');
  }
  return undefined;
}

/** With `store: false`: reasoning sent back whole (encrypted as streamed), before the calls it led to. */
function checkStateless(items: Item[], issued: Issued): Problem | undefined {
  const seen = new Set<string>();
  for (const item of items) {
    if (item.type === 'reasoning') {
      const id = item.id as string;
      if (typeof item.encrypted_content !== 'string') {
        return {
          status: 404,
          message: `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`,
          param: 'input',
          code: null,
        };
      }
      if (!issued.encrypted.get(id)?.has(item.encrypted_content)) {
        return invalid(
          `The encrypted content for item ${id} could not be verified.`,
          null,
          'invalid_encrypted_content',
        );
      }
      seen.add(id);
    }
    if (item.type === 'function_call') {
      const call = issued.calls.get(item.call_id as string);
      const missing = call?.reasoning.find((id) => !seen.has(id));
      if (call !== undefined && missing !== undefined) {
        const name = call.id ?? (item.call_id as string);
        return invalid(
          `Item '${name}' of type 'function_call' was provided without its required 'reasoning' item: '${missing}'.`,
          'input',
        );
      }
    }
  }
  return undefined;
}
