import { CleanturnError, describeError, isRetryable } from 'cleanturn';
import { catchError, config, defer, map, mergeAll, type Observable, of, type Subscription } from 'rxjs';
import type { TurnFailure, TurnLog, TurnLogEntry } from './turnLog.js';

/**
 * One server-sent event of a served turn, in the shape NestJS's `@Sse()` handlers return (`MessageEvent`): `id`
 * is `<turnId>:<seq>`, `type` says what `data` (JSON) holds: an event of the clean turn (`turn`), the turn's end
 * (`end`, `{ "outcome": "completed" }`), or why it failed (`failed`, a {@link TurnFailure}: the turn failed, or the
 * log cannot give it, for good). Not `error`, which a browser's `EventSource` keeps for its own connection errors.
 */
export interface TurnMessage {
  id: string;
  type: 'turn' | 'end' | 'failed';
  data: string;
}

/** Options of {@link turnServer}. */
export interface TurnServerOptions<E> {
  /** Where running turns keep their events for reconnecting clients: `memoryTurnLog()` or `redisTurnLog()`. */
  log: TurnLog<E>;
  /**
   * Called when the log refuses an entry of a running turn (its store is down): the turn is stopped, its end is
   * written as failed if the log takes it (its readers end), and the server forgets the run. Default: RxJS's `config.onUnhandledError` if set, else `console.error`
   * (never a thrown error: a store that is down must not crash the server).
   */
  onLogError?: (error: unknown, turnId: string) => void;
}

/** What {@link TurnServer.serve} takes: the turn, and where the client is in it. */
export interface ServeTurnOptions<E> {
  /** The turn's id, stable across reconnects (and across server instances that share the log). */
  turnId: string;
  /**
   * Runs the turn, e.g. `streamTurn(…)` then `executeTools(…)`: called once per turn id across every server
   * sharing the log, never per reconnect. The run is the server's, not the connection's: it goes on when the
   * client goes away, so that a client that comes back reads the rest.
   */
  run: () => Observable<E>;
  /** The request's `Last-Event-ID` header, when the client reconnects: it reads the events after it. */
  lastEventId?: string | null;
}

/** Serves turns as server-sent events that a reconnecting client resumes. */
export interface TurnServer<E> {
  /**
   * The turn's messages for one client connection: everything after `lastEventId` (or from the start), then each
   * new event, up to the end. The first connection of a turn id starts it (`run`); every other connection,
   * here or on another server sharing the log, only reads. Unsubscribing (the client went away) stops the
   * reading only.
   */
  serve(options: ServeTurnOptions<E>): Observable<TurnMessage>;
  /** How many turns this server runs now. */
  readonly running: number;
  /**
   * Stops the turns this server runs (a shutdown); each one's log ends as failed (`the server closed`, retryable),
   * so that its readers end too.
   */
  close(): Promise<void>;
}

/**
 * A server of turns over SSE whose clients may lose their connection: each turn runs once and its clean events go
 * to a {@link TurnLog}; each connection reads the log after the client's `Last-Event-ID`, so a client that
 * reconnects (to this instance or, with a shared log, another) reads the rest of the same turn, without a reset
 * and without a second provider request. Resets and repeats of the turn itself are events like the others.
 *
 * With NestJS, an `@Sse()` handler returns `turns.serve(…)` as it is; with Node's `http`, write each message with
 * {@link toSSE}. On the client, `fromTurnSSE` reconnects with `Last-Event-ID`.
 *
 * ## Example
 * ```ts
 * import { createServer } from 'node:http';
 * import { memoryTurnLog, streamTurn, toSSE, turnServer } from 'cleanturn/transport';
 *
 * const turns = turnServer({ log: memoryTurnLog() });
 * createServer((req, res) => {
 *   const turnId = new URL(req.url ?? '/', 'http://x').searchParams.get('turn') ?? 'turn-42';
 *   res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
 *   const subscription = turns
 *     .serve({ turnId, lastEventId: req.headers['last-event-id'] as string | undefined, run: () => streamTurn(options(turnId)) })
 *     .subscribe({ next: (message) => res.write(toSSE(message)), complete: () => res.end(), error: () => res.destroy() });
 *   res.on('close', () => subscription.unsubscribe());
 * }).listen(3000);
 * ```
 *
 * @param options The log.
 * @returns The server.
 */
