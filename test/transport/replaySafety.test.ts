// The replay rule over request shapes of each provider and the failures a transport meets: which retries may send a
// request again. Connection failures are real ones (a port on 127.0.0.1 that nobody listens on); the other errors
// are the transport's own classes, as fromSSE raises them.
import { createServer } from 'node:http';
import { TransportError } from 'cleanturn/transport';
import { describe, expect, it } from 'vitest';
import { missingFinishError } from '../../src/errors.js';
import {
  connectionError,
  httpStatusError,
  resumeError,
  stallError,
  unsafeReplayError,
} from '../../src/transport/errors.js';
import type { SseRequest } from '../../src/transport/fromSSE.js';
import type { ReplayVerdict } from '../../src/transport/replaySafety.js';
import { replaySafety } from '../../src/transport/replaySafety.js';
import { listenOnLoopback } from '../support/httpServer.js';

const post = (url: string, body: unknown): SseRequest => ({
  url,
  init: {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  },
});

const responses = 'https://api.openai.com/v1/responses';
const chat = 'https://api.openai.com/v1/chat/completions';
const messages = 'https://api.anthropic.com/v1/messages';
const gemini =
  'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse';

const conversationTurn = post(responses, {
  model: 'gpt-4.1',
  conversation: 'conv_689667905b048191b4740501625afd940c7533ace33a2dab',
  input: 'Refund order ORD-7781.',
  stream: true,
});
const chainedTurn = post(responses, {
  model: 'gpt-4.1',
  previous_response_id: 'resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b',
  input: [{ role: 'user', content: 'Refund order ORD-7781.' }],
  store: true,
  stream: true,
});
const chatTurn = post(chat, { model: 'gpt-4.1', messages: [{ role: 'user', content: 'Hi' }], stream: true });
const messagesTurn = post(messages, {
  model: 'claude-sonnet-4-5',
  max_tokens: 1024,
  messages: [{ role: 'user', content: 'Hi' }],
  stream: true,
});
const geminiTurn = post(gemini, { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] });

/** A real refused connection: what fetch rejects with for a port on 127.0.0.1 that nobody listens on. */
async function refusedConnection(): Promise<TransportError> {
  const { port, close } = await listenOnLoopback(createServer());
  await close();
  try {
    await fetch(`http://127.0.0.1:${port}/v1/responses`, { method: 'POST', body: '{}' });
  } catch (error) {
    return connectionError('request failed', error);
  }
  throw new Error('the closed port answered');
}

/** A real break mid-stream: the server sends the headers and part of the body, then destroys the socket. */
async function brokenStream(): Promise<TransportError> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"type":"response.created"}\n\n', () => res.socket?.destroy());
  });
  const { port, close } = await listenOnLoopback(server);
  try {
    const response = await fetch(`http://127.0.0.1:${port}/`);
    const reader = response.body?.getReader();
    for (;;) if ((await reader?.read())?.done !== false) break;
  } catch (error) {
    return connectionError('the stream broke', error);
  } finally {
    await close();
  }
  throw new Error('the stream did not break');
}

const http = (status: number) => httpStatusError(status, '', '{"error":{"message":"no"}}', undefined);

const safety = (verdict: ReplayVerdict) => `${verdict.safety} ${verdict.basis}`;

