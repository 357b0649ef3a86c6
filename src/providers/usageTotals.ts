import type { UsageEvent } from '../types.js';

/** The counts of a `usage` event; undefined is a count the payload did not give. */
export type UsageCounts = Record<
  'inputTokens' | 'outputTokens' | 'cachedInputTokens' | 'reasoningTokens',
  number | undefined
>;

/** The counts, in the order a `usage` event lists them. */
const KEYS = ['inputTokens', 'outputTokens', 'cachedInputTokens', 'reasoningTokens'] as const;

/** Usage totals as a stream reports them again and again: a `usage` event goes out only when a count changes. */
export class UsageTotals {
  private readonly last: UsageCounts = {
    inputTokens: undefined,
    outputTokens: undefined,
    cachedInputTokens: undefined,
    reasoningTokens: undefined,
  };

  /**
   * The `usage` event for `counts` when one of them differs from the last emitted, else undefined. A count the
   * payload did not give keeps its last value and is left out of the event.
   */
  next(counts: UsageCounts): UsageEvent | undefined {
    const last = this.last;
    let changed = false;
    for (let i = 0; i < KEYS.length && !changed; i++) {
      const key = KEYS[i] as keyof UsageCounts;
      changed = counts[key] !== undefined && counts[key] !== last[key];
    }
    if (!changed) return undefined;
    const event: UsageEvent = { type: 'usage' };
    for (const key of KEYS) {
      const count = counts[key];
      if (count !== undefined) event[key] = this.last[key] = count;
    }
    return event;
  }
}
