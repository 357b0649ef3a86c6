/** The facts a `retry` or `reset` event carries (see `RetryFacts`). */
const FACTS = new Set([
  'delay',
  'failedAttempt',
  'outputStarted',
  'retryCount',
  'maxRetries',
  'errorName',
  'status',
]);

/**
 * The frames of a TestScheduler run with the facts left out of their `retry` and `reset` events: for the tests that are about
 * when events come and how attempts are counted. The facts have tests of their own (test/retryAsEvents.test.ts).
 */
export function withoutFacts(frames: unknown): unknown {
  if (!Array.isArray(frames)) return frames;
  return frames.map((frame) => {
    const value = frame?.notification?.value;
    if (value?.type !== 'retry' && value?.type !== 'reset') return frame;
    const stripped = Object.fromEntries(Object.entries(value).filter(([key]) => !FACTS.has(key)));
    return { ...frame, notification: { ...frame.notification, value: stripped } };
  });
}
