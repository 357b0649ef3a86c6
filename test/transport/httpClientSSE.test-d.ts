// Types of httpClientSSE: Angular's own HttpClient events fit its structural input, the wrong requests do not.
import type { HttpClient, HttpErrorResponse, HttpEvent, HttpHeaders } from '@angular/common/http';
import { attemptPipeline, type ProviderEvent } from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import { httpClientSSE, type SseMessage, sseJson } from 'cleanturn/transport';
import type { Observable } from 'rxjs';
import { describe, expectTypeOf, test } from 'vitest';
import type { AssembledEvent } from '../../src/assembleToolCalls.js';
import type { OpenAIChatChunk } from '../../src/providers/openaiChat.js';
import type { HttpHeadersLike } from '../../src/transport/errors.js';
import type { HttpClientEvent } from '../../src/transport/httpClientSSE.js';

declare const http: HttpClient;
const url = '/api/chat/completions';

describe('httpClientSSE', () => {
  test("Angular's HttpEvent<string> is an HttpClientEvent, and HttpHeaders are HttpHeadersLike", () => {
    expectTypeOf<HttpEvent<string>>().toExtend<HttpClientEvent>();
    expectTypeOf<HttpHeaders>().toExtend<HttpHeadersLike>();
    expectTypeOf<Headers>().toExtend<HttpHeadersLike>();
    // An HttpErrorResponse carries what the operator reads: the status, its text, the body and the headers.
    expectTypeOf<HttpErrorResponse>().toExtend<{
      name: 'HttpErrorResponse';
      status: number;
      statusText: string;
      error: unknown;
      headers: HttpHeadersLike;
    }>();
  });

  test('a request for the events as text pipes into it, and on into sseJson and an adapter', () => {
    const events = http.post(url, {}, { observe: 'events', reportProgress: true, responseType: 'text' });
    expectTypeOf(events.pipe(httpClientSSE())).toEqualTypeOf<Observable<SseMessage>>();
    expectTypeOf(
      events.pipe(
        httpClientSSE({ maxBufferSize: 1 << 20 }),
        sseJson<OpenAIChatChunk>(),
        attemptPipeline(openaiChat()),
      ),
    ).toEqualTypeOf<Observable<AssembledEvent<ProviderEvent>>>();
  });

  test('a request for the body, or for JSON, does not', () => {
    const body = http.post(url, {}, { responseType: 'text' });
    // @ts-expect-error the body alone (observe defaults to 'body'): no events to read
    body.pipe(httpClientSSE());
    const json = http.post(url, {}, { observe: 'events', reportProgress: true });
    // @ts-expect-error responseType defaults to 'json': the body would be parsed as one JSON document
    json.pipe(httpClientSSE());
  });
});
