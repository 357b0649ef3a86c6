import { createServer } from 'node:net';
import { fromSSE, sseJson, TransportError } from 'cleanturn/transport';
import { firstValueFrom, lastValueFrom, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../src/transport/errors.js';
import { isRetryableStatus } from '../../src/upstreamErrors.js';
import { type ScriptedResponse, startServer, type TestServer } from '../support/httpServer.js';
import { settledResources } from '../support/resources.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(response: ScriptedResponse) {
  server = await startServer([response]);
  return server.url;
}

const collect = (url: string, options = {}) => lastValueFrom(fromSSE(() => url, options).pipe(toArray()));

describe('fromSSE', () => {
  it('parses LF, CRLF and CR framing, multi-line data, ids and comments', async () => {
    const url = await serve({
      body: 'data: a\n\n: keep-alive\r\n\r\nevent: x\r\nid: 7\r\ndata: b1\r\ndata: b2\r\n\r\ndata: c\r\rdata: cut',
      chunkSize: 3,
    });
    expect(await collect(url)).toEqual([
      { data: 'a', event: undefined },
      { data: 'b1\nb2', event: 'x', id: '7' },
      { data: 'c', event: undefined },
    ]);
  });

  it.each([
    ['in one piece', undefined],
    ['in pieces of 1 byte', 1],
    ['in pieces of 4 bytes', 4],
  ])(
    'CR-only line endings: the last event is kept when the body ends right after its \\r\\r (%s)',
    async (_, chunkSize) => {
      const url = await serve({ body: 'data: a\r\rid: 2\rdata: b1\rdata: b2\r\r', chunkSize });
      expect(await collect(url)).toEqual([
        { data: 'a', event: undefined },
        { data: 'b1\nb2', event: undefined, id: '2' },
      ]);
    },
  );

  it('CR-only line endings: an event without its blank line at the end is still not emitted', async () => {
    const url = await serve({ body: 'data: a\r\rdata: cut\r' });
    expect((await collect(url)).map((m) => m.data)).toEqual(['a']);
  });

  it('decodes UTF-8 split across reads', async () => {
    const url = await serve({ body: 'data: 📦 ünï ✓\n\n', chunkSize: 1 });
    expect((await collect(url)).map((m) => m.data)).toEqual(['📦 ünï ✓']);
  });

  it('emits a raw JSON document sent without SSE framing (a late error) as event "raw"', async () => {
    const tail = '{\n  "error": {\n    "code": 503,\n    "status": "UNAVAILABLE"\n  }\n}\n';
    const url = await serve({ body: `data: {"a":1}\n\n${tail}` });
    const messages = await collect(url);
    expect(messages[1]?.event).toBe('raw');
    expect(JSON.parse(messages[1]?.data ?? '')).toEqual({ error: { code: 503, status: 'UNAVAILABLE' } });
  });

  it.each([
    ['a keep-alive line before the last event', 'data: {"a":1}\n\nping\ndata: {"a":2}\n\n'],
    ['a keep-alive line between the last event and the tail', 'data: {"a":1}\n\ndata: {"a":2}\n\nping\n'],
    ['whitespace lines before the tail', 'data: {"a":1}\n\ndata: {"a":2}\n\n  \n'],
  ])('the raw JSON tail is kept after unframed lines: %s', async (_, head) => {
    const tail = '{\n  "error": {\n    "code": 503,\n    "status": "UNAVAILABLE"\n  }\n}\n';
    const url = await serve({ body: `${head}${tail}`, chunkSize: 5 });
    const messages = await collect(url);
    expect(messages.map((m) => m.event ?? 'message')).toEqual(['message', 'message', 'raw']);
    expect(JSON.parse(messages[2]?.data ?? '')).toEqual({ error: { code: 503, status: 'UNAVAILABLE' } });
  });

  it('the raw JSON tail without a final line break is kept', async () => {
    const url = await serve({ body: 'data: {"a":1}\n\n{"error":{"code":500}}' });
    expect((await collect(url)).at(-1)).toEqual({ event: 'raw', data: '{"error":{"code":500}}' });
  });

  it.each([
    [400, false],
    [401, false],
    [403, false],
    [404, false],
    [408, true],
    [409, true],
    [429, true],
    [500, true],
    [503, true],
  ])('HTTP %i errors with HttpStatusError, retryable: %s', async (status, retryable) => {
    const url = await serve({ status, headers: { 'retry-after': '2' }, body: '{"error":"nope"}' });
    const error = await collect(url).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'http-status' });
    expect(error).toMatchObject({ status, retryable, retryAfterMs: 2000, body: '{"error":"nope"}' });
    expect(isRetryableStatus(status)).toBe(retryable);
  });

  it.each([
    [
      429,
      '{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}',
      false,
    ],
    [400, '{"error":{"code":400,"message":"busy","status":"UNAVAILABLE"}}', true],
    [503, '{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}', false],
    [529, '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', true],
    [500, '<html>Internal Server Error</html>', true],
  ])(
    'HTTP %i with a provider error body: the body code decides, by the table the adapters use',
    async (status, body, retryable) => {
      const url = await serve({ status, body });
      const error = await collect(url).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TransportError);
      expect(error).toMatchObject({ code: 'http-status' });
      expect(error).toMatchObject({ status, retryable });
    },
  );

  it('parses retry-after as seconds or as an HTTP date', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter('0.5')).toBe(500);
    expect(parseRetryAfter(new Date(10_000 + 4_000).toUTCString(), 10_000)).toBe(4000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
  });

  it('a refused connection is a retryable TransportError connection', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    const error = await collect(`http://127.0.0.1:${port}/`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'connection' });
    expect((error as TransportError).retryable).toBe(true);
  });

  it('a socket reset mid-stream is a retryable TransportError connection after the events that arrived', async () => {
    const url = await serve({ body: 'data: a\n\ndata: b\n\ndata: c\n\n', destroyAfter: 12 });
    const seen: string[] = [];
    const error = await new Promise((resolve) => {
      fromSSE(() => url).subscribe({
        next: (m) => seen.push(m.data),
        error: resolve,
        complete: () => resolve('completed'),
      });
    });
    expect(seen).toEqual(['a']);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'connection' });
    expect((error as TransportError).retryable).toBe(true);
  });

  it('silence longer than stallTimeout errors with TransportError stall and aborts the request', async () => {
    const url = await serve({ body: 'data: a\n\ndata: b\n\n', stallAfter: 9 });
    const seen: string[] = [];
    const error = await new Promise((resolve) => {
      fromSSE(() => url, { stallTimeout: 150 }).subscribe({ next: (m) => seen.push(m.data), error: resolve });
    });
    expect(seen).toEqual(['a']);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'stall' });
    expect((error as TransportError).retryable).toBe(true);
    for (let i = 0; i < 100 && server?.aborted === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(server?.aborted).toBe(1);
  });

  it('passes a request factory error to the subscriber', async () => {
    const boom = new Error('no credentials');
    const error = await firstValueFrom(
      fromSSE(() => {
        throw boom;
      }),
    ).catch((e: unknown) => e);
    expect(error).toBe(boom);
  });

  it('unsubscribing closes the request itself, and leaves no socket or timer behind', async () => {
    const baseline = process.getActiveResourcesInfo();
    const url = await serve({ body: 'data: a\n\n', stallAfter: 9 });
    await new Promise<void>((resolve) => {
      const subscription = fromSSE(() => url, { stallTimeout: 10_000 }).subscribe(() => {
        subscription.unsubscribe();
        resolve();
      });
    });
    // The server is still up: only the client can have closed the connection.
    for (let i = 0; i < 200 && server?.aborted === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(server?.aborted).toBe(1);
    await server?.close();
    server = undefined;
    const left = await settledResources(baseline);
    const count = (list: string[]) => list.filter((r) => r === 'TCPSocketWrap' || r === 'Timeout').length;
    expect(count(left)).toBeLessThanOrEqual(count(baseline));
  });
});

describe('sseJson', () => {
  it('parses data as JSON and completes at [DONE]: nothing after it is read', async () => {
    const url = await serve({ body: 'data: {"x":1}\n\ndata: [1,2]\n\ndata: [DONE]\n\ndata: {"late":1}\n\n' });
    expect(await lastValueFrom(fromSSE(() => url).pipe(sseJson(), toArray()))).toEqual([{ x: 1 }, [1, 2]]);
  });

  it('completes at [DONE] and closes a connection that stays open after it', async () => {
    const body = 'data: {"x":1}\n\ndata: [DONE]\n\n';
    const url = await serve({ body, stallAfter: body.length });
    expect(await lastValueFrom(fromSSE(() => url).pipe(sseJson(), toArray()))).toEqual([{ x: 1 }]);
    for (let i = 0; i < 200 && server?.aborted === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(server?.aborted).toBe(1);
  });

  it('errors with a retryable TransportError sse-data on a payload that is not JSON', async () => {
    const url = await serve({ body: 'data: {"x":\n\n' });
    const error = await lastValueFrom(fromSSE(() => url).pipe(sseJson())).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'sse-data' });
    expect(error).toMatchObject({ data: '{"x":', retryable: true });
  });
});
