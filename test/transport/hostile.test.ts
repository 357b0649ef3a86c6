// Hostile and odd responses over a real socket: bodies that never end a line or an event, an HTML page in place of
// the stream, endless error bodies, a 204. Memory stays bounded, and each ends with a clear typed error.
import { UsageError } from 'cleanturn';
import { fromSSE, type SseMessage, TransportError } from 'cleanturn/transport';
import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { type ScriptedResponse, startServer, type TestServer } from '../support/httpServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';

let server: TestServer | undefined;
expectNoLeftoverHandles(async () => {
  await server?.close();
  server = undefined;
});

const MB = 1024 * 1024;
const HOSTILE_BYTES = 300 * MB;

/** A body of `total` bytes made of `piece` repeated (after `head`), counting what was actually sent. */
function repeated(piece: string, total: number, head = '') {
  const sent = { bytes: 0 };
  const bytes = Buffer.from(piece.repeat(Math.max(1, Math.floor((64 * 1024) / piece.length))), 'utf8');
  return {
    sent,
    stream: function* () {
      if (head !== '') {
        sent.bytes += Buffer.byteLength(head);
        yield head;
      }
      while (sent.bytes < total) {
        sent.bytes += bytes.length;
        yield bytes;
      }
    },
  };
}

/** Runs `fromSSE` against the server and records the error and the highest heap growth seen meanwhile. */
async function measure(response: ScriptedResponse, options: Parameters<typeof fromSSE>[1] = {}) {
  await server?.close();
  server = await startServer([response]);
  const url = server.url;
  // The heap and what strings and buffers hold outside it (large decoded strings can be external).
  const held = () => {
    const { heapUsed, external, arrayBuffers } = process.memoryUsage();
    return heapUsed + external - arrayBuffers;
  };
  const before = held();
  let peak = before;
  let rss = process.memoryUsage().rss;
  const sample = setInterval(() => {
    peak = Math.max(peak, held());
    rss = Math.max(rss, process.memoryUsage().rss);
  }, 5);
  const messages: SseMessage[] = [];
  try {
    const error = await new Promise<unknown>((resolve) => {
      fromSSE(() => url, { stallTimeout: 20_000, ...options }).subscribe({
        next: (m) => messages.push(m),
        error: resolve,
        complete: () => resolve(undefined),
      });
    });
    peak = Math.max(peak, held());
    return { error, messages, growth: (peak - before) / MB, rss: rss / MB };
  } finally {
    clearInterval(sample);
  }
}

describe('memory is bounded: a typed, non-retryable TransportError sse-limit-*', () => {
  // Generous: the limit is 16 Mi characters, the parser joins what it holds, and garbage is collected late.
  // Without a limit these bodies grew the heap by hundreds of MB (584 MB, then a RangeError).
  const bound = 200;

  it('a line that never ends (300 MB, no line break)', { timeout: 120_000 }, async () => {
    const body = repeated('x', HOSTILE_BYTES, 'data: {"a":1}\n\n');
    const { error, messages, growth, rss } = await measure({ body: '', stream: body.stream });
    console.info(
      `line that never ends: heap +${growth.toFixed(0)} MB (peak rss ${rss.toFixed(0)} MB), ${(body.sent.bytes / MB).toFixed(0)} MB sent`,
    );
    expect(messages.map((m) => m.data)).toEqual(['{"a":1}']);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ retryable: false, limit: 16 * 1024 * 1024, code: 'sse-limit-event' });
    expect((error as Error).message).toMatch(/maxBufferSize \(16777216 characters\)/);
    expect(growth).toBeLessThan(bound);
    expect(body.sent.bytes).toBeLessThan(HOSTILE_BYTES); // the request was aborted, not read to the end
  });

  it('data lines without the blank line that ends the event (300 MB)', { timeout: 120_000 }, async () => {
    const body = repeated(`data: ${'y'.repeat(1000)}\n`, HOSTILE_BYTES);
    const { error, growth, rss } = await measure({ body: '', stream: body.stream });
    console.info(
      `event that never ends: heap +${growth.toFixed(0)} MB (peak rss ${rss.toFixed(0)} MB), ${(body.sent.bytes / MB).toFixed(0)} MB sent`,
    );
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ retryable: false, code: 'sse-limit-event' });
    expect(growth).toBeLessThan(bound);
    expect(body.sent.bytes).toBeLessThan(HOSTILE_BYTES);
  });

  it('unframed lines (an HTML page sent as text/event-stream, 300 MB)', { timeout: 120_000 }, async () => {
    const body = repeated(
      '<div class="portal">Please sign in to continue</div>\n',
      HOSTILE_BYTES,
      '<html>\n',
    );
    const { error, growth, rss } = await measure({ body: '', stream: body.stream });
    console.info(
      `unframed lines: heap +${growth.toFixed(0)} MB (peak rss ${rss.toFixed(0)} MB), ${(body.sent.bytes / MB).toFixed(0)} MB sent`,
    );
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ retryable: false, code: 'sse-limit-unframed' });
    expect(growth).toBeLessThan(bound);
    expect(body.sent.bytes).toBeLessThan(HOSTILE_BYTES);
  });

  it('the limit is an option', async () => {
    // Held text counts: an event that arrives in pieces (one that arrives whole in one read is never held).
    const { error } = await measure(
      { body: `data: ${'z'.repeat(5000)}\n\n`, chunkSize: 512 },
      { maxBufferSize: 1024 },
    );
    expect(error).toMatchObject({ limit: 1024, code: 'sse-limit-event' });
    expect(() => fromSSE(() => 'http://127.0.0.1/', { maxBufferSize: 0 })).toThrow(UsageError);
  });

  it('an event as long as the limit allows is delivered whole', async () => {
    const big = 'w'.repeat(900_000);
    const { error, messages } = await measure(
      { body: `data: ${big}\n\n`, chunkSize: 65_536 },
      { maxBufferSize: MB },
    );
    expect(error).toBeUndefined();
    expect(messages.map((m) => m.data.length)).toEqual([big.length]);
  });
});

