import { connect } from 'node:net';
import type { TurnEvent } from 'cleanturn';
import { at, finish, text } from 'cleanturn/testing';
import {
  fromSSE,
  fromTurnSSE,
  memoryTurnLog,
  TransportError,
  type TurnLog,
  type TurnMessage,
  toSSE,
  turnServer,
} from 'cleanturn/transport';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { lastValueFrom, Observable, Subject, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { startHttpServer, startTurnHttpServer } from '../support/turnHttpServer.js';

/** The turn every served id runs: three events, then its end. */
const events: TurnEvent[] = [
  at(1, text('Checking order ORD-7781. ')),
  at(1, text('The refund is on its way.')),
  at(1, finish()),
];

/** A run that emits `events` one per macrotask, then completes. */
function feed(): Observable<TurnEvent> {
  return new Observable<TurnEvent>((subscriber) => {
    let i = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const step = () => {
      const event = events[i++];
      if (event === undefined) subscriber.complete();
      else {
        subscriber.next(event);
        timer = setTimeout(step, 2);
      }
    };
    timer = setTimeout(step, 2);
    return () => clearTimeout(timer);
  });
}

let cleanup: (() => Promise<void>)[] = [];
expectNoLeftoverHandles(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

/** A turn server on a memory log behind the guide's HTTP server, closed after the test. */
async function start(cutAfter: (connection: number) => number | undefined = () => undefined) {
  const turns = turnServer<TurnEvent>({ log: memoryTurnLog() });
  const server = await startTurnHttpServer(turns, feed, cutAfter);
  cleanup.push(server.close, () => turns.close());
  return { turns, server };
}

/** The raw bytes of a response body, read over a plain socket (HTTP/1.0: no chunked encoding, closed at the end). */
function rawGet(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`GET ${path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n`);
    });
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const response = Buffer.concat(chunks).toString('utf8');
      const head = response.indexOf('\r\n\r\n');
      resolve(head < 0 ? '' : response.slice(head + 4));
    });
  });
}

/** The events a browser's EventSource would see in an SSE body (the same parser the transport uses). */
function eventsOf(body: string): EventSourceMessage[] {
  const parsed: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => parsed.push(event) });
  parser.feed(body);
  parser.reset({ consume: true });
  return parsed;
}