describe('replaySafety: a request that never reached the server is safe to send again', () => {
  it('a connection refused before anything was sent is safe, whatever the request', async () => {
    const refused = await refusedConnection();
    for (const request of [conversationTurn, chatTurn, post(responses, 'not json')]) {
      const verdict = replaySafety(request, refused);
      expect(safety(verdict)).toBe('safe not-sent');
      expect(verdict.reason).toMatch(/ECONNREFUSED/);
    }
  });

  it('a DNS failure is safe (the code as fetch nests it: TypeError, then the resolver error)', () => {
    const dns = Object.assign(new Error('getaddrinfo ENOTFOUND api.openai.invalid'), { code: 'ENOTFOUND' });
    const fetchFailed = new TypeError('fetch failed', { cause: dns });
    expect(safety(replaySafety(conversationTurn, connectionError('request failed', fetchFailed)))).toBe(
      'safe not-sent',
    );
    expect(safety(replaySafety(conversationTurn, fetchFailed))).toBe('safe not-sent');
  });

  it('every address refused (an AggregateError, as happy eyeballs gives it) is safe; one reset among them is not', () => {
    const refused = (address: string) =>
      Object.assign(new Error(`connect ECONNREFUSED ${address}`), { code: 'ECONNREFUSED' });
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const all = new AggregateError([refused('::1:443'), refused('127.0.0.1:443')]);
    const mixed = new AggregateError([refused('::1:443'), reset]);
    expect(safety(replaySafety(conversationTurn, new TypeError('fetch failed', { cause: all })))).toBe(
      'safe not-sent',
    );
    expect(safety(replaySafety(conversationTurn, new TypeError('fetch failed', { cause: mixed })))).toBe(
      'unsafe stateful',
    );
  });

  it('no request at all (the request function failed) is safe', () => {
    expect(safety(replaySafety(undefined, new Error('token refresh failed')))).toBe('safe not-sent');
  });
});

describe('replaySafety: a status the server answered with before any generation', () => {
  it('429, 503, 408 and other 4xx are safe even for a conversation: the server did nothing', () => {
    for (const status of [400, 401, 408, 409, 429, 503]) {
      const verdict = replaySafety(conversationTurn, http(status));
      expect(safety(verdict)).toBe('safe refused');
      expect(verdict.reason).toContain(String(status));
    }
  });

  it('500, 502 and 504 may have run on the server: unsafe for a conversation, safe for a stateless request', () => {
    for (const status of [500, 502, 504]) {
      expect(safety(replaySafety(conversationTurn, http(status)))).toBe('unsafe stateful');
      expect(safety(replaySafety(chatTurn, http(status)))).toBe('safe stateless');
    }
  });
});

