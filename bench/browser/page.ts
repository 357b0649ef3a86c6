// The browser side of item 4: the whole core, bundled for the browser (no Node built-ins may be reachable),
// with a small measuring loop. bench/effectKeys.ts bundles this file and runs it in headless Chromium.

import * as cleanturn from 'cleanturn';

/** What one browser measurement returns. */
export interface BrowserKeyResult {
  keysPerSecond: number;
  /** The key of the sample call, to compare with Node's. */
  sample: string;
  userAgent: string;
}

/** The sample call every runtime keys. */
export const sampleCall = { name: 'issue_refund', args: { order_id: 'ORD-7781', amount: 'full' } } as const;

/** Keys `batch` calls per round, `rounds` times after a warm-up, and returns the median rate. */
function measure(batch: number, rounds: number): BrowserKeyResult {
  const { effectKey } = cleanturn;
  let sink = 0;
  const round = () => {
    const start = performance.now();
    for (let i = 0; i < batch; i++) sink += effectKey(`turn-${i & 1023}`, sampleCall).length;
    return performance.now() - start;
  };
  for (let i = 0; i < 3; i++) round();
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) times.push(round());
  times.sort((a, b) => a - b);
  const mid = times[times.length >> 1] as number;
  if (sink === 0) throw new Error('no keys');
  return {
    keysPerSecond: (batch / mid) * 1000,
    sample: effectKey('turn-42', sampleCall),
    userAgent: navigator.userAgent,
  };
}

(globalThis as { cleanturnBench?: unknown }).cleanturnBench = {
  measure,
  exports: Object.keys(cleanturn).length,
};
