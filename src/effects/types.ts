/**
 * The effect ledger contract and the events of the tool executor.
 *
 * An effect ledger remembers, per turn and effect key, whether a tool call's effect is being run (claimed),
 * has run (completed, with its result) or has failed for good (failed, with its error). {@link executeTools}
 * consults it before running a handler, so that a state-changing tool runs once per effect key across
 * retries, restarts and processes.
 *
 * @module
 */
import type { EffectKeyLookup } from '../dedupeByEffectKey.js';
import type { KeyedToolCall, ReleasedCall } from '../types.js';

/**
 * A value or a promise of it: in-memory and SQLite ledgers answer synchronously, Redis asynchronously.
 * @inline
 */
export type Awaitable<T> = T | Promise<T>;

/**
 * JSON data: what a durable ledger can store and give back unchanged.
 *
 * @inline
 */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * An error as a ledger stores it and as a result event carries it: plain JSON data, the same whether the error
 * was thrown just now or replayed from the ledger by another process.
 *
 * @inline
 */
export interface SerializedError {
  /** The error's `name` (`Error`, `TypeError`, `CardDeclinedError`…). */
  name: string;
  /** The error's message. */
  message: string;
  /** Whether trying again could succeed (see `isRetryable` in `cleanturn`). */
  retryable: boolean;
  /** The error's `code` (`ECONNRESET`, `card_declined`…), when it had a string or number one. */
  code?: string | number;
}

/**
 * What a caller may pass to a ledger operation that can wait (`claim`, `renew`).
 * @inline
 */
export interface LedgerCallOptions {
  /**
   * Aborted when the caller no longer wants the answer (its turn was unsubscribed). A ledger that waits (for
   * a lock, a connection) stops waiting, rejects with the signal's reason and writes nothing; an answer already
   * written stands. A ledger that never waits may ignore it.
   */
  signal?: AbortSignal;
}

/**
 * The options of {@link EffectLedger.claim}.
 * @inline
 */
export interface ClaimOptions extends LedgerCallOptions {
  /**
   * How long the claim holds, in milliseconds. A holder that crashes never completes; once its lease has
   * expired, the next caller may claim the key (and learns so through `reclaimed: true`).
   */
  leaseMs: number;
}

/** What {@link EffectLedger.claim} answers. */
export type ClaimResult =
  | {
      /** The caller holds the key and must run the effect, then `complete`, `fail` or `release`. */
      status: 'claimed';
      /** The fencing token: pass it to `complete`, `fail` or `release`. */
      token: string;
      /**
       * An earlier holder's lease expired without an outcome: its effect may or may not have happened. The
       * handler runs again with the same effect key, so the service it calls must be idempotent on that key.
       */
      reclaimed: boolean;
    }
  | {
      /** Another holder's lease is live: its effect is running now (or it crashed and its lease has not run out). */
      status: 'in-progress';
      /** When that lease expires, in epoch milliseconds of this machine's clock. */
      until: number;
    }
  | {
      /** The effect ran: replay its stored result instead of running it again. */
      status: 'completed';
      /** The stored result; `undefined` when the handler returned nothing. */
      result: JsonValue | undefined;
    }
  | {
      /** The effect failed for good and the failure was recorded: replay the error. */
      status: 'failed';
      error: SerializedError;
    };

/** A ledger record as {@link EffectLedger.get} returns it. */
export type EffectRecord =
  | {
      status: 'claimed';
      /** The holder's fencing token. */
      token: string;
      /** When the lease expires (epoch ms, this machine's clock); past it, the next claim takes over. */
      leaseUntil: number;
      /** When the ledger forgets the record (epoch ms). */
      expiresAt: number;
    }
  | {
      status: 'completed';
      /** The token of the holder that completed it. */
      token: string;
      result: JsonValue | undefined;
      expiresAt: number;
    }
  | {
      status: 'failed';
      /** The token of the holder that recorded the failure. */
      token: string;
      error: SerializedError;
      expiresAt: number;
    };

