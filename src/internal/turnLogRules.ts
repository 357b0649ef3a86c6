// The rules every turn log applies to its callers' arguments, written once for memoryTurnLog and redisTurnLog.
import { UsageError } from '../errors.js';
import { checkInteger } from './options.js';

/** Checks the `after` of a `TurnLog.read`: a safe integer >= -1 (a seq, or -1 for the first entry). */
export function checkReadAfter(after: number, log: string): void {
  checkInteger(log, 'after', after, -1);
}

/** An append to a turn that has ended: nothing may follow its end. */
export function entryAfterEndError(log: string, turnId: string): UsageError {
  return new UsageError(
    log,
    'append',
    `must not follow the end of turn ${turnId}: nothing may follow its end`,
  );
}
