// streamTurn({ adapter: geminiInteractions(), resume: geminiBackground(…) }) against a loopback server of the Gemini
// Interactions API in background mode: POST /v1beta/interactions creates an interaction and streams its events,
// each with an opaque event_id; GET /v1beta/interactions/{id}?stream=true&last_event_id=… streams the ones after
// that id; POST /v1beta/interactions/{id}:cancel cancels it. Each connection may be cut, replay what the client read,
// strip the event ids (a proxy that re-serialises), or answer 404.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { accumulateTurn, type TurnEvent, type TurnState, UsageError } from 'cleanturn';
import { geminiInteractions } from 'cleanturn/providers';
import { geminiBackground, resumeResponse, streamTurn } from 'cleanturn/transport';
import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { SseRequest } from '../../src/transport/fromSSE.js';
import { expectNoLeftoverHandles } from '../support/resources.js';

/** What one connection does: cut after k events, replay the last r events read, strip ids, or answer a status. */
interface Fault {
  cutAfter?: number;
  replay?: number;
  stripIds?: boolean;
  status?: number;
}

interface Interaction {
  id: string;
  text: string[];
  events: Record<string, unknown>[];
  cancelled: boolean;
}

interface GeminiServer {
  url: string;
  interactions: Interaction[];
  requests: { method: string; path: string; lastEventId: string | null }[];
  close(): Promise<void>;
}

/** The opaque id of event i of interaction n, as the API's base64-looking ids are. */
const eventId = (n: number, i: number) => Buffer.from(`int${n}:${i}`).toString('base64url');

