// The browser hop across two server processes: two turn servers (child processes, test/support/turnServerProcess.ts)
// share one real redis-server through redisTurnLog. A loopback provider streams a Chat Completions answer slowly
// and resets its first connection mid-stream (a turn of two attempts). The client (fromTurnSSE) reads the turn
// from process A, which drops it mid-turn; it reconnects to process B with Last-Event-ID, and B serves the rest
// of the same turn from Redis, without running it again.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { accumulateTurn, type TurnEvent } from 'cleanturn';
import { fromTurnSSE } from 'cleanturn/transport';
import type { Redis } from 'ioredis';
import { from, lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, redisTests, startRedisServer } from '../effects/redisServer.js';
import { chatTranscript } from '../support/chatTranscript.js';
import { expectNoLeftoverHandles } from '../support/resources.js';

const root = join(import.meta.dirname, '..', '..');

/** The words attempt 2 streams, one text event each: what the user must read, once. */
const words = Array.from({ length: 40 }, (_, i) => `word${i} `);
const finalText = words.join('');

// Attempt 1: a few words, then the connection resets in the middle of the stream.
const attempt1 = chatTranscript([
  { text: 'Let me ' },
  { text: 'check ' },
  { text: 'the ord' },
  { text: 'er now.' },
]);
const attempt2 = chatTranscript(words.map((text) => ({ text })));

/** A transcript's SSE events, one byte slice each. */
const eventsOf = (t: ReturnType<typeof chatTranscript>) =>
  t.marks.map((mark, i) => t.body.subarray(i === 0 ? 0 : (t.marks[i - 1]?.end ?? 0), mark.end));

/** The loopback provider: counts requests, streams an event every `delayMs`, resets the first stream. */
interface Provider {
  url: string;
  requests: number;
  /** When the provider last wrote an event (performance.now()). */
  lastWriteAt: number;
  close(): Promise<void>;
}

async function startProvider(delayMs: number): Promise<Provider> {
  const sockets = new Set<Socket>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });
  const provider: Provider = { url: '', requests: 0, lastWriteAt: 0, close: async () => {} };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      const n = provider.requests++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // The first request gets attempt 1 up to "the ord" and is reset; later ones the whole attempt 2.
      const events = n === 0 ? eventsOf(attempt1).slice(0, 4) : eventsOf(attempt2);
      for (const event of events) {
        if (res.destroyed) return;
        res.write(event);
        provider.lastWriteAt = performance.now();
        await sleep(delayMs);
      }
      if (n === 0) res.socket?.destroy();
      else res.end();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  provider.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`;
  provider.close = () =>
    new Promise<void>((resolve) => {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return provider;
}

/** A turn server process and the JSON lines it printed. */
interface TurnServerProcess {
  name: string;
  url: string;
  lines: Record<string, unknown>[];
  child: ChildProcess;
  exited: Promise<void>;
}

/** Starts test/support/turnServerProcess.ts and resolves once it listens. */
function startTurnServer(name: string, env: Record<string, string>): Promise<TurnServerProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'test/support/turnServerProcess.ts')],
    {
      cwd: root,
      env: { ...process.env, ...env, NAME: name },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const lines: Record<string, unknown>[] = [];
  let stderr = '';
  let partial = '';
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout.on('data', (chunk: Buffer) => {
      const parts = (partial + chunk.toString()).split('\n');
      partial = parts.pop() ?? '';
      for (const part of parts) {
        if (!part.startsWith('{')) continue;
        const line = JSON.parse(part) as Record<string, unknown>;
        lines.push(line);
        if (typeof line.listening === 'number')
          resolve({ name, url: `http://127.0.0.1:${line.listening}`, lines, child, exited });
      }
    });
    child.once('error', reject);
    void exited.then(() => reject(new Error(`turn server ${name} exited before it listened: ${stderr}`)));
  });
}

/** What one connection of the client carried: where it went, its Last-Event-ID, and the event ids it brought. */
interface Connection {
  url: string;
  lastEventId: string | null;
  ids: string[];
  /** When the request was made (performance.now()). */
  openedAt: number;
}

