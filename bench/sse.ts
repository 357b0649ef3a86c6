// Item 2's inputs: whole SSE bodies in the five wire formats (OpenAI Chat Completions, Anthropic Messages,
// OpenAI Responses, Gemini `streamGenerateContent?alt=sse` with Vertex AI's streamed arguments, the AI SDK's UI
// message stream), and a `fetch` that serves one of them in 16 KiB pieces, as a socket would.

import { chatTranscript } from '../test/support/chatTranscript.js';

/** What every variant must reach: the final text and the tool call. */
export interface FinalTurn {
  text: string;
  calls: { id: string; name: string; args: unknown }[];
}

/** A body and the turn it encodes. */
export interface SseBody {
  bytes: Uint8Array;
  /** SSE events with a data payload, `[DONE]` not counted. */
  events: number;
  expected: FinalTurn;
}

/** Text tokens, as a model streams them (short, with their leading space). */
const tokens = [
  ' The',
  ' order',
  ' ORD-7781',
  ' arrived',
  ' damaged',
  ',',
  ' so',
  ' I',
  ' have',
  ' started',
  ' a',
  ' full',
  ' refund',
  '.',
];

/** The tool call's arguments: a refund with a long note, about 21 KB of JSON, cut into `fragments` pieces. */
function refundArguments(): string {
  const note = Array.from({ length: 1000 }, (_, i) => `line ${i}: the customer reported damage`).join('; ');
  return JSON.stringify({ order_id: 'ORD-7781', amount: 'full', note });
}

const callId = 'call_7c1e';
const toolName = 'issue_refund';

/**
 * An OpenAI Chat Completions stream of `total` chunks: the role chunk, text deltas, one tool call (a start
 * chunk and `fragments` argument chunks) in the middle of the text, the finish chunk and the usage chunk, then
 * `[DONE]`. Built by the transcript helper of the transport tests, in the API's exact chunk format.
 */
export function openaiBody(total = 100_000, fragments = 1_000): SseBody {
  const args = refundArguments();
  const texts = total - 1 - 1 - fragments - 1 - 1;
  const parts: { text?: string; call?: { id: string; name: string; args: string; fragments: number } }[] = [];
  let text = '';
  for (let i = 0; i < texts; i++) {
    const token = tokens[i % tokens.length] as string;
    text += token;
    parts.push({ text: token });
    if (i === texts >> 1) parts.push({ call: { id: callId, name: toolName, args, fragments } });
  }
  const transcript = chatTranscript(parts, {
    finish: 'tool_calls',
    usage: { prompt: 812, completion: texts },
  });
  return {
    bytes: new Uint8Array(transcript.body.buffer, transcript.body.byteOffset, transcript.body.byteLength),
    events: total,
    expected: { text, calls: [{ id: callId, name: toolName, args: JSON.parse(args) }] },
  };
}

/**
 * An Anthropic Messages stream of `total` events: `message_start`, a text block of deltas, a `tool_use` block
 * with `fragments` `input_json_delta`s, `message_delta` and `message_stop`.
 */
export function anthropicBody(total = 100_000, fragments = 1_000): SseBody {
  const args = refundArguments();
  // message_start, text block start/stop, tool block start/stop, message_delta, message_stop: 7 events.
  const texts = total - 7 - fragments;
  const out: string[] = [];
  const send = (type: string, data: unknown) => out.push(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
  send('message_start', {
    type: 'message_start',
    message: {
      id: 'msg_01bench',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-5-5',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 812, output_tokens: 1 },
    },
  });
  send('content_block_start', {
    type: 'content_block_start',
    index: 0,
    content_block: { type: 'text', text: '' },
  });
  let text = '';
  for (let i = 0; i < texts; i++) {
    const token = tokens[i % tokens.length] as string;
    text += token;
    send('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: token },
    });
  }
  send('content_block_stop', { type: 'content_block_stop', index: 0 });
  send('content_block_start', {
    type: 'content_block_start',
    index: 1,
    content_block: { type: 'tool_use', id: callId, name: toolName, input: {} },
  });
  const size = Math.ceil(args.length / fragments);
  for (let f = 0; f < fragments; f++) {
    send('content_block_delta', {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partial_json: args.slice(f * size, (f + 1) * size) },
    });
  }
  send('content_block_stop', { type: 'content_block_stop', index: 1 });
  send('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: 'tool_use', stop_sequence: null },
    usage: { output_tokens: texts },
  });
  send('message_stop', { type: 'message_stop' });
  return {
    bytes: new TextEncoder().encode(out.join('')),
    events: total,
    expected: { text, calls: [{ id: callId, name: toolName, args: JSON.parse(args) }] },
  };
}