/** Each line of the body that is not one of the lines the turn server writes. */
function foreignLines(body: string): string[] {
  return body
    .split('\n')
    .filter(
      (line) =>
        !(
          line === '' ||
          /^id: ([A-Za-z0-9\-_.!~*'()%]+:(-1|0|[1-9][0-9]*))?$/.test(line) ||
          /^event: (turn|end|failed)$/.test(line) ||
          /^data: [^\r\0]*$/.test(line)
        ),
    );
}

const failure = (error: unknown) => error;

// The attack of the transport guide's server: a link to a turn whose id, decoded from the URL, holds an SSE event.
const forgery = (br: string) =>
  `/turns/t${br}${br}id:%20x${br}event:%20end${br}data:%20%7B%7D${br}${br}event:%20turn${br}data:%20` +
  `%7B%22type%22:%22text%22,%22text%22:%22FORGED:%20wire%20$500%20to%20account%2042%22%7D${br}`;

describe('a turn id never forges an event', () => {
  it.each([
    ['LF', '%0A'],
    ['CR', '%0D'],
    ['CRLF', '%0D%0A'],
  ])(
    'a turn id with %s line breaks: the bytes on the wire are the turn events, nothing else',
    async (_, br) => {
      const { server } = await start();
      const body = await rawGet(server.port, forgery(br));
      expect(server.requests[0]?.turnId).toContain(decodeURIComponent(br));
      expect(foreignLines(body)).toEqual([]);
      const seen = eventsOf(body);
      expect(seen.map((e) => e.event)).toEqual(['turn', 'turn', 'turn', 'end']);
      expect(seen.slice(0, 3).map((e) => JSON.parse(e.data))).toEqual(events);
      const turnId = server.requests[0]?.turnId as string;
      expect(seen.map((e) => e.id)).toEqual(
        [0, 1, 2, 3].map((seq) => `${encodeURIComponent(turnId)}:${seq}`),
      );
    },
  );

  it.each([
    ['LF', '%0A'],
    ['CR', '%0D'],
    ['CRLF', '%0D%0A'],
  ])('a turn id with %s line breaks: fromTurnSSE reads exactly the turn', async (_, br) => {
    const { server } = await start();
    const received = await lastValueFrom(fromTurnSSE(() => `${server.url}${forgery(br)}`).pipe(toArray()));
    expect(received).toEqual(events);
    expect(server.runs()).toBe(1);
  });
});

// Every id a turn server accepts: at most 256 UTF-16 code units, well-formed.
const roundTrips: [string, string][] = [
  ['CJK and an emoji', 'turn-日本-🙂'],
  ['LF', 'turn\nid'],
  ['CR', 'turn\rid'],
  ['CRLF', 'turn\r\nid'],
  ['NUL', 'turn\u0000id'],
  ['colons', 'turn:42:7'],
  ['spaces', 'turn 42 of order ORD-7781'],
  ['a percent sign', '100%'],
  ['text that reads as percent-encoding', '%41%3A1'],
  ['braces', '{turn}:owner'],
  ['Latin-1 letters', 'tür-é'],
  ['256 ASCII characters', 'a'.repeat(256)],
  ['256 CJK characters', '日'.repeat(256)],
  ['128 emoji (256 code units)', '🙂'.repeat(128)],
];

describe('every turn id the server accepts resumes across a reconnect', () => {
  it.each(roundTrips)('%s', async (_, turnId) => {
    const { server } = await start((connection) => (connection === 0 ? 2 : undefined));
    const received = await lastValueFrom(
      fromTurnSSE(() => `${server.url}/turns/${encodeURIComponent(turnId)}`, {
        reconnect: { delay: 0 },
      }).pipe(toArray()),
    );
    expect(received).toEqual(events);
    expect(server.runs()).toBe(1);
    expect(server.requests.map((s) => s.turnId)).toEqual([turnId, turnId]);
    const header = server.requests[1]?.lastEventId ?? '';
    expect(header).toBe(`${encodeURIComponent(turnId)}:1`);
    // Printable ASCII, and far below the 8 KB header limits of common servers and proxies.
    expect(header).toMatch(/^[\x21-\x7e]+$/);
    expect(header.length).toBeLessThanOrEqual(2_400);
  });
});

describe('a turn id the server cannot serve gets a typed error at once, and runs nothing', () => {
  it.each([
    ['257 characters', 'a'.repeat(257)],
    ['10 KB', 'x'.repeat(10_000)],
    ['empty', ''],
  ])('over HTTP: %s', async (_, turnId) => {
    const { server } = await start();
    const error = await lastValueFrom(
      fromTurnSSE(() => `${server.url}/turns/${encodeURIComponent(turnId)}`, { reconnect: { delay: 0 } }),
    ).then(() => undefined, failure);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'remote-turn' });
    expect(error).toMatchObject({
      remoteName: 'TransportError',
      remoteCode: expect.stringMatching(/^turn-id-/),
      retryable: false,
    });
    expect(server.runs()).toBe(0);
    expect(server.requests).toHaveLength(1);
  });

  it.each([
    ['a lone high surrogate', 'turn-\uD83D'],
    ['a lone low surrogate', '\uDE42-turn'],
    ['surrogates in the wrong order', '\uDE42\uD83D'],
    ['257 characters', 'a'.repeat(257)],
  ])('serve(): %s', async (_, turnId) => {
    const turns = turnServer<TurnEvent>({ log: memoryTurnLog() });
    let runs = 0;
    const messages = await lastValueFrom(
      turns
        .serve({
          turnId,
          run: () => {
            runs++;
            return feed();
          },
        })
        .pipe(toArray()),
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ id: '', type: 'failed' });
    expect(JSON.parse(messages[0]?.data ?? '{}')).toMatchObject({
      name: 'TransportError',
      code: expect.stringMatching(/^turn-id-/),
      retryable: false,
    });
    // The message is safe to write as it is.
    expect(foreignLines(toSSE(messages[0] as TurnMessage))).toEqual([]);
    expect(runs).toBe(0);
    await turns.close();
  });
});

