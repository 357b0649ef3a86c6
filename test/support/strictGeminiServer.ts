// A strict Gemini API on 127.0.0.1 (a free port) for the loop tests: `streamGenerateContent?alt=sse` streams the
// chunks scripted for each request, and every request body is checked first, as the Gemini API checks it. An
// invalid one is an HTTP 400 with Gemini's error JSON (`{"error":{"code":400,"message":…,"status":
// "INVALID_ARGUMENT"}}`) and streams nothing:
// - `contents` is a non-empty list of contents, each with the role `user` or `model` (absent is `user`) and a
//   non-empty `parts` list; a part has exactly one data field (`text`, `functionCall`, `functionResponse`,
//   `executableCode`, `codeExecutionResult`, `inlineData`, `fileData`, `toolCall`, `toolResponse`), fields it
//   does not know are rejected, `thought` is a boolean and `thoughtSignature` a string;
// - a `functionCall` has a name and object `args`; a `functionResponse` has a name and a `response` that is an
//   object (a protobuf Struct): a bare string or number is rejected;
// - a model content with calls comes right after a user turn (its text or its function responses), and the
//   content right after it is a user content with exactly one `functionResponse` per `functionCall` (names, and
//   ids where the calls had them, matching); function responses come only right after such a content;
// - with `thinking` on (a Gemini 3 model): in the current turn (the contents after the last user content with a
//   part other than a function response), the first `functionCall` part of each model content carries its
//   `thoughtSignature` ("Function call is missing a thought_signature in functionCall parts…", with the call's
//   name and the content's position); and every signature sent back is one this server streamed ("Corrupted
//   thought signature.").
// A step can cut the connection after a number of chunks (the socket destroyed mid-stream).

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback } from './httpServer.js';

/** What the server streams for one request. */
export interface GeminiStep {
  /** The chunks, each sent as one `data:` event. */
  chunks: readonly object[];
  /** Destroy the socket after this many chunks instead of ending the response. */
  cutAfter?: number;
}

/** A request the server received: its path, its parsed body, and the HTTP status it got. */
export interface GeminiRequest {
  path: string;
  body: unknown;
  status: number;
  /** The error message of a rejected request. */
  error?: string;
}

export interface StrictGeminiServer {
  /** The base URL (`http://127.0.0.1:<port>`); requests go to `/v1beta/models/<model>:streamGenerateContent?alt=sse`. */
  url: string;
  requests: GeminiRequest[];
  close(): Promise<void>;
}

export interface StrictGeminiOptions {
  /** The step of the n-th valid request (0-based). */
  steps: readonly GeminiStep[];
  /** Whether the model thinks (Gemini 3): `functionCall` parts of the current turn need their signatures. */
  thinking?: boolean;
}

const route = /^\/v1beta\/models\/([\w.-]+):streamGenerateContent\?alt=sse$/;
const dataFields = [
  'text',
  'functionCall',
  'functionResponse',
  'executableCode',
  'codeExecutionResult',
  'inlineData',
  'fileData',
  'toolCall',
  'toolResponse',
];
const otherFields = ['thought', 'thoughtSignature', 'videoMetadata', 'partMetadata', 'mediaResolution'];

/** Starts the server; close it when the test is done. */
export async function startStrictGeminiServer(options: StrictGeminiOptions): Promise<StrictGeminiServer> {
  const requests: GeminiRequest[] = [];
  const issued = new Set<string>();
  let served = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const pieces: Buffer[] = [];
    req.on('data', (piece: Buffer) => pieces.push(piece));
    req.on('end', () => {
      const path = req.url ?? '/';
      const text = Buffer.concat(pieces).toString('utf8');
      if (req.method !== 'POST' || !route.test(path)) {
        reject(res, requests, { path, body: text }, 404, 'NOT_FOUND', `the path ${path} is not served`);
        return;
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        reject(
          res,
          requests,
          { path, body: text },
          400,
          'INVALID_ARGUMENT',
          'Invalid JSON payload received.',
        );
        return;
      }
      const problem = checkRequest(body, options.thinking ?? true, issued);
      if (problem !== undefined) {
        reject(res, requests, { path, body }, 400, 'INVALID_ARGUMENT', problem);
        return;
      }
      requests.push({ path, body, status: 200 });
      const step = options.steps[Math.min(served++, options.steps.length - 1)];
      void stream(res, step ?? { chunks: [] }, issued);
    });
  });
  const { port, close } = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close,
  };
}

