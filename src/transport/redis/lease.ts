/**
 * The runner's lease on a turn in the Redis turn log: its renewal while the turn runs, and the takeover of a turn
 * whose lease lapsed.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { Takeover } from '../turnLog.js';
import { seqOf } from './streamEntries.js';
import { keysOf, runTurnScript, type TurnLogContext, within, write } from './turnLogContext.js';
import { scripts, type TakeOverAnswer } from './turnLogScripts.js';

/**
 * Extends this log's lease on a turn (see `TurnLog.renew`): false, and the token dropped, once the turn is no longer
 * this log's; false at once for a turn this log holds no token of.
 */
export async function renewLease(context: TurnLogContext, turnId: string): Promise<boolean> {
  const { client, leaseMs, ttlMs, timeoutMs, tokens } = context;
  const keys = keysOf(context.prefix, turnId);
  const token = tokens.get(turnId);
  if (token === undefined) return false;
  const answer = await within('renew', timeoutMs, () =>
    runTurnScript(client, scripts.renew, keys, [token, leaseMs, ttlMs]),
  );
  if (answer !== 1) tokens.delete(turnId);
  return answer === 1;
}

/**
 * Takes over a turn whose lease lapsed under a new token (see `TurnLog.takeOver`), sent again as a claim is:
 * undefined when there is nothing to take over.
 */
export async function takeOverTurn(context: TurnLogContext, turnId: string): Promise<Takeover | undefined> {
  const { client, leaseMs, ttlMs, timeoutMs, tokens } = context;
  const keys = keysOf(context.prefix, turnId);
  const token = randomUUID();
  const answer = (await write(timeoutMs, 'takeOver', () =>
    runTurnScript(client, scripts.takeOver, keys, [token, leaseMs, ttlMs]),
  )) as TakeOverAnswer;
  if (answer === null) return undefined;
  const [count, claimedAt, lastId] = answer;
  tokens.set(turnId, token);
  return { count, claimedAt: Number(claimedAt), next: lastId === '' ? 0 : seqOf(turnId, lastId) + 1 };
}
