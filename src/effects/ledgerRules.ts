/**
 * The effect ledger's rules as one pure state machine: {@link decide} takes the stored record of a key (or none),
 * the current time and an operation, and answers what the caller gets and what to store. Every storage adapter
 * (in-memory, SQLite) reads the record, calls it and applies the write, under whatever lock its storage gives;
 * the rules — claim, in-progress, lease expiry and take-over, fencing, replay, retention, renewal — live here only.
 *
 * It holds no classes on purpose: adapters in other entry points may bundle it, and the errors it stands for
 * (`lease-lost`) are thrown by the adapter (`leaseLostError` of `./errors.js`).
 *
 * @module
 */
import { checkNumber } from '../internal/options.js';
import { decodeError, decodeResult } from './json.js';
import type { ClaimResult, EffectRecord, SerializedError } from './types.js';

/**
 * A record as a ledger stores it: result and error as JSON text, as a durable ledger keeps them.
 */
export interface StoredRecord {
  /** `claimed` (a holder runs the effect), `completed` or `failed`. */
  status: 'claimed' | 'completed' | 'failed';
  /** The fencing token of the holder that claimed (and, once settled, settled) the record. */
  token: string;
  /** When the lease ends, in epoch ms (claimed records; 0 for settled ones). */
  leaseUntil: number;
  /** JSON of the result (completed; `undefined` for none) or of the error (failed). */
  payload: string | undefined;
  /** When the record is forgotten, in epoch ms: from then on the key is absent. */
  expiresAt: number;
}

/** An operation on one key, with everything {@link decide} needs besides the record and the time. */
export type LedgerOperation =
  | {
      type: 'claim';
      /** The token the caller gets if it claims: a fresh random one (drawn by the adapter, so `decide` is pure). */
      token: string;
      /** How long the lease holds. */
      leaseMs: number;
      /** How long records are kept once settled (a claim is kept for its lease plus this). */
      retentionMs: number;
    }
  | {
      type: 'complete';
      token: string;
      /** The result as JSON text (`encodeResult`), `undefined` for none. */
      payload: string | undefined;
      retentionMs: number;
    }
  | { type: 'fail'; token: string; error: SerializedError; retentionMs: number }
  | { type: 'release'; token: string }
  | { type: 'renew'; token: string; leaseMs: number; retentionMs: number }
  | { type: 'get' };

/** What `complete`, `fail` and `release` answer: done, or fenced off (the adapter throws `EffectError` `lease-lost`). */
export type SettleAnswer = 'done' | 'lease-lost';

/** What the caller gets, by operation. */
export interface LedgerAnswers {
  claim: ClaimResult;
  complete: SettleAnswer;
  fail: SettleAnswer;
  release: SettleAnswer;
  /** Whether the caller still holds the claim (its lease now ends `leaseMs` from now). */
  renew: boolean;
  get: EffectRecord | undefined;
}

/** What to store: a new record for the key, no record, or nothing changed. */
export type LedgerWrite = { type: 'put'; record: StoredRecord } | { type: 'delete' } | { type: 'none' };

/** The answer to the caller and the write to apply, of one operation. */
export interface Decision<A> {
  answer: A;
  write: LedgerWrite;
}

const NONE: LedgerWrite = { type: 'none' };

/** Whether a stored record still exists at `now`: past `expiresAt` (retention, or lease plus retention) it is gone. */
export function isUnexpired(record: StoredRecord, now: number): boolean {
  return record.expiresAt > now;
}

/** Whether a record is a claim whose lease is still held at `now` (the holder is running the effect). */
export function isLeaseHeld(record: StoredRecord, now: number): boolean {
  return record.status === 'claimed' && record.leaseUntil > now;
}

/** Whether the key's effect is settled (completed, or failed and recorded) at `now`: what `seen` asks. */
export function isSettled(record: StoredRecord | undefined, now: number): boolean {
  return record !== undefined && isUnexpired(record, now) && record.status !== 'claimed';
}

/**
 * Decides one operation on one key.
 *
 * - **claim**: absent (or past retention) → `claimed` with the operation's token, `reclaimed: false`; a claim
 *   whose lease runs → `in-progress` until its end; a claim whose lease has ended → taken over with the new
 *   token, `reclaimed: true`; completed / failed → replayed. A claim is kept for its lease plus the retention.
 * - **complete / fail**: written when the key is absent or carries the caller's token (a holder whose lease
 *   ended may still settle while nobody has claimed since), else `lease-lost`. Kept for the retention from now.
 * - **release**: absent → done, nothing to do; the caller's claim → deleted; another's record, or a settled one
 *   → `lease-lost`.
 * - **renew**: the caller's claim (even with its lease ended, while nobody has taken it over) → its lease ends
 *   `leaseMs` from now and the record is kept for that plus the retention, `true`; anything else (absent,
 *   released, settled, another holder's claim) → `false`, nothing written.
 * - **get**: the record, decoded, or `undefined` when absent or past retention. Never writes.
 *
 * Durations are not checked here: adapters check options once, with {@link checkDuration}.
 *
 * @param record The stored record of the key, or `undefined` when there is none.
 * @param now The current time, epoch ms.
 * @param operation What the caller asks.
 * @returns What the caller gets, and what to store.
 */
