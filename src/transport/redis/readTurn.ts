/**
 * The readers of the Redis turn log: what a turn holds, read page by page on the shared client, then what comes,
 * followed with blocking reads on a connection of the reader's own.
 *
 * @module
 */

import type { Cluster, Redis } from 'ioredis';
import { Observable, type Subscriber } from 'rxjs';
import { checkReadAfter } from '../../internal/turnLogRules.js';
import { turnNotFoundError } from '../errors.js';
import type { TurnLogEntry } from '../turnLog.js';
import { decode, entriesOf, idOf, PAGE, type StreamEntry, seqOf } from './streamEntries.js';
import { keysOf, runCachedTurnScript, type TurnKeys, type TurnLogContext, within } from './turnLogContext.js';
import { type PageAnswer, scripts } from './turnLogScripts.js';

/**
 * A turn's entries after `after`, then each new one up to its end (see `TurnLog.read`). A bad turn id or `after`
 * errors the reader; unsubscribing ends the pending command's wait and closes the reader's connection.
 */
export function readTurn<E>(
  context: TurnLogContext,
  turnId: string,
  after: number,
): Observable<TurnLogEntry<E>> {
  return new Observable<TurnLogEntry<E>>((subscriber) => {
    let keys: TurnKeys;
    try {
      keys = keysOf(context.prefix, turnId);
      checkReadAfter(after, 'redisTurnLog');
    } catch (error) {
      subscriber.error(error);
      return;
    }
    const reader = new TurnReader<E>(context, turnId, keys, after, subscriber);
    reader.follow().then(
      () => subscriber.complete(),
      (error: unknown) => subscriber.error(error),
    );
    return () => reader.close();
  });
}

/** What a page of the shared client's read leaves the reader to do: it is done, reads the next page, or waits. */
type PageStep = 'done' | 'more' | 'wait';

/** One reader of one turn: the seq it needs next, and its own connection once it has to wait. */
class TurnReader<E> {
  /** Aborted when the reader goes away: the pending command's wait ends and its timer is cleared. */
  private readonly stop = new AbortController();
  /** The reader's own connection for blocking reads, opened once it has to wait. */
  private connection: Redis | Cluster | undefined;
  /** The seq of the next entry the reader must get. */
  private next: number;

  /** A reader of `turnId` (at `keys`) after seq `after`, that emits to `subscriber`. */
  constructor(
    private readonly context: TurnLogContext,
    private readonly turnId: string,
    private readonly keys: TurnKeys,
    after: number,
    private readonly subscriber: Subscriber<TurnLogEntry<E>>,
  ) {
    this.next = after + 1;
  }

  /** Reads the turn up to its end: resolves once the reader is done, rejects with what ended the read. */
  async follow(): Promise<void> {
    for (;;) {
      // What is there now (and whether the log still knows the turn), one page at a time.
      const step = this.takePage(await this.readPage());
      if (step === 'done') return;
      if (step === 'more') continue;
      // Then each new entry as it comes, until a quiet round sends the reader back to the check above.
      this.connection ??= duplicate(this.context.client);
      const reader = this.connection;
      for (;;) {
        const arrived = entriesOf(await this.readNew(reader));
        if (arrived.length === 0) break;
        if (this.deliver(arrived)) return;
      }
    }
  }

  /** Ends the pending command's wait and closes the reader's connection. */
  close(): void {
    this.stop.abort();
    this.connection?.disconnect();
    this.connection = undefined;
  }

  /** Reads one page from the next entry on, with the turn's state and its last entry, on the shared client. */
  private readPage(): Promise<PageAnswer> {
    const { context, keys } = this;
    return within(
      'read',
      context.timeoutMs,
      () => runCachedTurnScript(context.client, scripts.page, keys, [idOf(this.next), PAGE]),
      this.stop.signal,
    ) as Promise<PageAnswer>;
  }

  /** Emits the entries of a page, and says what is left to do. */
  private takePage(page: PageAnswer): PageStep {
    const { turnId } = this;
    if (page === null) throw turnNotFoundError(turnId);
    const [state, entries, [last]] = page;
    // Past the last entry: the end again for an ended turn; a running turn never had what the reader names.
    const lastSeq = last === undefined ? -1 : seqOf(turnId, last[0]);
    if (this.next - 1 > lastSeq) {
      if (state !== 'ended' || last === undefined) throw turnNotFoundError(turnId, 'ahead');
      this.subscriber.next(decode<E>(turnId, lastSeq, last[1]));
      return 'done';
    }
    if (this.deliver(entries)) return 'done';
    if (entries.length === PAGE) return 'more';
    // The turn has ended and the reader already had its end.
    if (state === 'ended') return 'done';
    return 'wait';
  }

  /** Waits on `reader` (`XREAD BLOCK`) for the entries after the last one the reader got: none after `blockMs`. */
  private readNew(reader: Redis | Cluster): Promise<unknown> {
    const { blockMs, timeoutMs } = this.context;
    return within(
      'read',
      blockMs + timeoutMs,
      () => reader.xread('COUNT', PAGE, 'BLOCK', blockMs, 'STREAMS', this.keys.stream, idOf(this.next - 1)),
      this.stop.signal,
    );
  }

  /** Emits entries in order; true once the end went out. A gap means Redis trimmed what the reader needs. */
  private deliver(entries: StreamEntry[]): boolean {
    for (const [id, fields] of entries) {
      if (seqOf(this.turnId, id) !== this.next) throw turnNotFoundError(this.turnId, 'trimmed');
      const entry = decode<E>(this.turnId, this.next, fields);
      this.next++;
      this.subscriber.next(entry);
      if ('end' in entry || this.subscriber.closed) return true;
    }
    return false;
  }
}

/** A reader's connection: a duplicate of the shared client, whose failures reach the reader through its commands. */
function duplicate(client: Redis | Cluster): Redis | Cluster {
  const connection = client.isCluster ? (client as Cluster).duplicate() : (client as Redis).duplicate();
  connection.on('error', () => {});
  return connection;
}
