import { Observable, type OperatorFunction } from 'rxjs';
import { effectKey } from './effectKey.js';
import { subscribeLinked } from './internal/subscribeLinked.js';
import type { ToolCallEvent } from './types.js';

/** Anything that can tell whether an effect key was already executed: a `Set<string>` or an effect ledger. */
export interface EffectKeyLookup {
  has(key: string): boolean;
}

/** Options of {@link dedupeByEffectKey}. */
export interface DedupeByEffectKeyOptions {
  /** The orchestrator's id for the turn, stable across retries and restarts. */
  turnId: string;
  /**
   * Keys whose effects already ran (in an earlier run of this turn, another process, a ledger). Calls with
   * these keys are dropped. It is only read, never written: recording an effect as done is the job of
   * whoever executes it.
   */
  seen?: EffectKeyLookup;
  /** The key function; defaults to {@link effectKey}. */
  key?: (turnId: string, call: ToolCallEvent) => string;
}

/** The events {@link dedupeByEffectKey} emits for an input of `E`: tool calls gain `effectKey`. */
export type WithEffectKeys<E> = E extends { type: 'tool-call' } ? E & { effectKey: string } : E;

/**
 * Stamps `effectKey` on each `tool-call` and drops a call whose key was already seen in this subscription or
 * is in `seen`.
 *
 * Keys come from meaning (turn id, tool name, canonical arguments), not from provider call ids, so the same
 * refund proposed by two attempts (`c1`, then `c7`) has one key and passes once.
 *
 * ```text
 * source:       -a-c-b-k-f-|          c and k: the same call with ids c1 and c7
 *          dedupeByEffectKey({ turnId: 'turn-42' })
 * result:       -a-C-b---f-|          C = c with effectKey; k is dropped (same key)
 * ```
 *
 * State: the keys released in this subscription.
 *
 * ## Example
 * ```ts
 * import { dedupeByEffectKey, tagAttempts } from 'cleanturn';
 *
 * const ledger = new MemoryEffectLedger(); // from 'cleanturn/effects'
 * providerEvents$
 *   .pipe(tagAttempts(), dedupeByEffectKey({ turnId: 'turn-42', seen: ledger.seen('turn-42') }))
 *   .subscribe((e) => {
 *     if (e.type === 'tool-call') runTool(e.name, e.args, e.effectKey);
 *   });
 * ```
 *
 * @see {@link effectKey} for the key and how to compute it in another language.
 * @param options `turnId`; optional `seen` keys and `key` function.
 * @returns An operator that keys tool calls and lets each key through once.
 */
export function dedupeByEffectKey<E extends { type: string }>(
  options: DedupeByEffectKeyOptions,
): OperatorFunction<E, WithEffectKeys<E>> {
  const { turnId, seen, key = effectKey } = options;
  return function dedupeByEffectKeyOperator(source) {
    // One subscriber per event rather than a `map` and a `filter`: it sits on the path of every token.
    return new Observable<WithEffectKeys<E>>((subscriber) => {
      // Keys released by this subscription (created with the first call: most turns have none or few).
      let released: Set<string> | undefined;
      const subscription = subscribeLinked(source, subscriber, {
        next(event) {
          let keyed: WithEffectKeys<E>;
          try {
            if (event.type !== 'tool-call') {
              keyed = event as WithEffectKeys<E>;
            } else {
              // The key function and the lookup are the user's: what they throw becomes an error notification.
              const k = key(turnId, event as unknown as ToolCallEvent);
              if (released?.has(k) || seen?.has(k)) return;
              if (released === undefined) released = new Set();
              released.add(k);
              // A copy with the key (Object.assign: a spread followed by a new key is slow in V8, see tagAttempts).
              keyed = Object.assign({}, event, { effectKey: k }) as WithEffectKeys<E>;
            }
          } catch (error) {
            subscriber.error(error);
            return;
          }
          subscriber.next(keyed);
        },
        error(error) {
          subscriber.error(error);
        },
        complete() {
          subscriber.complete();
        },
      });
      return () => {
        released = undefined;
        subscription.unsubscribe();
      };
    });
  };
}