/** A log with turn `T` ended (e0, e1, then its end at seq 2) and turn `R` running (e0). */
async function logWithTurns(): Promise<TurnLog<TurnEvent>> {
  const log = memoryTurnLog<TurnEvent>();
  await log.claim('T');
  await log.append('T', { seq: 0, event: events[0] as TurnEvent });
  await log.append('T', { seq: 1, event: events[1] as TurnEvent });
  await log.append('T', { seq: 2, end: 'completed' });
  await log.claim('R');
  await log.append('R', { seq: 0, event: events[0] as TurnEvent });
  return log;
}

/** The messages of one connection with this Last-Event-ID, and how many times the turn ran. */
async function connection(log: TurnLog<TurnEvent>, turnId: string, lastEventId: string) {
  const turns = turnServer<TurnEvent>({ log });
  let runs = 0;
  const messages = await lastValueFrom(
    turns
      .serve({
        turnId,
        lastEventId,
        run: () => {
          runs++;
          return new Subject<TurnEvent>();
        },
      })
      .pipe(toArray()),
  );
  await turns.close();
  return { messages, runs };
}

describe('Last-Event-ID is read strictly', () => {
  it.each([
    'T:',
    'T:0x1',
    'T:1e21',
    'T:1e0',
    'T:01',
    'T:+1',
    'T: 1',
    'T:1 ',
    'T:1.0',
    'T:-0',
    'T:-2',
    'T:9007199254740992',
    'T:1000000000000000000000',
    'T:Infinity',
  ])(
    '%s names the turn with a position this server never issued: a typed failed message, nothing replayed',
    async (lastEventId) => {
      const { messages, runs } = await connection(await logWithTurns(), 'T', lastEventId);
      expect(messages).toHaveLength(1);
      expect(messages[0]).toMatchObject({ id: 'T:-1', type: 'failed' });
      expect(JSON.parse(messages[0]?.data ?? '{}')).toMatchObject({
        name: 'TransportError',
        code: 'last-event-id',
        retryable: false,
      });
      expect(runs).toBe(0);
    },
  );

  it.each([
    ['T:-1', ['T:0', 'T:1', 'T:2']],
    ['T:0', ['T:1', 'T:2']],
    ['T:1', ['T:2']],
    ['T:2', []],
  ])('%s on an ended turn reads what follows it', async (lastEventId, ids) => {
    const { messages, runs } = await connection(await logWithTurns(), 'T', lastEventId);
    expect(messages.map((m) => m.id)).toEqual(ids);
    expect(runs).toBe(0);
  });

  it.each(['T:3', 'T:999999', 'T:9007199254740991'])(
    '%s is past the end of an ended turn: the connection ends at once with the end message',
    async (lastEventId) => {
      const { messages, runs } = await connection(await logWithTurns(), 'T', lastEventId);
      expect(messages).toEqual([{ id: 'T:2', type: 'end', data: '{"outcome":"completed"}' }]);
      expect(runs).toBe(0);
    },
  );

  it.each(['R:1', 'R:999999'])(
    '%s is past the end of a running turn, which never issued it: a typed failed message',
    { timeout: 5_000 },
    async (lastEventId) => {
      const { messages, runs } = await connection(await logWithTurns(), 'R', lastEventId);
      expect(messages).toHaveLength(1);
      // With the id the client said it had, as every failed message of a reconnect.
      expect(messages[0]).toMatchObject({ id: lastEventId, type: 'failed' });
      expect(JSON.parse(messages[0]?.data ?? '{}')).toMatchObject({
        name: 'TransportError',
        code: 'turn-ahead',
        retryable: false,
      });
      expect(runs).toBe(0);
    },
  );

  it('a client past the end of an ended turn completes promptly over HTTP, without reconnecting', async () => {
    const { server } = await start();
    expect(await lastValueFrom(fromTurnSSE(() => `${server.url}/turns/t-1`).pipe(toArray()))).toEqual(events);
    const error = await lastValueFrom(
      fromTurnSSE(
        () => ({ url: `${server.url}/turns/t-1`, init: { headers: { 'last-event-id': 't-1:999999' } } }),
        {
          reconnect: { delay: 0 },
        },
      ).pipe(toArray()),
    ).then((received) => {
      expect(received).toEqual([]);
      return undefined;
    }, failure);
    expect(error).toBeUndefined();
    expect(server.requests.map((s) => s.lastEventId)).toEqual([undefined, 't-1:999999']);
    expect(server.runs()).toBe(1);
  });
});

