// Open handles: a test must leave no socket, server or timer behind.

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