/** A fetch that records, per connection, the `id:` lines of the response as they arrive. */
function recordingFetch(connections: Connection[]): typeof fetch {
  return async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const lastEventId = new Headers(init?.headers).get('last-event-id');
    const record: Connection = { url, lastEventId, ids: [], openedAt: performance.now() };
    connections.push(record);
    const response = await fetch(input, init);
    if (response.body === null) return response;
    const decoder = new TextDecoder();
    let partial = '';
    const tap = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const parts = (partial + decoder.decode(chunk, { stream: true })).split('\n');
        partial = parts.pop() ?? '';
        for (const line of parts) if (line.startsWith('id: ')) record.ids.push(line.slice(4));
        controller.enqueue(chunk);
      },
    });
    return new Response(response.body.pipeThrough(tap), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

describe.skipIf(redisTests.skip)(
  'a turn resumed on another server process (Redis turn log)',
  { timeout: 60_000 },
  () => {
    let redis: RedisServer;
    let admin: Redis;
    let provider: Provider | undefined;
    const processes: TurnServerProcess[] = [];

    beforeAll(async () => {
      redis = await startRedisServer({ persistence: 'none' });
      admin = redis.client();
    });
    afterAll(async () => {
      await redis?.stop();
    });
    expectNoLeftoverHandles(async () => {
      for (const p of processes) p.child.kill('SIGKILL');
      await Promise.all(processes.splice(0).map((p) => p.exited));
      await provider?.close();
      provider = undefined;
    });

    it('reads the final attempt once, with no repeated or missing event, and the turn runs once', async () => {
      provider = await startProvider(25);
      const env = { REDIS_PORT: String(redis.port), PROVIDER_URL: provider.url };
      const [a, b] = await Promise.all([startTurnServer('A', env), startTurnServer('B', env)]);
      processes.push(a, b);

      const turnId = 'turn-resume-1';
      const cutAfter = 10;
      const connections: Connection[] = [];
      let made = 0;
      // Each connection goes to the other process: A first (which drops it after 10 messages), then B.
      const request = () =>
        made++ % 2 === 0 ? `${a.url}/turns/${turnId}?cutAfter=${cutAfter}` : `${b.url}/turns/${turnId}`;
      const events = await lastValueFrom(
        fromTurnSSE<TurnEvent>(request, {
          reconnect: { count: 3, delay: 100 },
          fetch: recordingFetch(connections),
        }).pipe(toArray()),
      );

      // What the user reads: the final attempt's text, once.
      const turn = await lastValueFrom(from(events).pipe(accumulateTurn()));
      expect(turn.text).toBe(finalText);
      expect(turn.attempt).toBe(2);
      expect(turn.finish?.reason).toBe('stop');
      expect(events.filter((e) => e.type === 'reset')).toHaveLength(1);

      // Two connections: A, cut after its 10th message, then B, from the Last-Event-ID of that message.
      expect(connections.map((c) => [c.url.startsWith(a.url) ? 'A' : 'B', c.lastEventId])).toEqual([
        ['A', null],
        ['B', `${turnId}:${cutAfter - 1}`],
      ]);
      expect(connections[0]?.ids).toHaveLength(cutAfter);
      // Every event once, in order: ids strictly increasing by 1 across both connections, up to the end.
      const ids = connections.flatMap((c) => c.ids);
      expect(ids).toEqual(ids.map((_, seq) => `${turnId}:${seq}`));
      expect(ids).toHaveLength(events.length + 1);

      // The turn ran once, in A: two provider requests (one per attempt), none per reconnect.
      expect(provider.requests).toBe(2);
      expect(a.lines.filter((l) => l.ran === turnId)).toHaveLength(1);
      expect(b.lines.filter((l) => 'ran' in l)).toEqual([]);
      expect(a.lines.filter((l) => 'cut' in l)).toEqual([
        { name: 'A', cut: turnId, after: `${turnId}:${cutAfter - 1}` },
      ]);
      expect(b.lines.filter((l) => 'served' in l)).toEqual([
        { name: 'B', served: turnId, lastEventId: `${turnId}:${cutAfter - 1}` },
      ]);
      // The turn was still running when the client moved to B: B followed it live to its end.
      expect(connections[1]?.openedAt).toBeLessThan(provider.lastWriteAt);
      expect(await admin.get(`cleanturn:turn:{${turnId}}:owner`)).toMatch(/^ended:/);
    });
  },
);
