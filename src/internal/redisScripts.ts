// What the Redis ledger and the Redis turn log share: their Lua scripts run by SHA-1, loaded on first use (or after
// the server lost its script cache), and a time limit on every command whatever the client's own retry settings.
import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';

/** A Lua script and its SHA-1, for EVALSHA with a fallback to EVAL. */
export interface RedisScript {
  readonly source: string;
  readonly sha: string;
}

/** The script of `source`. */
export function redisScript(source: string): RedisScript {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

/** Runs `script` with `keys` and `args`: by its SHA-1, and by its source when the server does not have it. */
export async function runRedisScript(
  client: Redis | Cluster,
  script: RedisScript,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  try {
    return await client.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
    return await client.eval(script.source, keys.length, ...keys, ...args);
  }
}

/**
 * Runs `command`, or rejects with `timeout()` once `timeoutMs` has passed, or with `signal`'s reason when it aborts;
 * the timer and the listener are always removed.
 */
export async function withinTime<T>(
  timeoutMs: number,
  timeout: () => Error,
  command: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  if (signal?.aborted) throw signal.reason;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let abort: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeout()), timeoutMs);
    if (signal !== undefined) {
      abort = () => reject(signal.reason);
      signal.addEventListener('abort', abort, { once: true });
    }
  });
  try {
    const result = await Promise.race([command(), stopped]);
    if (signal?.aborted) throw signal.reason;
    return result;
  } finally {
    clearTimeout(timer);
    if (abort !== undefined) signal?.removeEventListener('abort', abort);
  }
}
