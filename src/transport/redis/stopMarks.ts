/**
 * The stop marks of the Redis turn log: a stop asked for on any instance, and the runner's watch for it.
 *
 * @module
 */
import { Observable } from 'rxjs';
import { isReplyError, runRedisScript } from '../../internal/redisScripts.js';
import { keysOf, type TurnKeys, type TurnLogContext, within } from './turnLogContext.js';
import { type StopStateAnswer, scripts } from './turnLogScripts.js';

/** Marks a running turn as asked to stop (see `TurnLog.requestStop`): false for a turn unknown or ended. */
export async function requestStop(context: TurnLogContext, turnId: string, reason: string): Promise<boolean> {
  const { client, ttlMs, timeoutMs } = context;
  const keys = keysOf(context.prefix, turnId);
  const answer = await within('stop', timeoutMs, () =>
    runRedisScript(client, scripts.stop, [keys.stream, keys.owner, keys.stop], [reason, ttlMs]),
  );
  return answer === 1;
}

/**
 * The stop request of a turn (see `TurnLog.watchStop`), checked every `stopCheckMs` while the turn runs. A check
 * that gets no answer in time counts as `running`: the next one tries again.
 */
export function watchStop(context: TurnLogContext, turnId: string): Observable<string> {
  const { client, timeoutMs, stopCheckMs } = context;
  return new Observable<string>((subscriber) => {
    let keys: TurnKeys;
    try {
      keys = keysOf(context.prefix, turnId);
    } catch (error) {
      subscriber.error(error);
      return;
    }
    // Aborted when the runner stops watching: the pending check's wait ends and its timer is cleared.
    const gone = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const check = async (): Promise<void> => {
      timer = undefined;
      let answer: unknown;
      try {
        answer = await within(
          'stop',
          timeoutMs,
          () => runRedisScript(client, scripts.stopState, [keys.stream, keys.owner, keys.stop], []),
          gone.signal,
        );
      } catch (error) {
        if (gone.signal.aborted) return;
        // An answer that is an error is for good; a timeout may pass: the next check tries again.
        if (isReplyError(error)) {
          subscriber.error(error);
          return;
        }
        answer = ['running'];
      }
      if (subscriber.closed) return;
      const [state, reason] = answer as StopStateAnswer;
      if (state === 'stop' && typeof reason === 'string') {
        subscriber.next(reason);
        subscriber.complete();
      } else if (state === 'running') timer = setTimeout(() => void check(), stopCheckMs);
      else subscriber.complete();
    };
    void check();
    return () => {
      gone.abort();
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    };
  });
}
