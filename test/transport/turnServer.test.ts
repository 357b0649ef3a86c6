import type { TurnEvent } from 'cleanturn';
import { UsageError } from 'cleanturn';
import { at, finish, reset, text } from 'cleanturn/testing';
import { fromSSE, fromTurnSSE, memoryTurnLog, TransportError, turnServer } from 'cleanturn/transport';
import { config, firstValueFrom, lastValueFrom, Subject, tap, throwError, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { startHttpServer, startTurnHttpServer } from '../support/turnHttpServer.js';

const events: TurnEvent[] = [
  at(1, text('Refunding the dam')),
  reset(2, 'connection reset'),
  at(2, text('Checking order ORD-7781. ')),
  at(2, text('The book arrived damaged, so I have started a full refund.')),
  at(2, finish()),
];

let cleanup: (() => Promise<void>)[] = [];
expectNoLeftoverHandles(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

/** Feeds the events to a running turn, one per macrotask, then completes it. */
function feed(source: Subject<TurnEvent>, all: readonly TurnEvent[]): void {
  let i = 0;
  const step = () => {
    if (source.closed) return;
    const event = all[i++];
    if (event === undefined) source.complete();
    else {
      source.next(event);
      setTimeout(step, 2);
    }
  };
  setTimeout(step, 2);
}

describe('turnServer + fromTurnSSE', () => {
  it('a client cut twice mid-turn reconnects with Last-Event-ID and reads each event once; the turn runs once', async () => {
    const turns = turnServer<TurnEvent>({ log: memoryTurnLog() });
    const server = await startTurnHttpServer(
      turns,
      () => {
        const source = new Subject<TurnEvent>();
        feed(source, events);
        return source;
      },
      (connection) => (connection < 2 ? 2 : undefined),
    );
    cleanup.push(server.close, () => turns.close());

    const received = await lastValueFrom(
      fromTurnSSE(() => `${server.url}/turns/turn-42`, { reconnect: { delay: 0 } }).pipe(toArray()),
    );
    expect(received).toEqual(events);
    expect(server.runs()).toBe(1);
    expect(server.requests.map((r) => r.lastEventId)).toEqual([undefined, 'turn-42:1', 'turn-42:3']);
    expect(turns.running).toBe(0);
  });

  it('a client that connects after the turn ended reads all of it; a second client does not run it again', async () => {
    const turns = turnServer<TurnEvent>({ log: memoryTurnLog() });
    const server = await startTurnHttpServer(turns, () => {
      const source = new Subject<TurnEvent>();
      feed(source, events);
      return source;
    });
    cleanup.push(server.close, () => turns.close());
    const read = () => lastValueFrom(fromTurnSSE(() => `${server.url}/turns/turn-7`).pipe(toArray()));
    expect(await read()).toEqual(events);
    expect(await read()).toEqual(events);
    expect(server.runs()).toBe(1);
  });

  it('a turn that fails on the server fails the client with TransportError remote-turn, as retryable as the server said', async () => {
    const turns = turnServer<TurnEvent>({ log: memoryTurnLog() });
    const server = await startTurnHttpServer(turns, () => {
      const source = new Subject<TurnEvent>();
      setTimeout(() => {
        source.next(events[0] as TurnEvent);
        source.error(Object.assign(new Error('invalid api key'), { retryable: false }));
      }, 2);
      return source;
    });
    cleanup.push(server.close, () => turns.close());
    const seen: TurnEvent[] = [];
    const error = await lastValueFrom(
      fromTurnSSE(() => `${server.url}/turns/turn-9`).pipe(tap((event) => seen.push(event))),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'remote-turn' });
    expect((error as TransportError).retryable).toBe(false);
    expect((error as TransportError).message).toContain('invalid api key');
    // What the turn streamed before it failed reached the client, once.
    expect(seen).toEqual([events[0]]);
  });

  // A position in the turn (4), or -1: what a browser's EventSource sends after a failed message that had no
  // entry before it.
  it.each(['gone:4', 'gone:-1'])(
    'a Last-Event-ID (%s) of a turn the log does not know gets a typed error, and runs nothing',
    async (lastEventId) => {
      const turns = turnServer<TurnEvent>({ log: memoryTurnLog() });
      const server = await startTurnHttpServer(turns, () => new Subject<TurnEvent>());
      cleanup.push(server.close, () => turns.close());
      const error = await firstValueFrom(
        fromTurnSSE(() => ({
          url: `${server.url}/turns/gone`,
          init: { headers: { 'last-event-id': lastEventId } },
        })),
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TransportError);
      expect(error).toMatchObject({ code: 'remote-turn' });
      expect((error as TransportError).remoteName).toBe('TransportError');
      expect((error as TransportError).remoteCode).toBe('turn-not-found');
      expect(server.runs()).toBe(0);
    },
  );

  it('close() stops the running turns, and their readers end with a retryable error', async () => {
    const turns = turnServer<TurnEvent>({ log: memoryTurnLog() });
    const source = new Subject<TurnEvent>();
    const server = await startTurnHttpServer(turns, () => source);
    cleanup.push(server.close);
    const reading = lastValueFrom(fromTurnSSE(() => `${server.url}/turns/turn-5`).pipe(toArray())).then(
      () => undefined,
      (e: unknown) => e,
    );
    while (turns.running === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    source.next(events[0] as TurnEvent);
    await turns.close();
    const error = await reading;
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({
      code: 'remote-turn',
      remoteName: 'TransportError',
      remoteCode: 'server-closed',
    });
    expect((error as TransportError).retryable).toBe(true);
    expect(source.observed).toBe(false);
  });

  it('gives up after the reconnects allowed in a row without a new event', async () => {
    const turns = turnServer<TurnEvent>({ log: memoryTurnLog() });
    // The first connection gets one event then is cut; every reconnect is cut before its first event.
    const server = await startTurnHttpServer(
      turns,
      () => {
        const source = new Subject<TurnEvent>();
        setTimeout(() => source.next(events[0] as TurnEvent), 2);
        return source;
      },
      (connection) => (connection === 0 ? 1 : 0),
    );
    cleanup.push(server.close, () => turns.close());
    const error = await lastValueFrom(
      fromTurnSSE(() => `${server.url}/turns/turn-3`, { reconnect: { count: 2, delay: 5 } }),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'connection' });
    expect(server.requests.map((r) => r.lastEventId)).toEqual([undefined, 'turn-3:0', 'turn-3:0']);
  });
});

describe('turnServer: what a client is told, whatever goes wrong', () => {
  it('an error of the log that is final reaches the client as a typed failed message, with the last id it had', async () => {
    const memory = memoryTurnLog<TurnEvent>();
    const gone = Object.assign(new Error('the log is gone'), { retryable: false });
    const broken = { ...memory, read: () => throwError(() => gone) };
    const turns = turnServer<TurnEvent>({ log: broken });
    const messages = await lastValueFrom(
      turns.serve({ turnId: 't', lastEventId: 't:3', run: () => new Subject<TurnEvent>() }).pipe(toArray()),
    );
    expect(messages).toEqual([
      {
        id: 't:3',
        type: 'failed',
        data: JSON.stringify({ name: 'Error', message: 'the log is gone', retryable: false }),
      },
    ]);
    await turns.close();
  });

  it('an error of the log that may pass drops the connection, for the client to reconnect from its last id', async () => {
    const memory = memoryTurnLog<TurnEvent>();
    const blip = new Error('the log timed out');
    const broken = { ...memory, read: () => throwError(() => blip) };
    const turns = turnServer<TurnEvent>({ log: broken });
    const error = await lastValueFrom(turns.serve({ turnId: 't', run: () => new Subject<TurnEvent>() })).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBe(blip);
    await turns.close();
  });

  it('a log that refuses an entry stops the run, ends the turn as failed for its readers, and forgets the run', async () => {
    const memory = memoryTurnLog<TurnEvent>();
    let appends = 0;
    const reported: unknown[] = [];
    const log = {
      ...memory,
      append: async (turnId: string, entry: Parameters<typeof memory.append>[1]) => {
        if (++appends === 2) throw new Error('the disk is full');
        return memory.append(turnId, entry);
      },
    };
    const turns = turnServer<TurnEvent>({ log, onLogError: (error) => reported.push(error) });
    const source = new Subject<TurnEvent>();
    const reading = lastValueFrom(turns.serve({ turnId: 't', run: () => source }).pipe(toArray()));
    while (turns.running === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    source.next(events[0] as TurnEvent);
    source.next(events[2] as TurnEvent);
    const messages = await reading;
    expect(messages.map((m) => m.type)).toEqual(['turn', 'failed']);
    expect(JSON.parse(messages[1]?.data ?? '{}')).toMatchObject({
      message: 'the disk is full',
      retryable: true,
    });
    expect(reported).toHaveLength(1);
    // The run is forgotten once its failed end is written, just after its readers have it.
    for (let i = 0; i < 100 && turns.running !== 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(turns.running).toBe(0);
    expect(source.observed).toBe(false);
  });

  it('an onLogError that throws goes to RxJS onUnhandledError, and rejects nothing', async () => {
    const memory = memoryTurnLog<TurnEvent>();
    const log = { ...memory, append: async () => Promise.reject(new Error('down')) };
    const unhandled: unknown[] = [];
    const previous = config.onUnhandledError;
    config.onUnhandledError = (error) => unhandled.push(error);
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      const turns = turnServer<TurnEvent>({
        log,
        onLogError: () => {
          throw new Error('callback bug');
        },
      });
      const source = new Subject<TurnEvent>();
      const subscription = turns.serve({ turnId: 't', run: () => source }).subscribe({ error: () => {} });
      while (turns.running === 0 && unhandled.length === 0)
        await new Promise((resolve) => setTimeout(resolve, 5));
      source.next(events[0] as TurnEvent);
      await new Promise((resolve) => setTimeout(resolve, 30));
      await turns.close();
      subscription.unsubscribe();
      expect(unhandled.map(String)).toContain('Error: callback bug');
      expect(rejections).toEqual([]);
    } finally {
      config.onUnhandledError = previous;
      process.off('unhandledRejection', onRejection);
    }
  });

  it('close() waits for an entry being written, and never writes a second end', async () => {
    const memory = memoryTurnLog<TurnEvent>();
    const written: string[] = [];
    let slow = Promise.resolve();
    const log = {
      ...memory,
      append: async (turnId: string, entry: Parameters<typeof memory.append>[1]) => {
        // Each append takes a while: one is still being written when close() is called.
        slow = slow.then(() => new Promise((resolve) => setTimeout(resolve, 20)));
        await slow;
        written.push('event' in entry ? `event ${entry.seq}` : `end ${entry.seq} ${entry.end}`);
        return memory.append(turnId, entry);
      },
    };
    const turns = turnServer<TurnEvent>({ log, onLogError: (error) => written.push(`log error ${error}`) });
    const source = new Subject<TurnEvent>();
    const reading = lastValueFrom(turns.serve({ turnId: 't', run: () => source }).pipe(toArray()));
    while (turns.running === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    source.next(events[0] as TurnEvent);
    source.complete();
    await turns.close();
    await reading;
    expect(written).toEqual(['event 0', 'end 1 completed']);
  });
});

describe('fromSSE({ reconnect })', () => {
  it('does not reconnect a stream whose messages carry no id: the server could only start over', async () => {
    let connections = 0;
    const server = await startHttpServer((_req, res) => {
      connections++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n', () => res.destroy());
    });
    cleanup.push(server.close);
    const url = server.url;
    const error = await lastValueFrom(fromSSE(() => url, { reconnect: { count: 3, delay: 0 } })).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'connection' });
    expect(connections).toBe(1);
  });

  it('a cut after the last message completes the stream: nothing is missing', async () => {
    const server = await startHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: 1\nevent: end\ndata: {}\n\n', () => res.destroy());
    });
    cleanup.push(server.close);
    const url = server.url;
    const messages = await lastValueFrom(
      fromSSE(() => url, { reconnect: { count: 3, delay: 0, isLast: (m) => m.event === 'end' } }).pipe(
        toArray(),
      ),
    );
    expect(messages).toEqual([{ id: '1', event: 'end', data: '{}' }]);
  });

  it('refuses a reconnect count or delay that is not a count or a duration', () => {
    expect(() => fromSSE(() => 'http://127.0.0.1/', { reconnect: { count: -1 } })).toThrow(UsageError);
    expect(() => fromSSE(() => 'http://127.0.0.1/', { reconnect: { count: 1, delay: Number.NaN } })).toThrow(
      UsageError,
    );
  });
});