describe('error bodies are read in part', () => {
  it('an endless 503 body gives TransportError http-status at once, with the status, retry-after and the body start', async () => {
    const body = repeated('{"error":"overloaded"}', HOSTILE_BYTES);
    const started = performance.now();
    // A long stall timeout: the error must not wait for it.
    const { error } = await measure(
      {
        status: 503,
        headers: { 'retry-after': '7', 'content-type': 'application/json' },
        body: '',
        stream: body.stream,
      },
      { stallTimeout: 60_000 },
    );
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'http-status' });
    expect(error).toMatchObject({ status: 503, retryable: true, retryAfterMs: 7000 });
    expect((error as TransportError).body?.length).toBeLessThanOrEqual(4096);
    expect((error as TransportError).body?.startsWith('{"error":"overloaded"}')).toBe(true);
    expect(body.sent.bytes).toBeLessThan(HOSTILE_BYTES);
    expect(performance.now() - started).toBeLessThan(30_000);
  });

  it('an error body that stops arriving still gives TransportError http-status, not a TransportError stall', async () => {
    const { error } = await measure(
      {
        status: 429,
        headers: { 'content-type': 'application/json' },
        body: '{"error":{"code":"rate_li',
        hold: true,
        stream: function* () {
          yield '{"error":{"code":"rate_li';
        },
      },
      { stallTimeout: 300 },
    );
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'http-status' });
    expect(error).not.toMatchObject({ code: 'stall' });
    expect(error).toMatchObject({ status: 429, retryable: true, body: '{"error":{"code":"rate_li' });
  });

  it('retry-after-ms (OpenAI, milliseconds) is honoured, before retry-after', async () => {
    const { error } = await measure({
      status: 429,
      headers: { 'retry-after-ms': '1500', 'retry-after': '9' },
      body: '{"error":{"type":"rate_limit_exceeded"}}',
    });
    expect(error).toMatchObject({ status: 429, retryAfterMs: 1500 });
    const { error: only } = await measure({ status: 429, headers: { 'retry-after-ms': '250.4' }, body: '' });
    expect(only).toMatchObject({ retryAfterMs: 250 });
  });
});

describe('a 2xx that is not an event stream', () => {
  it('a captive portal answers 200 text/html: TransportError not-event-stream naming the type, not retryable', async () => {
    const { error, messages } = await measure({
      headers: { 'content-type': 'text/html; charset=utf-8' },
      body: '<!doctype html><html><title>Sign in to Hotel Wi-Fi</title></html>',
    });
    expect(messages).toEqual([]);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'not-event-stream' });
    expect(error).toMatchObject({ retryable: false, status: 200, contentType: 'text/html; charset=utf-8' });
    expect((error as Error).message).toMatch(/text\/html/);
    expect((error as TransportError).body).toMatch(/Hotel Wi-Fi/);
  });

  it('an endless text/html body is read in part and closed', async () => {
    const body = repeated('<p>portal</p>\n', HOSTILE_BYTES);
    const { error } = await measure({
      headers: { 'content-type': 'text/html' },
      body: '',
      stream: body.stream,
    });
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'not-event-stream' });
    expect(body.sent.bytes).toBeLessThan(HOSTILE_BYTES);
  });

  it('application/json (a request without stream: true) is not an event stream either', async () => {
    const { error } = await measure({
      headers: { 'content-type': 'application/json' },
      body: '{"choices":[]}',
    });
    expect(error).toMatchObject({
      name: 'TransportError',
      code: 'not-event-stream',
      contentType: 'application/json',
    });
  });

  it('text/event-stream with parameters, in any case, is accepted; so is a missing content type', async () => {
    const typed = await measure({
      headers: { 'content-type': 'Text/Event-Stream; charset=UTF-8' },
      body: 'data: a\n\n',
    });
    expect(typed.error).toBeUndefined();
    expect(typed.messages.map((m) => m.data)).toEqual(['a']);
    // The helper server always sends a content type; a raw response without one:
    const untyped = await lastValueFrom(
      fromSSE(() => 'http://untyped.invalid/', {
        // A stream body gets no default content type.
        fetch: async () =>
          new Response(
            new ReadableStream({
              start(controller) {
                controller.enqueue(new TextEncoder().encode('data: b\n\n'));
                controller.close();
              },
            }),
            { status: 200 },
          ),
      }).pipe(toArray()),
    );
    expect(untyped.map((m) => m.data)).toEqual(['b']);
  });

  it('a 204 No Content is a TransportError not-event-stream, not a retryable connection error', async () => {
    const { error } = await measure({ status: 204, body: '' });
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'not-event-stream' });
    expect(error).toMatchObject({ status: 204, retryable: false });
    expect((error as Error).message).toMatch(/HTTP 204 without a body/);
  });
});
