/**
 * What every operation of one Redis turn log shares: its client and settings, the tokens of its claims, the keys of
 * a turn, and how a command is sent with a time limit (and a write sent again).
 *
 * @module
 */

import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { isReplyError, runRedisScript } from '../../internal/redisScripts.js';
import { withinTime } from '../../internal/wait.js';
import { type TurnLogOperation, turnLogTimeoutError } from '../errors.js';
import { checkTurnId } from '../turnLog.js';

/** One log's client, its checked settings (see `RedisTurnLogOptions`) and the tokens of its claims. */
export interface TurnLogContext {
  /** The shared client: every command but a reader's blocking reads goes through it. */
  readonly client: Redis | Cluster;
  /** The prefix of the log's keys. */
  readonly prefix: string;
  /** About how many entries are kept per turn. */
  readonly maxEntries: number;
  /** How long a turn is kept after its claim and after each entry, in milliseconds. */
  readonly ttlMs: number;
  /** How long one blocking read lasts, in milliseconds. */
  readonly blockMs: number;
  /** How long an operation waits for Redis, in milliseconds (`commandTimeoutMs`). */
  readonly timeoutMs: number;
  /** How long a runner's lease lasts unless renewed, in milliseconds. */
  readonly leaseMs: number;
  /** How often a runner checks its stop mark, in milliseconds. */
  readonly stopCheckMs: number;
  /** The token of each turn this log claimed and has not ended: its appends carry it. */
  readonly tokens: Map<string, string>;
}

/** The keys of one turn: the turn id is the hash tag, so both share a Redis Cluster slot. */
export interface TurnKeys {
  stream: string;
  owner: string;
  /** The stop mark: the reason of a stop asked for while the turn runs. */
  stop: string;
  /** The runner's lease: its token, for `leaseMs`. */
  lease: string;
  /** `<claimedAt>:<takeovers>`. */
  meta: string;
}

/** How many times a claim or an append is sent, in all, while Redis gives no answer within the timeout. */
const WRITE_TRIES = 4;

/** The keys of a turn; the turn id is checked first (a lone surrogate has no URI encoding). */
export function keysOf(prefix: string, turnId: string): TurnKeys {
  checkTurnId(turnId);
  const stream = `${prefix}:{${encodeURIComponent(turnId)}}`;
  return {
    stream,
    owner: `${stream}:owner`,
    stop: `${stream}:stop`,
    lease: `${stream}:lease`,
    meta: `${stream}:meta`,
  };
}

/** Runs a script of the log on a turn's stream, owner, lease and meta keys (its `KEYS[1]` to `KEYS[4]`). */
export function runTurnScript(
  client: Redis | Cluster,
  script: string,
  keys: TurnKeys,
  args: (string | number)[],
): Promise<unknown> {
  return runRedisScript(client, script, [keys.stream, keys.owner, keys.lease, keys.meta], args);
}

/**
 * Runs a script of the log on a turn's keys (as {@link runTurnScript}) by its SHA-1 (`EVALSHA`), sent whole (`EVAL`)
 * only when the server's script cache lacks it (`NOSCRIPT`): the script's text is not sent with every command. For
 * the scripts whose order behind later commands does not matter, and only those: the sent-again `EVAL` runs after
 * whatever was sent meanwhile. The page read reads; an append that runs late is a no-op or refused (the same entry
 * at the same id answers ok, another entry or an end there refuses it, another token's turn is not its own), and its
 * runner sends the turn's next entry only after its answer.
 */
export async function runCachedTurnScript(
  client: Redis | Cluster,
  script: string,
  keys: TurnKeys,
  args: (string | number)[],
): Promise<unknown> {
  const keyList = [keys.stream, keys.owner, keys.lease, keys.meta];
  try {
    return await client.evalsha(shaOf(script), keyList.length, ...keyList, ...args);
  } catch (error) {
    if (!isReplyError(error) || !error.message.startsWith('NOSCRIPT')) throw error;
    return runRedisScript(client, script, keyList, args);
  }
}

/** The SHA-1 of each script sent by it, as Redis caches scripts. */
const shas = new Map<string, string>();

function shaOf(script: string): string {
  let sha = shas.get(script);
  if (sha === undefined) {
    sha = createHash('sha1').update(script).digest('hex');
    shas.set(script, sha);
  }
  return sha;
}

/**
 * Runs `command`, or fails with a `TransportError` `turn-log-timeout` once `timeoutMs` has passed, or (silently, for a
 * reader that went away) once `signal` aborts, even after the answer; the timer is always cleared.
 */
export function within<T>(
  operation: TurnLogOperation,
  timeoutMs: number,
  command: () => Promise<T>,
  signal?: AbortSignal,
  tries = 1,
): Promise<T> {
  // A reader that went away meanwhile goes no further (it opens no connection).
  return withinTime(timeoutMs, () => turnLogTimeoutError(operation, timeoutMs, tries), command, signal);
}

/**
 * Sends a write (idempotent under its token) until one send gets Redis's answer: each waits `timeoutMs`, at most
 * {@link WRITE_TRIES} sends. Redis runs a connection's commands in order, so the answer of a later send also tells
 * what became of every earlier one. Fails with the last send's error: an answer of Redis that is an error, or
 * what left the outcome unknown (a `turn-log-timeout`, a connection that closed).
 */
export async function write(
  timeoutMs: number,
  operation: 'claim' | 'append' | 'takeOver',
  command: () => Promise<unknown>,
): Promise<unknown> {
  for (let tries = 1; ; tries++) {
    try {
      return await within(operation, timeoutMs, command, undefined, tries);
    } catch (error) {
      if (isReplyError(error) || tries >= WRITE_TRIES) throw error;
    }
  }
}