/**
 * A store of effect records, keyed by scope (the turn id) and effect key. Records move `claimed → completed`
 * or `claimed → failed`, or are released (deleted) when a failure should be retried.
 *
 * The promises every implementation keeps (and the conformance suite checks):
 *
 * - **One winner.** Of any number of concurrent `claim`s on an absent key, from any number of processes,
 *   exactly one answers `claimed`.
 * - **In progress.** While a claim's lease is live, `claim` answers `in-progress` with the lease's end. The
 *   ledger never blocks; waiting is the caller's choice (see `inProgress` of {@link executeTools}).
 * - **Lease expiry.** Once a lease has expired without an outcome, the next `claim` takes the key over with a
 *   new token and `reclaimed: true`.
 * - **Fencing.** `complete`, `fail` and `release` succeed only while the record is absent or still carries the
 *   caller's token. A holder whose lease expired may still complete if nobody has claimed since; once another
 *   holder has claimed, the old token is fenced off and these calls throw an `EffectError` of code `lease-lost`.
 * - **Safe to repeat.** `complete`, `fail` and `release` sent again under the same token (after an error, or a
 *   write whose answer never came) succeed as the first did and leave the same record: {@link executeTools}
 *   sends them again when they fail with a retryable error, since the handler has run.
 * - **Replay.** `claim` on a completed key answers `completed` with the stored result, on a failed key
 *   `failed` with the stored error, until the record's retention runs out. Then the key is absent again.
 * - **JSON only.** `complete` stores JSON data and rejects anything else with an `EffectError` `unstorable-result`, before it
 *   writes. Results come back as JSON data: equal, not identical.
 * - **Scope isolation.** The same key in two scopes names two records.
 *
 * Methods may answer synchronously (in-memory, SQLite) or with a promise (Redis).
 */
export interface EffectLedger {
  /** Tries to take the key; see {@link ClaimResult} for the four answers. */
  claim(scope: string, key: string, options: ClaimOptions): Awaitable<ClaimResult>;
  /**
   * Records that the effect ran, with its result (JSON data, or `undefined` for none).
   *
   * @throws {EffectError} `unstorable-result` when `result` is not JSON data; nothing is written.
   * @throws {EffectError} `lease-lost` when another holder has claimed the key since.
   */
  complete(scope: string, key: string, token: string, result: unknown): Awaitable<void>;
  /**
   * Records that the effect failed for good: later claims replay the error instead of running it again.
   *
   * @throws {EffectError} `lease-lost` when another holder has claimed the key since.
   */
  fail(scope: string, key: string, token: string, error: SerializedError): Awaitable<void>;
  /**
   * Deletes the caller's claim, so that the next claim runs the effect again (for failures worth retrying).
   *
   * @throws {EffectError} `lease-lost` when another holder has claimed or settled the key since.
   */
  release(scope: string, key: string, token: string): Awaitable<void>;
  /** The record of a key, or `undefined` when there is none (never written, released, or past retention). */
  get(scope: string, key: string): Awaitable<EffectRecord | undefined>;
  /**
   * Extends the caller's claim while its handler runs and its outcome is being recorded: {@link executeTools} calls
   * it every `leaseMs / 3` (never while a call is under way: the next goes out once the previous one answered), so
   * that a handler slower than its lease is not taken over and run a second time. One call should take well under
   * `leaseMs / 3` (see `leaseMs` of {@link executeTools}): a renewal that fails is tried again at the next beat. A holder whose lease has ended
   * may still renew while nobody has claimed the key since. Optional: a ledger without it keeps working, without
   * the heartbeat (a handler slower than `leaseMs` may then be taken over, as before).
   *
   * @returns `true` when the caller still holds the claim and its lease now ends `leaseMs` from now; `false`
   *   when the claim is lost (another holder claimed the key, it was settled or released, or its record is
   *   gone), and nothing was changed.
   */
  renew?(
    scope: string,
    key: string,
    token: string,
    leaseMs: number,
    options?: LedgerCallOptions,
  ): Awaitable<boolean>;
}

/**
 * A ledger that answers synchronously (in-memory, SQLite). It can also serve as `seen` of
 * `dedupeByEffectKey`, which needs a synchronous `has`.
 */
export interface SyncEffectLedger extends EffectLedger {
  claim(scope: string, key: string, options: ClaimOptions): ClaimResult;
  complete(scope: string, key: string, token: string, result: unknown): void;
  fail(scope: string, key: string, token: string, error: SerializedError): void;
  release(scope: string, key: string, token: string): void;
  get(scope: string, key: string): EffectRecord | undefined;
  renew?(scope: string, key: string, token: string, leaseMs: number): boolean;
  /**
   * The keys of a scope whose effects are settled (completed, or failed and recorded), as the `seen` option of
   * `dedupeByEffectKey`: `cleanTurn({ turnId, seen: ledger.seen(turnId) })`.
   */
  seen(scope: string): EffectKeyLookup;
}

