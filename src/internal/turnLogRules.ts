// The rules every turn log applies to its callers' arguments, written once for memoryTurnLog and redisTurnLog.
// Internal: no error classes here (a relative import would bundle a second copy of them into the Redis entry).

/** Checks the `after` of a `TurnLog.read`: a safe integer >= -1 (a seq, or -1 for the first entry). */
export function checkReadAfter(after: number, log: string): void {
  if (!Number.isSafeInteger(after) || after < -1)
    throw new RangeError(`${log}: read after must be a safe integer >= -1, got ${after}`);
}
