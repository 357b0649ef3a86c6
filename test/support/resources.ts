// Open handles: a test must leave no socket, server or timer behind.
import { afterEach, beforeEach, expect } from 'vitest';

/** Waits until the process holds no more sockets and timers than `baseline` (they close asynchronously). */
export async function settledResources(baseline: string[], limitMs = 2_000): Promise<string[]> {
  const count = (list: string[]) =>
    list.filter((r) => r === 'TCPSocketWrap' || r === 'TCPServerWrap' || r === 'Timeout').length;
  const started = Date.now();
  for (;;) {
    const now = process.getActiveResourcesInfo();
    if (count(now) <= count(baseline) || Date.now() - started > limitMs) return now;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Registers the check every socket test makes: after each test and its `cleanup` (closing its server), the process
 * holds no more sockets and timers than before the test.
 */
export function expectNoLeftoverHandles(cleanup: () => Promise<void> | void): void {
  let baseline: string[] = [];
  beforeEach(() => {
    baseline = process.getActiveResourcesInfo();
  });
  afterEach(async () => {
    await cleanup();
    const count = (list: string[]) => list.filter((r) => r === 'TCPSocketWrap' || r === 'Timeout').length;
    expect(count(await settledResources(baseline))).toBeLessThanOrEqual(count(baseline));
  });
}
