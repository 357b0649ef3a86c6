// What the transport's errors say when printed: one line that names what happened, without the JSON of the body or
// its line breaks. The HTTP errors come from a real server on 127.0.0.1, the network failures from real refused
// connections and a name that does not resolve.
import { createServer } from 'node:http';
import { retryAsEvents, TurnError } from 'cleanturn';
import { fromSSE, TransportError } from 'cleanturn/transport';
import { lastValueFrom, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { retriesExhaustedError } from '../../src/errors.js';
import { httpStatusError } from '../../src/transport/errors.js';
import { listenOnLoopback, startServer, type TestServer } from '../support/httpServer.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** The error of one request to a server that answers `status` with `body`. */
async function statusError(status: number, body: string, contentType = 'application/json') {
  server = await startServer([{ status, headers: { 'content-type': contentType }, body }]);
  const error = await lastValueFrom(
    fromSSE(() => `${server?.url}/v1/chat/completions`).pipe(toArray()),
  ).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(TransportError);
  expect(error).toMatchObject({ code: 'http-status' });
  return error as TransportError;
}

/** A port on 127.0.0.1 that nothing listens on: listened on, noted, closed. */
async function closedPort(): Promise<number> {
  const { port, close } = await listenOnLoopback(createServer());
  await close();
  return port;
}

describe('TransportError http-status: the status and what the provider said, on one line', () => {
  it.each([
    [
      'OpenAI',
      401,
      '{"error":{"message":"Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}',
      'HTTP 401 Unauthorized: Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys. (invalid_api_key)',
    ],
    [
      'Anthropic',
      401,
      '{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}',
      'HTTP 401 Unauthorized: invalid x-api-key (authentication_error)',
    ],
    [
      'Gemini',
      400,
      '{\n  "error": {\n    "code": 400,\n    "message": "API key not valid. Please pass a valid API key.",\n    "status": "INVALID_ARGUMENT"\n  }\n}\n',
      'HTTP 400 Bad Request: API key not valid. Please pass a valid API key. (INVALID_ARGUMENT)',
    ],
    ['an error that is a string', 403, '{"error":"nope"}', 'HTTP 403 Forbidden: nope'],
    [
      'a top-level message (vLLM)',
      400,
      '{"object":"error","message":"max_tokens must be at least 1, got 0.","type":"BadRequestError","param":null,"code":400}',
      'HTTP 400 Bad Request: max_tokens must be at least 1, got 0. (BadRequestError)',
    ],
  ])('%s: the status, its text, the message and the code', async (_, status, body, message) => {
    const error = await statusError(status, body);
    expect(error.message).toBe(message);
    // The body stays as it came, for logs.
    expect(error.body).toBe(body);
  });

  it('a message with line breaks is one line; a long one is cut', async () => {
    const long = `${'the context is too long. '.repeat(40)}`;
    const error = await statusError(
      400,
      JSON.stringify({
        error: { message: `first line\r\n\tsecond line\n${long}`, code: 'context_length_exceeded' },
      }),
    );
    expect(error.message).not.toMatch(/[\r\n\t]/);
    expect(error.message).toMatch(/^HTTP 400 Bad Request: first line second line the context is too long\. /);
    expect(error.message).toMatch(/… \(context_length_exceeded\)$/);
    expect(error.message.length).toBeLessThan(400);
  });

  it('a body that is not a JSON error (an HTML page of a proxy): its start, on one line', async () => {
    const html =
      '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';
    const error = await statusError(502, html, 'text/html');
    expect(error.message).toBe(
      'HTTP 502 Bad Gateway: <html> <head><title>502 Bad Gateway</title></head> <body> <center><h1>502 Bad Gateway</h1></center> <hr><center>nginx</center> </body> </html>',
    );
    expect(error.retryable).toBe(true);
  });

  it('control characters of the body never reach the message (a terminal escape)', async () => {
    const error = await statusError(500, '{"error":{"message":"oops\\u001b[2J\\u0007 done"}}');
    expect(error.message).toBe('HTTP 500 Internal Server Error: oops [2J done');
  });

  it('a body that is JSON without a message (a cut body, an error object of its own shape): its start', async () => {
    expect((await statusError(429, '{"error":{"code":"rate_li')).message).toBe(
      'HTTP 429 Too Many Requests: {"error":{"code":"rate_li',
    );
    expect((await statusError(500, '{"detail":{"reason":"busy"}}')).message).toBe(
      'HTTP 500 Internal Server Error: {"detail":{"reason":"busy"}}',
    );
  });

  it('no body, no status text: the status alone', () => {
    expect(httpStatusError(401, '', '', undefined).message).toBe('HTTP 401');
    expect(httpStatusError(404, 'Not Found', '   \n', undefined).message).toBe('HTTP 404 Not Found');
  });
});

describe('a network failure: what the connection met, not "fetch failed"', () => {
  it('a refused connection names the address; the turn gives up with one line that names the attempts', async () => {
    const port = await closedPort();
    const error = await lastValueFrom(
      fromSSE(() => `http://127.0.0.1:${port}/v1/chat/completions`).pipe(
        retryAsEvents({ count: 2 }),
        toArray(),
      ),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TurnError);
    expect(error).toMatchObject({ code: 'retries-exhausted' });
    const last = (error as TurnError).attempts?.at(-1)?.error;
    expect(last).toBeInstanceOf(TransportError);
    expect(last).toMatchObject({ code: 'connection' });
    expect((last as Error).message).toBe(`request failed: connect ECONNREFUSED 127.0.0.1:${port}`);
    expect((error as Error).message).toBe(
      `gave up after 3 attempt(s): request failed: connect ECONNREFUSED 127.0.0.1:${port}`,
    );
  });

  it('a name that does not resolve names the host', async () => {
    const error = await lastValueFrom(fromSSE(() => 'http://cleanturn.invalid/v1/chat/completions')).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'connection' });
    expect((error as Error).message).toMatch(
      /^request failed: getaddrinfo (ENOTFOUND|EAI_AGAIN) cleanturn\.invalid$/,
    );
  });
});

describe('TurnError retries-exhausted: one line', () => {
  it('a reason with line breaks is joined into one line; the record keeps it as it was', () => {
    const reason = 'HTTP 502 Bad Gateway:\n<html>\r\n  <body>busy</body>';
    const error = retriesExhaustedError('cap', [
      { attempt: 1, reason, error: new Error(reason), emitted: 0 },
    ]);
    expect(error.message).toBe('gave up after 1 attempt(s): HTTP 502 Bad Gateway: <html> <body>busy</body>');
    expect(error.attempts?.[0]?.reason).toBe(reason);
  });
});