/** What a tool handler receives besides the call's arguments. */
export interface ToolContext {
  /**
   * The call's effect key. Pass it to the service as its idempotency key (Stripe's `Idempotency-Key` header):
   * after a crash between the effect and its record, the handler runs again with the same key.
   */
  effectKey: string;
  /** The turn id (the ledger scope). A service that is not scoped per turn may key on `${turnId}:${effectKey}`. */
  turnId: string;
  /** The whole tool call: name, provider id, attempt, arguments. */
  call: KeyedToolCall;
  /**
   * Aborts when the handler should stop, before it settles: the consumer unsubscribed (reason: an `AbortError`),
   * the claim's lease was lost to another holder (reason: an `EffectError` `lease-lost`), or `handlerTimeoutMs`
   * ran out (reason: `handler-timeout`). Pass it on (`fetch(url, { signal })`) or call `signal.throwIfAborted()`.
   */
  signal: AbortSignal;
  /**
   * An earlier holder's lease expired without an outcome: its effect may already have happened (the effect is
   * in doubt). Pass `effectKey` to the service as its idempotency key, or check with it before acting again.
   */
  reclaimed: boolean;
}

/**
 * Runs one tool. The arguments are the model's, unvalidated: check them (with zod or the like). Return JSON data
 * (or nothing), synchronously, as a promise, or as an observable whose first value is the result. Throw (or
 * reject, or error) to fail. Write it as `ToolHandlers[string]` where you need its type.
 *
 * @inline
 */
export type ToolHandler = (args: unknown, context: ToolContext) => unknown;

/** Tool handlers by tool name: each runs one tool (see {@link ToolContext} for what it is given). */
export type ToolHandlers = Readonly<Record<string, ToolHandler>>;

/** What every {@link ToolResultEvent} carries. */
interface ToolResultBase {
  type: 'tool-result';
  /** The call's effect key. */
  effectKey: string;
  /** The call the result belongs to: a call that ran, or a repeat answered with its key's recorded result. */
  call: ReleasedCall;
}

/**
 * The handler ran now and returned `result`.
 *
 * @inline
 */
export interface ToolExecutedEvent extends ToolResultBase {
  outcome: 'executed';
  result: JsonValue | undefined;
  /**
   * An earlier holder's lease had expired: this was a second run with the same key (after a crash), so the
   * effect is in doubt: it may have happened twice unless the service is idempotent on the effect key.
   */
  reclaimed: boolean;
  /**
   * Present (and `true`) only when this run's lease was lost while its handler ran: a renewal said another
   * holder had the key, renewals kept failing past the lease, or the completion was fenced off
   * (`lease-lost`). The handler did return `result`, but the record may be another holder's (whose
   * effect may have run too): `result` is not what later runs replay. Absent on a run that kept its lease.
   */
  leaseLost?: true;
}

/**
 * The effect had already run (in this process or another): `result` is the stored one.
 *
 * @inline
 */
export interface ToolReplayedEvent extends ToolResultBase {
  outcome: 'replayed';
  result: JsonValue | undefined;
}

/**
 * The handler failed now (`replayed: false`) or its recorded failure was replayed (`replayed: true`).
 *
 * @inline
 */
export interface ToolFailedEvent extends ToolResultBase {
  outcome: 'failed';
  error: SerializedError;
  replayed: boolean;
  /** What the handler threw, when it failed in this process just now. */
  cause?: unknown;
  /**
   * Present (and `true`) only when this run's lease was lost while its handler ran (see
   * `ToolExecutedEvent.leaseLost`): `error` is then an `EffectError` `lease-lost` (with the handler's own error as
   * `cause`) when the handler failed after being aborted, and the failure was not recorded (another holder's
   * record stands).
   */
  leaseLost?: true;
}

/**
 * No handler has the call's name. Nothing ran and the ledger was not touched.
 *
 * @inline
 */
export interface UnknownToolEvent extends ToolResultBase {
  outcome: 'unknown-tool';
  error: SerializedError;
}

/**
 * Another holder is running the effect (only with `inProgress: 'report'`).
 *
 * @inline
 */
export interface ToolInProgressEvent extends ToolResultBase {
  outcome: 'in-progress';
  /** When the other holder's lease expires (epoch ms). */
  until: number;
}

/** What {@link executeTools} emits: one per tool call. */
export type ToolResultEvent =
  | ToolExecutedEvent
  | ToolReplayedEvent
  | ToolFailedEvent
  | UnknownToolEvent
  | ToolInProgressEvent;

/** The outcomes of a {@link ToolResultEvent}. */
export type ToolOutcome = ToolResultEvent['outcome'];
