// What the Redis ledger and the Redis turn log share: how their Lua scripts are sent, and a time limit on every
// command whatever the client's own retry settings.
import type { Cluster, Redis } from 'ioredis';
import { errorName, isInstance } from './describeError.js';

/**
 * Runs the Lua `script` with `keys` and `args`, sent whole with `EVAL` every time (Redis keeps it compiled in its
 * script cache, by its SHA-1), so that scripts run in the order they were sent on a connection, as every other
 * command does. An `EVALSHA` that misses the cache (after a restart or a `SCRIPT FLUSH`, or while the server
 * holds other scripts but not this one) is answered `NOSCRIPT` and has to be sent again, and then runs after the
 * commands sent behind it, which ran meanwhile. Writes sent again after a timeout, and a claim undone by a command
 * sent behind it, count on that order.
 */
export function runRedisScript(
  client: Redis | Cluster,
  script: string,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  return client.eval(script, keys.length, ...keys, ...args);
}

/**
 * Whether an error is Redis's own answer (an error reply: a refused or failed command), rather than no answer at all
 * (a timeout, a broken connection): the outcome is known. Read without throwing (see describeError).
 */
export function isReplyError(error: unknown): error is Error {
  return isInstance(error, Error) && errorName(error) === 'ReplyError';
}
