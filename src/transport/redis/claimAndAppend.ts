/**
 * The runner's writes of the Redis turn log: the claim of a turn, and the append of its entries under the claim's
 * token.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { UsageError } from '../../errors.js';
import { checkInteger } from '../../internal/options.js';
import { isReplyError } from '../../internal/redisScripts.js';
import { entryAfterEndError } from '../../internal/turnLogRules.js';
import { turnNotFoundError, turnTakenOverError } from '../errors.js';
import type { TurnLogEntry } from '../turnLog.js';
import { idOf } from './streamEntries.js';
import { keysOf, runCachedTurnScript, runTurnScript, type TurnLogContext, write } from './turnLogContext.js';
import { type AppendAnswer, scripts } from './turnLogScripts.js';

/**
 * Claims a turn under a new token (see `TurnLog.claim`): true, and the token kept for its appends, for the first
 * claim. A claim given up on with its outcome unknown is undone by a release sent behind it.
 */
export async function claimTurn(context: TurnLogContext, turnId: string): Promise<boolean> {
  const { client, ttlMs, leaseMs, timeoutMs, tokens } = context;
  const keys = keysOf(context.prefix, turnId);
  const token = randomUUID();
  let answer: unknown;
  try {
    answer = await write(timeoutMs, 'claim', () =>
      runTurnScript(client, scripts.owner, keys, ['claim', token, ttlMs, leaseMs, Date.now()]),
    );
  } catch (error) {
    // Given up with the outcome unknown: a send may still reach Redis, and claim a turn nobody runs. A release
    // sent behind it, on the same connection, runs after it and undoes it.
    if (!isReplyError(error))
      runTurnScript(client, scripts.owner, keys, ['release', token, ttlMs, leaseMs, 0]).catch(() => {});
    throw error;
  }
  if (answer !== 1) return false;
  tokens.set(turnId, token);
  return true;
}

/**
 * Appends the entry of a claimed turn under this log's token (see `TurnLog.append`); the token is dropped once the
 * turn is no longer this log's to write, and after its end.
 */
export async function appendEntry<E>(
  context: TurnLogContext,
  turnId: string,
  entry: TurnLogEntry<E>,
): Promise<void> {
  const { client, maxEntries, ttlMs, timeoutMs, tokens } = context;
  const { seq, ...rest } = entry;
  checkInteger('redisTurnLog', 'entry.seq', seq, 0);
  const keys = keysOf(context.prefix, turnId);
  const json = JSON.stringify(rest);
  const end = 'end' in entry;
  const token = tokens.get(turnId) ?? '';
  let status: string;
  let detail: string | undefined;
  try {
    [status, detail] = (await write(timeoutMs, 'append', () =>
      runCachedTurnScript(client, scripts.append, keys, [
        idOf(seq),
        json,
        maxEntries,
        ttlMs,
        end ? '1' : '0',
        token,
        idOf(seq + 1),
      ]),
    )) as AppendAnswer;
  } finally {
    // After its end (written or not), the turn takes nothing more from this log.
    if (end) tokens.delete(turnId);
  }
  // A turn this log no longer runs: the log forgot it, it ended, or it is another claimer's.
  if (status === 'unknown' || status === 'ended' || status === 'not-owner') tokens.delete(turnId);
  const refusal = appendRefusal(turnId, seq, status, detail);
  if (refusal !== undefined) throw refusal;
}

/** The error of an append that the append script did not answer `ok`, or undefined for `ok`. */
function appendRefusal(
  turnId: string,
  seq: number,
  status: string,
  detail: string | undefined,
): Error | undefined {
  if (status === 'unknown') return turnNotFoundError(turnId);
  if (status === 'ended') return entryAfterEndError('redisTurnLog', turnId);
  if (status === 'not-owner') return turnTakenOverError(turnId);
  if (status !== 'ok')
    return new UsageError(
      'redisTurnLog',
      'entry',
      `${seq} of turn ${turnId} is refused: ${detail ?? status}`,
    );
  return undefined;
}
