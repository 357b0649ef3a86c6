// Item 2's inputs: whole SSE bodies in the OpenAI Chat Completions and the Anthropic Messages formats, and a
// `fetch` that serves one of them in 16 KiB pieces, as a socket would.

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