describe('toSSE never writes a line break or NUL into a field', () => {
  it.each([
    ['id', { id: 'a\nevent: end', type: 'turn', data: '{}' }],
    ['id', { id: 'a\rb', type: 'turn', data: '{}' }],
    ['id', { id: 'a\u0000b', type: 'turn', data: '{}' }],
    ['event', { id: 'a:0', type: 'turn\ndata: x', data: '{}' }],
    ['event', { id: 'a:0', type: 'turn\u0000', data: '{}' }],
    ['data', { id: 'a:0', type: 'turn', data: '{"a":"\u0000"}' }],
  ] as [string, TurnMessage][])(
    'refuses a message whose %s has one, with TransportError sse-field',
    (field, message) => {
      const error = (() => {
        try {
          return toSSE(message);
        } catch (thrown) {
          return thrown;
        }
      })();
      expect(error).toBeInstanceOf(TransportError);
      expect(error).toMatchObject({ code: 'sse-field' });
      expect(error).toMatchObject({ field, retryable: false });
    },
  );

  it('writes data with line breaks as data lines of one event', () => {
    const written = toSSE({ id: 'a:0', type: 'turn', data: 'one\ntwo\r\nthree\rfour' });
    expect(written).toBe('id: a:0\nevent: turn\ndata: one\ndata: two\ndata: three\ndata: four\n\n');
    expect(eventsOf(written)).toEqual([{ id: 'a:0', event: 'turn', data: 'one\ntwo\nthree\nfour' }]);
  });
});

describe('fromSSE reconnects with any id it was sent', () => {
  it('sends an id that is not Latin-1 as UTF-8, as a browser does', async () => {
    const headers: (string | undefined)[] = [];
    const server = await startHttpServer((req, res) => {
      const header = req.headers['last-event-id'];
      // Node reads header bytes as Latin-1: the UTF-8 bytes the client sent, decoded.
      headers.push(typeof header === 'string' ? Buffer.from(header, 'latin1').toString('utf8') : undefined);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (headers.length === 1) res.write('id: 日本-🙂-1\ndata: {"n":1}\n\n', () => res.destroy());
      else res.end('id: 日本-🙂-2\nevent: end\ndata: {"n":2}\n\n');
    });
    cleanup.push(server.close);
    const url = server.url;
    const messages = await lastValueFrom(
      fromSSE(() => url, { reconnect: { count: 1, delay: 0, isLast: (m) => m.event === 'end' } }).pipe(
        toArray(),
      ),
    );
    expect(messages.map((m) => m.data)).toEqual(['{"n":1}', '{"n":2}']);
    expect(headers).toEqual([undefined, '日本-🙂-1']);
  });
});