export function turnServer<E>(options: TurnServerOptions<E>): TurnServer<E> {
  const { log } = options;
  const runs = new Map<string, Run>();
  // A store that is down must not take the server down with it: the default reports, and does not throw; nor
  // does a callback that throws.
  const logError = (error: unknown, turnId: string): void => {
    try {
      if (options.onLogError !== undefined) {
        options.onLogError(error, turnId);
        return;
      }
    } catch (thrown) {
      error = thrown;
    }
    if (config.onUnhandledError) config.onUnhandledError(error);
    else console.error(`cleanturn: the turn log refused an entry of turn ${turnId}:`, error);
  };

  const start = (turnId: string, run: () => Observable<E>): void => {
    const record: Run = {
      seq: 0,
      ended: false,
      failed: false,
      written: Promise.resolve(),
      source: undefined,
    };
    runs.set(turnId, record);
    const forget = () => {
      if (runs.get(turnId) === record) runs.delete(turnId);
    };
    // Entries are written one at a time, in order. After a refused one the run stops, its readers are told (if the
    // log takes that last entry), and the server forgets the run.
    const write = (entry: TurnLogEntry<E>): void => {
      if ('end' in entry) record.ended = true;
      record.written = record.written.then(async () => {
        if (record.failed) return;
        try {
          await log.append(turnId, entry);
        } catch (error) {
          record.failed = true;
          record.ended = true;
          record.source?.unsubscribe();
          logError(error, turnId);
          if (!('end' in entry)) {
            const end: TurnLogEntry<E> = { seq: entry.seq, end: 'failed', error: failureOf(error) };
            await log.append(turnId, end).catch(() => undefined);
          }
          forget();
        }
      });
      if ('end' in entry) void record.written.then(forget);
    };
    record.source = defer(run).subscribe({
      next: (event) => write({ seq: record.seq++, event }),
      error: (error: unknown) => write({ seq: record.seq++, end: 'failed', error: failureOf(error) }),
      complete: () => write({ seq: record.seq++, end: 'completed' }),
    });
  };

  return {
    serve({ turnId, run, lastEventId }) {
      // The last entry this connection delivered (or the client had): a failed message carries it as its id, so
      // that a client that reconnects anyway (a browser's EventSource does) reads on from there.
      let last = -1;
      return defer(async () => {
        const after = positionOf(lastEventId, turnId);
        last = after ?? -1;
        // Only a first connection may start the turn: a client that names the turn in its Last-Event-ID had it
        // once, and must never start it again.
        if (after === undefined && (await log.claim(turnId))) start(turnId, run);
        return log.read(turnId, after ?? -1);
      }).pipe(
        mergeAll(),
        map((entry) => {
          last = entry.seq;
          return messageOf(turnId, entry);
        }),
        catchError((error: unknown) => {
          // An error that may pass (a timeout of the log) drops the connection: the client reconnects from its
          // last id. A final one is told, as a message, instead of a broken connection it would reconnect to.
          if (isRetryable(error)) throw error;
          return of<TurnMessage>({
            id: `${turnId}:${last}`,
            type: 'failed',
            data: JSON.stringify(failureOf(error)),
          });
        }),
      );
    },
    get running() {
      return runs.size;
    },
    async close() {
      const closing = [...runs.entries()];
      const error: TurnFailure = {
        name: 'TurnServerClosedError',
        message: 'the server closed',
        retryable: true,
      };
      for (const [turnId, record] of closing) {
        if (record.ended) continue;
        // A run that ended already has its end on the way; the others stop, and their log ends as failed.
        record.source?.unsubscribe();
        record.ended = true;
        record.written = record.written.then(async () => {
          if (record.failed) return;
          try {
            await log.append(turnId, { seq: record.seq, end: 'failed', error });
          } catch (failure) {
            logError(failure, turnId);
          }
        });
      }
      await Promise.all(closing.map(([, record]) => record.written));
      for (const [turnId, record] of closing) if (runs.get(turnId) === record) runs.delete(turnId);
    },
  };
}

/** A turn this server runs: its next seq, and the chain of its entries being written. */
interface Run {
  seq: number;
  /** Its end was written, or is on the way. */
  ended: boolean;
  /** The log refused an entry: nothing more is written. */
  failed: boolean;
  /** Settles when every entry so far was written (or refused). */
  written: Promise<void>;
  source: Subscription | undefined;
}

/**
 * Writes a message as the text of one server-sent event (`id:`, `event:`, `data:` lines and a blank line), for a
 * server that writes the response itself.
 *
 * @param message A message of {@link TurnServer.serve}.
 * @returns The event's text.
 */
export function toSSE(message: TurnMessage): string {
  const data = message.data
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}\n`)
    .join('');
  return `id: ${message.id}\nevent: ${message.type}\n${data}\n`;
}

/**
 * The seq after which a client with this `Last-Event-ID` reads turn `turnId` (-1: from the start), or undefined
 * when the id does not name the turn: a first connection.
 */
function positionOf(lastEventId: string | null | undefined, turnId: string): number | undefined {
  if (typeof lastEventId !== 'string') return undefined;
  const colon = lastEventId.lastIndexOf(':');
  if (colon < 0 || lastEventId.slice(0, colon) !== turnId) return undefined;
  const seq = Number(lastEventId.slice(colon + 1));
  return Number.isInteger(seq) && seq >= 0 ? seq : -1;
}

function messageOf<E>(turnId: string, entry: TurnLogEntry<E>): TurnMessage {
  const id = `${turnId}:${entry.seq}`;
  if ('event' in entry) return { id, type: 'turn', data: JSON.stringify(entry.event) };
  if (entry.end === 'completed') return { id, type: 'end', data: '{"outcome":"completed"}' };
  return { id, type: 'failed', data: JSON.stringify(entry.error) };
}

/** What a client is told of an error that ended a turn. */
function failureOf(error: unknown): TurnFailure {
  const name = error instanceof Error ? error.name : 'Error';
  return { name, message: describeError(error), retryable: isRetryable(error) };
}

/**
 * A served turn failed on the server (or the server no longer has it): the client's stream errors with what the
 * server said. `retryable` is the server's answer.
 */
export class RemoteTurnError extends CleanturnError {
  /** The class name of the server's error (`RetriesExhaustedError`, `TurnNotFoundError`…). */
  readonly remoteName: string;

  constructor(failure: TurnFailure) {
    super(`the turn failed on the server: ${failure.message}`, { retryable: failure.retryable });
    this.remoteName = failure.name;
  }
}