/** `count` pieces of `text`, in order; their concatenation is `text`. */
function fragmentsOf(text: string, count: number): string[] {
  const size = Math.ceil(text.length / count);
  return Array.from({ length: count }, (_, f) => text.slice(f * size, (f + 1) * size));
}

/** The text of `count` tokens, and each token. */
function textTokens(count: number): { text: string; pieces: string[] } {
  const pieces = Array.from({ length: count }, (_, i) => tokens[i % tokens.length] as string);
  return { text: pieces.join(''), pieces };
}

/** Short padding strings, as the Responses API's `obfuscation` field carries on delta events. */
const obfuscation = ['q0Xr', 'Ab3', 'k2', 'Zp9w', 'x'];

/**
 * An OpenAI Responses stream of `total` events: `response.created`, `response.in_progress`, a message item
 * (`output_item.added`, `content_part.added`, `output_text.delta`s, `output_text.done`, `content_part.done`,
 * `output_item.done`), a `function_call` item (`output_item.added`, `fragments` `function_call_arguments.delta`s,
 * `function_call_arguments.done`, `output_item.done`) and `response.completed` with the whole output and the
 * usage; every event numbered by `sequence_number`, no `[DONE]`, as the API sends it.
 */
export function responsesBody(total = 100_000, fragments = 1_000): SseBody {
  const args = refundArguments();
  const texts = total - 12 - fragments;
  const { text, pieces } = textTokens(texts);
  const responseId = 'resp_0c2f7a9e41b35d8601692d4a7f3c8e19';
  const messageId = 'msg_0c2f7a9e41b35d8601692d4a80a4d2b7';
  const itemId = 'fc_0c2f7a9e41b35d8601692d4a81e5f3c9';
  const out: string[] = [];
  let sequence = 0;
  const send = (type: string, data: Record<string, unknown>) =>
    out.push(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`);
  const response = (status: string, output: unknown[], usage: unknown) => ({
    id: responseId,
    object: 'response',
    created_at: 1767225800,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    model: 'gpt-4.1-2025-04-14',
    output,
    parallel_tool_calls: true,
    store: true,
    tool_choice: 'auto',
    usage,
  });
  const part = { type: 'output_text', annotations: [], logprobs: [], text };
  const message = { id: messageId, type: 'message', status: 'completed', content: [part], role: 'assistant' };
  const call = (status: string, argumentText: string) => ({
    id: itemId,
    type: 'function_call',
    status,
    arguments: argumentText,
    call_id: callId,
    name: toolName,
  });
  send('response.created', { response: response('in_progress', [], null) });
  send('response.in_progress', { response: response('in_progress', [], null) });
  send('response.output_item.added', {
    output_index: 0,
    item: { id: messageId, type: 'message', status: 'in_progress', content: [], role: 'assistant' },
  });
  const location = { item_id: messageId, output_index: 0, content_index: 0 };
  send('response.content_part.added', { ...location, part: { ...part, text: '' } });
  pieces.forEach((delta, i) => {
    send('response.output_text.delta', {
      ...location,
      delta,
      logprobs: [],
      obfuscation: obfuscation[i % obfuscation.length],
    });
  });
  send('response.output_text.done', { ...location, text, logprobs: [] });
  send('response.content_part.done', { ...location, part });
  send('response.output_item.done', { output_index: 0, item: message });
  send('response.output_item.added', { output_index: 1, item: call('in_progress', '') });
  fragmentsOf(args, fragments).forEach((delta, i) => {
    send('response.function_call_arguments.delta', {
      item_id: itemId,
      output_index: 1,
      delta,
      obfuscation: obfuscation[i % obfuscation.length],
    });
  });
  send('response.function_call_arguments.done', { item_id: itemId, output_index: 1, arguments: args });
  send('response.output_item.done', { output_index: 1, item: call('completed', args) });
  send('response.completed', {
    response: response('completed', [message, call('completed', args)], {
      input_tokens: 812,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: texts,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 812 + texts,
    }),
  });
  return {
    bytes: new TextEncoder().encode(out.join('')),
    events: total,
    expected: { text, calls: [{ id: callId, name: toolName, args: JSON.parse(args) }] },
  };
}

/**
 * A Gemini `streamGenerateContent?alt=sse` stream of `total` chunks, from Vertex AI with
 * `streamFunctionCallArguments: true`: text chunks, then one `functionCall` whose arguments stream by JSON path
 * (`partialArgs` with `stringValue` pieces, most of the `fragments` for the long `note`, each path closed by an
 * empty `stringValue`), and the last chunk: the empty `functionCall` that ends it, with `finishReason` and the full
 * `usageMetadata`. Data lines only, no `[DONE]`. The call has no id (no recorded stream sends one): the adapter
 * names it `gemini-call-0`.
 */
export function geminiBody(total = 100_000, fragments = 1_000): SseBody {
  const args = JSON.parse(refundArguments()) as { order_id: string; amount: string; note: string };
  // The start, order_id and amount (a piece and a close each), the note's pieces and close, the end with the finish.
  const notePieces = fragmentsOf(args.note, fragments - 4);
  const texts = total - 7 - notePieces.length;
  const { text, pieces } = textTokens(texts);
  const out: string[] = [];
  const envelope = {
    usageMetadata: { trafficType: 'ON_DEMAND' },
    modelVersion: 'gemini-3.1-pro-preview',
    createTime: '2026-04-02T17:03:50.399550Z',
    responseId: 'dqHOab6xGLzWodAPkPuViA4',
  };
  const send = (parts: unknown[], extra: Record<string, unknown> = {}, usage?: unknown) =>
    out.push(
      `data: ${JSON.stringify({
        candidates: [{ content: { role: 'model', parts }, ...extra }],
        ...envelope,
        ...(usage === undefined ? {} : { usageMetadata: usage }),
      })}\n\n`,
    );
  const partial = (jsonPath: string, stringValue: string, more: boolean) =>
    send([
      {
        functionCall: {
          partialArgs: [{ jsonPath, stringValue, ...(more ? { willContinue: true } : {}) }],
          willContinue: true,
        },
      },
    ]);
  for (const piece of pieces) send([{ text: piece }]);
  send([{ functionCall: { name: toolName, willContinue: true } }]);
  partial('$.order_id', args.order_id, true);
  partial('$.order_id', '', false);
  partial('$.amount', args.amount, true);
  partial('$.amount', '', false);
  for (const piece of notePieces) partial('$.note', piece, true);
  partial('$.note', '', false);
  send(
    [{ functionCall: {} }],
    { finishReason: 'STOP' },
    {
      promptTokenCount: 812,
      candidatesTokenCount: texts,
      totalTokenCount: 812 + texts,
      trafficType: 'ON_DEMAND',
    },
  );
  return {
    bytes: new TextEncoder().encode(out.join('')),
    events: out.length,
    expected: { text, calls: [{ id: 'gemini-call-0', name: toolName, args }] },
  };
}

/**
 * The AI SDK's UI message stream of `total` events, as `createUIMessageStreamResponse()` sends it over SSE
 * (`x-vercel-ai-ui-message-stream: v1`): `start`, `start-step`, `text-start`, `text-delta`s, the tool call's
 * `tool-input-start` and `fragments` `tool-input-delta`s, `text-end`, the whole `tool-input-available`,
 * `finish-step`, `finish`, then `[DONE]`.
 */
export function aiSdkBody(total = 100_000, fragments = 1_000): SseBody {
  const args = refundArguments();
  const texts = total - 8 - fragments;
  const { text, pieces } = textTokens(texts);
  const out: string[] = [];
  const send = (data: unknown) => out.push(`data: ${JSON.stringify(data)}\n\n`);
  send({ type: 'start', messageId: 'msg-0c2f7a9e41b35d86' });
  send({ type: 'start-step' });
  send({ type: 'text-start', id: '0' });
  for (const delta of pieces) send({ type: 'text-delta', id: '0', delta });
  // The chat provider ends the text part at the flush: after the call's input streamed.
  send({ type: 'tool-input-start', toolCallId: callId, toolName });
  for (const inputTextDelta of fragmentsOf(args, fragments)) {
    send({ type: 'tool-input-delta', toolCallId: callId, inputTextDelta });
  }
  send({ type: 'text-end', id: '0' });
  send({ type: 'tool-input-available', toolCallId: callId, toolName, input: JSON.parse(args) });
  send({ type: 'finish-step' });
  send({ type: 'finish', finishReason: 'tool-calls' });
  out.push('data: [DONE]\n\n');
  return {
    bytes: new TextEncoder().encode(out.join('')),
    events: total,
    expected: { text, calls: [{ id: callId, name: toolName, args: JSON.parse(args) }] },
  };
}

/** The size of the pieces the body arrives in. */
export const PIECE = 16 * 1024;

/** A `Response` whose body streams `bytes` in `PIECE`-sized pieces, one per read. */
export function streamedResponse(bytes: Uint8Array): Response {
  let offset = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= bytes.length) {
        controller.close();
        return;
      }
      controller.enqueue(bytes.subarray(offset, offset + PIECE));
      offset += PIECE;
    },
  });
  return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
}

/** A `fetch` that answers every request with `bytes`, streamed in pieces. */
export function fetchServing(bytes: Uint8Array): typeof fetch {
  return async () => streamedResponse(bytes);
}