function reject(
  res: ServerResponse,
  requests: GeminiRequest[],
  request: { path: string; body: unknown },
  code: number,
  status: string,
  message: string,
): void {
  requests.push({ ...request, status: code, error: message });
  res.writeHead(code, { 'content-type': 'application/json; charset=UTF-8' });
  res.end(JSON.stringify({ error: { code, message, status } }, null, 2));
}

/** Streams a step's chunks; the signatures in the chunks written are the ones a later request may send back. */
async function stream(res: ServerResponse, step: GeminiStep, issued: Set<string>): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const count = Math.min(step.chunks.length, step.cutAfter ?? step.chunks.length);
  for (let i = 0; i < count; i++) {
    const chunk = step.chunks[i];
    for (const signature of signaturesIn(chunk)) issued.add(signature);
    res.write(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (step.cutAfter === undefined) res.end();
  else res.socket?.destroy();
}

function signaturesIn(value: unknown): string[] {
  if (typeof value !== 'object' || value === null) return [];
  if (Array.isArray(value)) return value.flatMap(signaturesIn);
  return Object.entries(value).flatMap(([key, field]) =>
    key === 'thoughtSignature' && typeof field === 'string' ? [field] : signaturesIn(field),
  );
}

type Part = Record<string, unknown>;
type Content = { role: string; parts: Part[] };

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The first problem of a request body, in the Gemini API's words where they are known; undefined if valid. */
function checkRequest(body: unknown, thinking: boolean, issued: ReadonlySet<string>): string | undefined {
  if (!isRecord(body) || !Array.isArray(body.contents) || body.contents.length === 0) {
    return '* GenerateContentRequest.contents: contents is not specified';
  }
  const contents: Content[] = [];
  for (const [i, content] of body.contents.entries()) {
    if (!isRecord(content)) return `Invalid value at 'contents[${i}]': expected a Content object`;
    const role = content.role ?? 'user';
    if (role !== 'user' && role !== 'model') return 'Please use a valid role: user, model.';
    if (!Array.isArray(content.parts) || content.parts.length === 0) {
      return `* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.`;
    }
    for (const [j, part] of content.parts.entries()) {
      const problem = checkPart(part, `contents[${i}].parts[${j}]`, role);
      if (problem !== undefined) return problem;
    }
    contents.push({ role, parts: content.parts as Part[] });
  }
  return checkTurns(contents) ?? (thinking ? checkSignatures(contents, issued) : undefined);
}

function checkPart(part: unknown, at: string, role: string): string | undefined {
  if (!isRecord(part)) return `Invalid value at '${at}': expected a Part object`;
  for (const key of Object.keys(part)) {
    if (!dataFields.includes(key) && !otherFields.includes(key)) {
      return `Invalid JSON payload received. Unknown name "${key}" at '${at}': Cannot find field.`;
    }
  }
  const data = dataFields.filter((key) => part[key] !== undefined && part[key] !== null);
  if (data.length !== 1) {
    return data.length === 0
      ? `* GenerateContentRequest.${at}.data: required oneof field 'data' must have one initialized field`
      : `Invalid value at '${at}' (oneof field 'data' is already set. Cannot set '${data[1]}')`;
  }
  if (part.thought !== undefined && typeof part.thought !== 'boolean') {
    return `Invalid value at '${at}.thought' (TYPE_BOOL), ${JSON.stringify(part.thought)}`;
  }
  if (part.thoughtSignature !== undefined && typeof part.thoughtSignature !== 'string') {
    return `Invalid value at '${at}.thought_signature' (TYPE_BYTES), ${JSON.stringify(part.thoughtSignature)}`;
  }
  if (part.text !== undefined && typeof part.text !== 'string') {
    return `Invalid value at '${at}.text' (TYPE_STRING), ${JSON.stringify(part.text)}`;
  }
  const call = part.functionCall;
  if (call !== undefined) {
    if (role !== 'model')
      return `* GenerateContentRequest.${at}: a functionCall is the model's, not the user's`;
    if (!isRecord(call) || typeof call.name !== 'string' || call.name === '') {
      return `* GenerateContentRequest.${at}.function_call.name: name must not be empty`;
    }
    if (call.args !== undefined && !isRecord(call.args)) {
      return `Invalid value at '${at}.function_call.args' (type.googleapis.com/google.protobuf.Struct), ${JSON.stringify(call.args)}`;
    }
  }
  const answer = part.functionResponse;
  if (answer !== undefined) {
    if (role !== 'user')
      return `* GenerateContentRequest.${at}: a functionResponse is the user's, not the model's`;
    if (!isRecord(answer) || typeof answer.name !== 'string' || answer.name === '') {
      return `* GenerateContentRequest.${at}.function_response.name: name must not be empty`;
    }
    if (!isRecord(answer.response)) {
      return `Invalid value at '${at}.function_response.response' (type.googleapis.com/google.protobuf.Struct), ${JSON.stringify(answer.response)}`;
    }
  }
  return undefined;
}

const callsOf = (content: Content) =>
  content.parts.flatMap((part) => (isRecord(part.functionCall) ? [part.functionCall] : []));
const answersOf = (content: Content) =>
  content.parts.flatMap((part) => (isRecord(part.functionResponse) ? [part.functionResponse] : []));

/** The order of function call turns and function response turns. */
function checkTurns(contents: readonly Content[]): string | undefined {
  for (const [i, content] of contents.entries()) {
    const previous = contents[i - 1];
    const calls = callsOf(content);
    if (calls.length > 0 && previous !== undefined && previous.role !== 'user') {
      return 'Please ensure that function call turn comes immediately after a user turn or after a function response turn.';
    }
    const answers = answersOf(content);
    if (answers.length === 0) continue;
    const asked = previous === undefined ? [] : callsOf(previous);
    if (previous?.role !== 'model' || asked.length === 0) {
      return 'Please ensure that function response turn comes immediately after a function call turn.';
    }
  }
  for (const [i, content] of contents.entries()) {
    const calls = callsOf(content);
    if (calls.length === 0) continue;
    const next = contents[i + 1];
    const answers = next?.role === 'user' ? answersOf(next) : [];
    if (answers.length !== calls.length) {
      return 'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.';
    }
    const open = [...calls];
    for (const [j, answer] of answers.entries()) {
      const k = open.findIndex(
        (call) => call.name === answer.name && (call.id === undefined || call.id === answer.id),
      );
      if (k === -1) {
        return `* GenerateContentRequest.contents[${i + 1}].parts[${j}].function_response: no functionCall of contents[${i}] is named ${String(answer.name)}${answer.id === undefined ? '' : ` with id ${String(answer.id)}`}`;
      }
      open.splice(k, 1);
    }
  }
  return undefined;
}

/** The current turn's first call of each model content is signed, and every signature is one the server sent. */
function checkSignatures(contents: readonly Content[], issued: ReadonlySet<string>): string | undefined {
  let start = 0;
  for (const [i, content] of contents.entries()) {
    if (content.role === 'user' && content.parts.some((part) => part.functionResponse === undefined))
      start = i;
  }
  for (const [i, content] of contents.entries()) {
    if (content.role !== 'model') continue;
    for (const part of content.parts) {
      const signature = part.thoughtSignature;
      if (typeof signature === 'string' && !issued.has(signature)) return 'Corrupted thought signature.';
    }
    if (i < start) continue;
    const first = content.parts.find((part) => isRecord(part.functionCall));
    if (first !== undefined && typeof first.thoughtSignature !== 'string') {
      const name = (first.functionCall as { name: string }).name;
      return `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${name}\` , position ${i + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`;
    }
  }
  return undefined;
}