describe('replaySafety: a request that may have reached the server, by the request it was', () => {
  it('a Responses request with a conversation cut mid-stream is unsafe: a replay may append twice', async () => {
    const cut = await brokenStream();
    const verdict = replaySafety(conversationTurn, cut);
    expect(safety(verdict)).toBe('unsafe stateful');
    expect(verdict.reason).toMatch(/conversation conv_689667905b/);
    // A conversation given as an object, as the API also takes it.
    const asObject = post(responses, { model: 'gpt-4.1', conversation: { id: 'conv_1' }, input: 'Hi' });
    expect(safety(replaySafety(asObject, cut))).toBe('unsafe stateful');
  });

  it('every failure that may come after the request was sent is unsafe for a conversation', () => {
    const failures = [
      stallError(30_000),
      missingFinishError(),
      resumeError('not-found', 'resp_1', 12),
      connectionError(
        'request failed',
        new TypeError('fetch failed', { cause: new Error('other side closed') }),
      ),
      new Error('something of a custom transport'),
    ];
    for (const error of failures)
      expect(safety(replaySafety(conversationTurn, error))).toBe('unsafe stateful');
  });

  it('a resume that failed to connect does not make the create request unsent', async () => {
    const refused = await refusedConnection();
    const resume = resumeError('expired', 'resp_1', 12, {}, refused);
    expect(safety(replaySafety(conversationTurn, resume))).toBe('unsafe stateful');
  });

  it('previous_response_id with store: true is safe: a new response next to the first, which is not changed', async () => {
    const verdict = replaySafety(chainedTurn, await brokenStream());
    expect(safety(verdict)).toBe('safe stateless');
    expect(verdict.reason).toMatch(/previous_response_id/);
  });

  it('Chat Completions, Messages and Gemini generation requests are safe: the provider keeps no state', async () => {
    const cut = await brokenStream();
    for (const request of [chatTurn, messagesTurn, geminiTurn]) {
      expect(safety(replaySafety(request, cut))).toBe('safe stateless');
      expect(safety(replaySafety(request, stallError(1000)))).toBe('safe stateless');
    }
  });

  it('a generation body behind an endpoint of its own (a proxy) is read by its shape', () => {
    const proxy = 'https://llm.internal.example/gateway';
    const cut = stallError(1000);
    expect(safety(replaySafety(post(proxy, { messages: [] }), cut))).toBe('safe stateless');
    expect(safety(replaySafety(post(proxy, { contents: [] }), cut))).toBe('safe stateless');
    expect(safety(replaySafety(post(proxy, { model: 'gpt-4.1', input: 'Hi' }), cut))).toBe('safe stateless');
    expect(safety(replaySafety(post(proxy, { conversation: 'conv_1', input: 'Hi' }), cut))).toBe(
      'unsafe stateful',
    );
    expect(safety(replaySafety(post(proxy, { job: 'summarise' }), cut))).toBe('unknown unreadable');
  });

  it('a run on an Assistants thread is unsafe: it adds its messages to the thread', () => {
    const run = post('https://api.openai.com/v1/threads/thread_abc123/runs', {
      assistant_id: 'asst_1',
      stream: true,
    });
    const verdict = replaySafety(run, stallError(1000));
    expect(safety(verdict)).toBe('unsafe stateful');
    expect(verdict.reason).toMatch(/thread_abc123/);
  });

  it('a body that is not JSON, or that cannot be read at once, is unknown', () => {
    const cut = stallError(1000);
    expect(safety(replaySafety(post(chat, 'model=gpt-4.1&stream=true'), cut))).toBe('unknown unreadable');
    const form = new URLSearchParams({ model: 'gpt-4.1' });
    expect(safety(replaySafety({ url: chat, init: { method: 'POST', body: form } }, cut))).toBe(
      'unknown unreadable',
    );
    const stream = new ReadableStream<Uint8Array>();
    expect(safety(replaySafety({ url: responses, init: { method: 'POST', body: stream } }, cut))).toBe(
      'unknown unreadable',
    );
  });

  it('a JSON body as bytes is read like a string', () => {
    const bytes = new TextEncoder().encode(JSON.stringify({ conversation: 'conv_1', input: 'Hi' }));
    const request: SseRequest = { url: responses, init: { method: 'POST', body: bytes } };
    expect(safety(replaySafety(request, stallError(1000)))).toBe('unsafe stateful');
  });

  it('a Request object: its body cannot be read synchronously (unknown); a GET one is safe', () => {
    const cut = stallError(1000);
    const made = new Request(responses, { method: 'POST', body: JSON.stringify({ conversation: 'conv_1' }) });
    const verdict = replaySafety(made, cut);
    expect(safety(verdict)).toBe('unknown unreadable');
    expect(verdict.reason).toMatch(/Request/);
    expect(safety(replaySafety(new Request('https://example.test/turns/turn-42'), cut))).toBe(
      'safe stateless',
    );
  });

  it('a GET (a URL on its own) changes nothing on the server by HTTP rules: safe', () => {
    const cut = stallError(1000);
    expect(safety(replaySafety('https://example.test/turns/turn-42/events', cut))).toBe('safe stateless');
    expect(safety(replaySafety(new URL('https://example.test/events'), cut))).toBe('safe stateless');
    expect(safety(replaySafety({ url: '/events', init: { method: 'GET' } }, cut))).toBe('safe stateless');
  });

  it('a request it cannot read at all is unknown, and reading it never throws', () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('trap');
        },
      },
    );
    expect(safety(replaySafety(hostile as SseRequest, stallError(1000)))).toBe('unknown unreadable');
    expect(safety(replaySafety({ url: chat, init: hostile as RequestInit }, stallError(1000)))).toBe(
      'unknown unreadable',
    );
  });
});

describe('TransportError unsafe-replay', () => {
  it('carries a stable code, the safety, the basis, the attempt and the failure, and is not retryable', () => {
    const cause = stallError(1000);
    const error = unsafeReplayError(1, replaySafety(conversationTurn, cause), cause);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'unsafe-replay' });
    expect(error.name).toBe('TransportError');
    expect(error.code).toBe('unsafe-replay');
    expect(error.safety).toBe('unsafe');
    expect(error.basis).toBe('stateful');
    expect(error.attempt).toBe(1);
    expect(error.retryable).toBe(false);
    expect(error.cause).toBe(cause);
    expect(error.message).toMatch(/attempt 1 .*not sent again.*conversation conv_/);
  });
});
