/**
 * How the Redis turn log lays its entries out in a Redis Stream, and reads them back: pure functions, no Redis.
 *
 * @module
 */
import type { TurnFailure, TurnLogEntry } from '../turnLog.js';

/** A stream entry as Redis answers it: its id and its fields (`['entry', json]`). */
export type StreamEntry = [id: string, fields: string[]];

/** The entries read in one command, at most. */
export const PAGE = 1_000;

/**
 * The stream entry id of a seq, `0-<seq + 1>`, computed exactly (past 2^53 a number would round: the id is what
 * Redis compares, as two integers).
 */
export function idOf(seq: number): string {
  return seq < Number.MAX_SAFE_INTEGER ? `0-${seq + 1}` : `0-${BigInt(seq) + 1n}`;
}

/**
 * The seq of a stream entry id `0-<seq + 1>`. Read as the two integers Redis compares (`ms-seq`), never as text:
 * an id of another shape is not an entry of this log.
 */
export function seqOf(turnId: string, id: string): number {
  const match = /^0-([1-9][0-9]*)$/.exec(id);
  const seq = match === null ? Number.NaN : Number(match[1]) - 1;
  if (!Number.isSafeInteger(seq))
    throw new TypeError(`redisTurnLog: stream entry ${id} of turn ${turnId} is not a turn log entry`);
  return seq;
}

/** The log entry of a stream entry's fields. */
export function decode<E>(turnId: string, seq: number, fields: string[]): TurnLogEntry<E> {
  const json = fields[fields.indexOf('entry') + 1];
  let body: { event?: E; end?: 'completed' | 'failed'; error?: TurnFailure } | undefined;
  try {
    body = typeof json === 'string' ? JSON.parse(json) : undefined;
  } catch {
    body = undefined;
  }
  if (typeof body !== 'object' || body === null)
    throw new TypeError(`redisTurnLog: entry ${seq} of turn ${turnId} is not a turn log entry`);
  if (body.end === 'completed') return { seq, end: 'completed' };
  if (body.end === 'failed') return { seq, end: 'failed', error: body.error as TurnFailure };
  return { seq, event: body.event as E };
}

/** The entries of an `XREAD` reply on one stream, in either reply shape (RESP2 arrays, or a RESP3 map). */
export function entriesOf(reply: unknown): StreamEntry[] {
  if (reply === null || reply === undefined) return [];
  if (Array.isArray(reply)) return (reply[0]?.[1] ?? []) as StreamEntry[];
  return (Object.values(reply as Record<string, StreamEntry[]>)[0] ?? []) as StreamEntry[];
}