async function startGemini(faults: (connection: number) => Fault = () => ({})): Promise<GeminiServer> {
  const sockets = new Set<Socket>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const server: GeminiServer = { url: '', interactions: [], requests: [], close: async () => {} };
  let connections = 0;

  const stream = (res: ServerResponse, events: Record<string, unknown>[], fault: Fault) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let i = 0;
    const next = () => {
      if (res.destroyed) return;
      const event = events[i];
      if (event === undefined) {
        res.end();
        return;
      }
      if (fault.cutAfter !== undefined && i >= fault.cutAfter) {
        res.socket?.destroy();
        return;
      }
      i++;
      const sent = fault.stripIds ? { ...event, event_id: undefined } : event;
      res.write(`event: ${String(event.event_type)}\ndata: ${JSON.stringify(sent)}\n\n`);
      const timer = setTimeout(() => {
        timers.delete(timer);
        next();
      }, 3);
      timers.add(timer);
    };
    next();
  };

  const http: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const lastEventId = url.searchParams.get('last_event_id');
    server.requests.push({ method: req.method ?? '', path: url.pathname, lastEventId });
    const fault = faults(connections++);
    req.resume();
    req.on('end', () => {
      if (fault.status !== undefined) {
        res.writeHead(fault.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: fault.status, message: 'not found', status: 'NOT_FOUND' } }));
        return;
      }
      if (req.method === 'POST' && url.pathname === '/v1beta/interactions') {
        const n = server.interactions.length + 1;
        const id = `v1_int${n}`;
        const text = Array.from({ length: 8 }, (_, i) => `w${n}.${i} `);
        const events: Record<string, unknown>[] = [
          { event_type: 'interaction.created', interaction: { id, status: 'in_progress' } },
          { event_type: 'step.start', index: 0, step: { type: 'model_output' } },
          ...text.map((t) => ({ event_type: 'step.delta', index: 0, delta: { type: 'text', text: t } })),
          { event_type: 'step.stop', index: 0 },
          {
            event_type: 'interaction.completed',
            interaction: {
              id,
              status: 'completed',
              usage: { total_input_tokens: 20, total_output_tokens: 8 },
            },
          },
        ].map((event, i) => ({ ...event, event_id: eventId(n, i) }));
        server.interactions.push({ id, text, events, cancelled: false });
        stream(res, events, fault);
        return;
      }
      const match = /^\/v1beta\/interactions\/([^/:]+)(:cancel)?$/.exec(url.pathname);
      const interaction = server.interactions.find((x) => x.id === decodeURIComponent(match?.[1] ?? ''));
      if (interaction === undefined) {
        res.writeHead(404).end();
        return;
      }
      if (match?.[2] === ':cancel') {
        interaction.cancelled = true;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      const at = interaction.events.findIndex((e) => e.event_id === lastEventId);
      const from = Math.max(0, at + 1 - (fault.replay ?? 0));
      stream(res, interaction.events.slice(from), fault);
    });
  });
  http.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  server.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/v1beta`;
  server.close = async () => {
    for (const timer of timers) clearTimeout(timer);
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  };
  return server;
}

let gemini: GeminiServer | undefined;
// The server closes before the check of what is left open.
expectNoLeftoverHandles(async () => {
  await gemini?.close();
  gemini = undefined;
});

const turnOf = (server: GeminiServer, retry = 2) =>
  streamTurn({
    turnId: 'turn-g',
    adapter: geminiInteractions(),
    backoff: false,
    retry,
    request: ({ signal }) => ({
      url: `${server.url}/interactions`,
      init: {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-goog-api-key': 'test' },
        body: JSON.stringify({ model: 'gemini-2.5-flash', input: 'Refund', background: true, stream: true }),
        signal,
      },
    }),
    resume: geminiBackground({ baseUrl: server.url, headers: { 'x-goog-api-key': 'test' } }),
  });

async function run(server: GeminiServer, retry?: number): Promise<{ events: TurnEvent[]; state: TurnState }> {
  const events = await lastValueFrom(turnOf(server, retry).pipe(toArray()));
  let state: TurnState | undefined;
  const { from } = await import('rxjs');
  from(events)
    .pipe(accumulateTurn())
    .subscribe((s) => {
      state = s as TurnState;
    });
  return { events, state: state as TurnState };
}

describe('streamTurn with geminiBackground: a cut Interactions stream goes on after its last event id', () => {
  it('a cut mid-answer resumes the same interaction: one create, one resume after the last event id, no reset', async () => {
    gemini = await startGemini((c) => (c === 0 ? { cutAfter: 5 } : {}));
    const { events, state } = await run(gemini);
    const created = gemini.interactions[0] as Interaction;
    expect(gemini.interactions).toHaveLength(1);
    expect(state.text).toBe(created.text.join(''));
    expect(events.filter((e) => e.type === 'reset')).toEqual([]);
    expect(events.filter((e) => e.type === 'resume')).toMatchObject([
      { type: 'resume', after: 4, cursor: eventId(1, 4), attempt: 1 },
    ]);
    expect(gemini.requests).toEqual([
      { method: 'POST', path: '/v1beta/interactions', lastEventId: null },
      { method: 'GET', path: `/v1beta/interactions/${created.id}`, lastEventId: eventId(1, 4) },
    ]);
    expect(state.finish).toMatchObject({ reason: 'stop', attempt: 1 });
    expect(created.cancelled).toBe(false);
  });

  it('events the resumed stream sends again (ids already read) are dropped: every word once', async () => {
    gemini = await startGemini((c) => (c === 0 ? { cutAfter: 6 } : { replay: 3 }));
    const { events, state } = await run(gemini);
    expect(state.text).toBe((gemini.interactions[0] as Interaction).text.join(''));
    expect(events.filter((e) => e.type === 'text').map((e) => (e.type === 'text' ? e.text : ''))).toEqual(
      (gemini.interactions[0] as Interaction).text,
    );
  });

  it('two cuts in a row resume twice, each after the last id that arrived', async () => {
    gemini = await startGemini((c) => (c === 0 ? { cutAfter: 3 } : c === 1 ? { cutAfter: 2 } : {}));
    const { events, state } = await run(gemini);
    expect(state.text).toBe((gemini.interactions[0] as Interaction).text.join(''));
    expect(gemini.requests.map((r) => r.lastEventId)).toEqual([null, eventId(1, 2), eventId(1, 4)]);
    expect(
      events.filter((e) => e.type === 'resume').map((e) => (e.type === 'resume' ? e.cursor : '')),
    ).toEqual([eventId(1, 2), eventId(1, 4)]);
  });

  it('a resumed stream without event ids cannot be placed: an ordinary retry, with a reset, and the first is cancelled', async () => {
    gemini = await startGemini((c) => (c === 0 ? { cutAfter: 4 } : c === 1 ? { stripIds: true } : {}));
    const { events, state } = await run(gemini);
    expect(gemini.interactions).toHaveLength(2);
    const resets = events.filter((e) => e.type === 'reset');
    expect(resets).toHaveLength(1);
    expect(resets[0]).toMatchObject({ attempt: 2, errorName: 'TransportError' });
    expect(state.text).toBe((gemini.interactions[1] as Interaction).text.join(''));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((gemini.interactions[0] as Interaction).cancelled).toBe(true);
  });

  it('an interaction the server does not know on resume (404): a TransportError resume-not-found, then a new attempt', async () => {
    gemini = await startGemini((c) => (c === 0 ? { cutAfter: 4 } : c === 1 ? { status: 404 } : {}));
    const { events, state } = await run(gemini);
    const reset = events.find((e) => e.type === 'reset');
    expect(reset).toMatchObject({ attempt: 2 });
    expect(reset?.type === 'reset' && reset.reason).toContain('does not know it');
    expect(state.text).toBe((gemini.interactions[1] as Interaction).text.join(''));
  });
});

describe('geminiBackground', () => {
  it('resumeFrom: a takeover reads the interaction again from its start (no last_event_id), with no create', async () => {
    gemini = await startGemini();
    const first = await run(gemini);
    const created = gemini.interactions[0] as Interaction;
    // What a lost runner delivered: the interaction's name and its first three words.
    const delivered: TurnEvent[] = [
      ...first.events.filter((e) => e.type === 'resumable'),
      ...first.events.filter((e) => e.type === 'text').slice(0, 3),
    ];
    gemini.requests.length = 0;
    const again = await lastValueFrom(
      streamTurn({
        turnId: 'turn-g',
        adapter: geminiInteractions(),
        backoff: false,
        request: () => `${gemini?.url}/interactions`,
        resume: geminiBackground({ baseUrl: gemini.url }),
        resumeFrom: { responseId: created.id, delivered },
      }).pipe(toArray()),
    );
    expect(gemini.requests).toEqual([
      { method: 'GET', path: `/v1beta/interactions/${created.id}`, lastEventId: null },
    ]);
    expect(again[0]).toEqual({ type: 'resumable', responseId: created.id, attempt: 1 });
    expect(again.filter((e) => e.type === 'text').map((e) => (e.type === 'text' ? e.text : ''))).toEqual(
      created.text,
    );
    expect(again.filter((e) => e.type === 'reset')).toEqual([]);
  });

  it('resumeFrom: an interaction that reads otherwise than what was delivered fails over to a new one, after a reset', async () => {
    gemini = await startGemini();
    await run(gemini);
    const created = gemini.interactions[0] as Interaction;
    const events = await lastValueFrom(
      streamTurn({
        turnId: 'turn-g',
        adapter: geminiInteractions(),
        backoff: false,
        request: ({ signal }) => ({
          url: `${gemini?.url}/interactions`,
          init: { method: 'POST', body: '{}', signal },
        }),
        resume: geminiBackground({ baseUrl: gemini.url }),
        resumeFrom: {
          responseId: created.id,
          delivered: [{ type: 'text', text: 'another answer', attempt: 1 }],
        },
      }).pipe(toArray()),
    );
    expect(events.filter((e) => e.type === 'reset')).toMatchObject([
      { attempt: 2, failedAttempt: 1, errorName: 'TransportError' },
    ]);
    expect(gemini.interactions).toHaveLength(2);
  });

  it('makes the retrieve and cancel requests, ids and cursors encoded, without a content type', async () => {
    const requests = geminiBackground({
      baseUrl: 'https://example.test/v1beta/',
      headers: { 'x-goog-api-key': 'k', 'content-type': 'application/json' },
    });
    expect(requests.format).toBe('interactions');
    const signal = new AbortController().signal;
    /** The requests made as objects: `{ url, init }`. */
    type Made = Exclude<SseRequest, string | URL | Request> & { url: string };
    const retrieve = (await requests.retrieve({ id: 'v1/a b', after: 3, cursor: 'c+/=', signal })) as Made;
    expect(retrieve.url).toBe(
      'https://example.test/v1beta/interactions/v1%2Fa%20b?stream=true&last_event_id=c%2B%2F%3D',
    );
    const headers = new Headers(retrieve.init?.headers);
    expect([headers.get('x-goog-api-key'), headers.get('accept'), headers.get('content-type')]).toEqual([
      'k',
      'text/event-stream',
      null,
    ]);
    const cancel = (await requests.cancel?.({ id: 'v1_x', signal })) as Made;
    expect([cancel?.url, cancel?.init?.method]).toEqual([
      'https://example.test/v1beta/interactions/v1_x:cancel',
      'POST',
    ]);
    // Without a cursor (nothing read yet): from the start.
    expect(((await requests.retrieve({ id: 'x', after: -1, signal })) as Made).url).toBe(
      'https://example.test/v1beta/interactions/x?stream=true',
    );
    expect(((await geminiBackground().retrieve({ id: 'x', after: -1, signal })) as Made).url).toBe(
      'https://generativelanguage.googleapis.com/v1beta/interactions/x?stream=true',
    );
  });

  it('refuses resume options out of range, and a format streamTurn and resumeResponse do not know', () => {
    expect(() => geminiBackground({ maxResumes: -1 })).toThrow(UsageError);
    expect(() => geminiBackground({ delay: Number.NaN })).toThrow(UsageError);
    expect(() =>
      resumeResponse({
        create: () => [],
        retrieve: () => [],
        adapter: geminiInteractions(),
        format: 'gemini' as never,
      }),
    ).toThrow(UsageError);
    expect(() =>
      streamTurn({
        turnId: 't',
        adapter: geminiInteractions(),
        request: () => 'http://127.0.0.1:1/',
        resume: { ...geminiBackground(), format: 'gemini' as never },
      }),
    ).toThrow(/resume\.format/);
  });
});