export function decide<O extends LedgerOperation>(
  record: StoredRecord | undefined,
  now: number,
  operation: O,
): Decision<LedgerAnswers[O['type']]> {
  return decideAny(
    record !== undefined && isUnexpired(record, now) ? record : undefined,
    now,
    operation,
  ) as Decision<LedgerAnswers[O['type']]>;
}

function decideAny(
  live: StoredRecord | undefined,
  now: number,
  operation: LedgerOperation,
): Decision<LedgerAnswers[keyof LedgerAnswers]> {
  switch (operation.type) {
    case 'claim': {
      if (live !== undefined && live.status !== 'claimed') return { answer: replay(live), write: NONE };
      if (live !== undefined && isLeaseHeld(live, now)) {
        return { answer: { status: 'in-progress', until: live.leaseUntil }, write: NONE };
      }
      const { token, leaseMs, retentionMs } = operation;
      return {
        answer: { status: 'claimed', token, reclaimed: live !== undefined },
        write: { type: 'put', record: claimRecord(token, now + leaseMs, retentionMs) },
      };
    }
    case 'complete':
    case 'fail': {
      const { token, retentionMs } = operation;
      if (live !== undefined && live.token !== token) return { answer: 'lease-lost', write: NONE };
      const record: StoredRecord =
        operation.type === 'complete'
          ? {
              status: 'completed',
              token,
              leaseUntil: 0,
              payload: operation.payload,
              expiresAt: now + retentionMs,
            }
          : {
              status: 'failed',
              token,
              leaseUntil: 0,
              payload: JSON.stringify(operation.error),
              expiresAt: now + retentionMs,
            };
      return { answer: 'done', write: { type: 'put', record } };
    }
    case 'release':
      if (live === undefined) return { answer: 'done', write: NONE };
      if (live.status !== 'claimed' || live.token !== operation.token)
        return { answer: 'lease-lost', write: NONE };
      return { answer: 'done', write: { type: 'delete' } };
    case 'renew': {
      if (live === undefined || live.status !== 'claimed' || live.token !== operation.token) {
        return { answer: false, write: NONE };
      }
      const { token, leaseMs, retentionMs } = operation;
      return { answer: true, write: { type: 'put', record: claimRecord(token, now + leaseMs, retentionMs) } };
    }
    case 'get':
      return { answer: live === undefined ? undefined : toEffectRecord(live), write: NONE };
  }
}

/** A claim's record: kept for its lease plus the retention. */
function claimRecord(token: string, leaseUntil: number, retentionMs: number): StoredRecord {
  return { status: 'claimed', token, leaseUntil, payload: undefined, expiresAt: leaseUntil + retentionMs };
}

/** What a claim on a settled record answers: its result or its error, decoded. */
function replay(record: StoredRecord): ClaimResult {
  return record.status === 'completed'
    ? { status: 'completed', result: decodeResult(record.payload) }
    : { status: 'failed', error: decodeError(record.payload) };
}

/**
 * A stored record as {@link EffectRecord} (what `get` answers): result and error decoded, the same way for every
 * ledger.
 */
export function toEffectRecord(record: StoredRecord): EffectRecord {
  const { token, expiresAt } = record;
  switch (record.status) {
    case 'claimed':
      return { status: 'claimed', token, leaseUntil: record.leaseUntil, expiresAt };
    case 'completed':
      return { status: 'completed', token, result: decodeResult(record.payload), expiresAt };
    case 'failed':
      return { status: 'failed', token, error: decodeError(record.payload), expiresAt };
  }
}

/**
 * Checks a duration option: a positive, finite number of milliseconds (or, with `allowZero`, ≥ 0).
 *
 * @param operator The function or ledger that checks, for the message.
 * @param name The option's name, for the message.
 * @param value The option's value.
 * @param allowZero Whether 0 is allowed (a wait that may be none).
 * @returns The value.
 * @throws {UsageError} when it is not.
 */
export function checkDuration(operator: string, name: string, value: number, allowZero = false): number {
  checkNumber(operator, name, value, allowZero ? 'non-negative' : 'positive');
  return value;
}
