import type { UsageEvent } from '../types.js';

/** The counts of a `usage` event; undefined is a count the payload did not give. */
export type UsageCounts = Record<
  'inputTokens' | 'outputTokens' | 'cachedInputTokens' | 'reasoningTokens',
  number | undefined
>;

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
    const keys = Object.keys(this.last) as (keyof UsageCounts)[];
    if (keys.every((key) => counts[key] === undefined || counts[key] === this.last[key])) return undefined;
    const event: UsageEvent = { type: 'usage' };
    for (const key of keys) {
      const count = counts[key];
      if (count !== undefined) event[key] = this.last[key] = count;
    }
    return event;
  }
}
