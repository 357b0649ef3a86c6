/**
 * The lease of a claim while {@link executeTools} runs its handler and records the outcome: a heartbeat that
 * renews the claim, never two renewals at once, and says when the lease is lost. When to renew and when the
 * lease counts as lost is decided by `heartbeatDue` and `heartbeatStep` (`executeRules.ts`); this module keeps
 * the timer and sends the renewals.
 *
 * @module
 */
import { beatOf, type HeartbeatState, heartbeatDue, heartbeatStep } from './executeRules.js';
import { isThenable } from './ledgerCalls.js';
import type { EffectLedger } from './types.js';

/** The claim whose lease {@link keepLease} keeps: its record, its token, and when and for how long it was taken. */
export interface LeaseTerms {
  turnId: string;
  effectKey: string;
  token: string;
  leaseMs: number;
  /** When the claim was sent (epoch milliseconds): the lease runs `leaseMs` from then until renewed. */
  claimedAt: number;
}

/** A claim's lease while its call runs and is recorded (see {@link keepLease}). */
export interface Lease {
  /** When the lease ends as far as this holder knows (epoch ms): `leaseMs` after the last renewal that succeeded. */
  readonly endsAt: number;
  /** Whether the lease was lost while the handler ran: a renewal said so, or none succeeded until it ended. */
  readonly lost: boolean;
  /** The handler has settled: from now on the lease is only kept while the outcome is recorded. */
  settling(): void;
  /** Stops renewing; a renewal under way is aborted. */
  end(): void;
}

/**
 * Keeps a claim's lease while its call runs and is recorded: renews it (when the ledger can) `leaseMs / 3` after
 * the previous renewal was sent, and never while one is under way, so renewals never overlap however long one
 * takes. While the handler runs, a renewal that answers `false`, or renewals that fail until the lease has
 * ended, count the lease as lost (`onLost` aborts the handler). Once it settled ({@link Lease.settling}), a
 * renewal that answers `false` only stops the heartbeat: the outcome may be recorded already, by a write whose
 * answer got lost, and the write sent again says which.
 */
export function keepLease(ledger: EffectLedger, claim: LeaseTerms, onLost: () => void): Lease {
  const heartbeat = new Heartbeat(ledger, claim, onLost);
  heartbeat.arm();
  return heartbeat;
}

/** The heartbeat of one lease (see {@link keepLease}): its state, its one timer, and the renewals it sends. */
class Heartbeat implements Lease {
  readonly #ledger: EffectLedger;
  readonly #claim: LeaseTerms;
  readonly #onLost: () => void;
  // Ends a renewal still waiting (for a lock) once the lease is no longer kept: none outlives it.
  readonly #renewals = new AbortController();
  // When the last renewal that succeeded was sent (the claim, at first), when the last one was sent, and
  // whether one is under way (then the next waits for its answer).
  readonly #beat: HeartbeatState;
  #lost = false;
  #settling = false;
  // Whether the heartbeat has stopped (ended, lost, or refused while settling); at once without `renew`.
  #stopped: boolean;
  // The one timer: the next renewal, or (while one is under way) the end of the lease.
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(ledger: EffectLedger, claim: LeaseTerms, onLost: () => void) {
    this.#ledger = ledger;
    this.#claim = claim;
    this.#onLost = onLost;
    const { leaseMs, claimedAt } = claim;
    this.#beat = {
      leaseMs,
      beatMs: beatOf(leaseMs),
      renewedAt: claimedAt,
      sentAt: claimedAt,
      renewing: false,
    };
    this.#stopped = ledger.renew === undefined;
  }

  get endsAt(): number {
    return this.#beat.renewedAt + this.#beat.leaseMs;
  }

  get lost(): boolean {
    return this.#lost;
  }

  settling(): void {
    this.#settling = true;
  }

  end(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#renewals.abort();
  }

  /** Sets the one timer for the heartbeat's next wake-up (none once stopped). */
  arm(): void {
    clearTimeout(this.#timer);
    if (this.#stopped) return;
    this.#timer = setTimeout(() => this.#tick(), Math.max(0, heartbeatDue(this.#beat) - Date.now()));
  }

  /** Stops the heartbeat for a lost lease; while the handler runs, counts it as lost and tells `onLost`. */
  #lose(): void {
    if (this.#stopped) return;
    this.end();
    if (this.#settling) return;
    this.#lost = true;
    this.#onLost();
  }

  /** Wakes up: loses the lease, waits on for the renewal under way, or sends the next one. */
  #tick(): void {
    this.#timer = undefined;
    if (this.#stopped) return;
    const step = heartbeatStep(this.#beat, Date.now());
    if (step === 'lose') this.#lose();
    else if (step === 'wait') this.arm();
    else this.#renew();
  }

  /** Sends one renewal; the timer meanwhile waits for the lease's end. */
  #renew(): void {
    const send = this.#ledger.renew;
    if (send === undefined) return;
    const { turnId, effectKey, token, leaseMs } = this.#claim;
    const sent = Date.now();
    this.#beat.sentAt = sent;
    this.#beat.renewing = true;
    try {
      const answer = send.call(this.#ledger, turnId, effectKey, token, leaseMs, {
        signal: this.#renewals.signal,
      });
      if (isThenable(answer))
        answer.then(
          (ok) => this.#answered(ok, sent),
          () => this.#failed(),
        );
      else this.#answered(answer, sent);
    } catch {
      this.#failed();
    }
    if (this.#beat.renewing) this.arm();
  }

  /** A renewal sent at `sent` answered: the lease runs on from then, or (`false`) it is lost. */
  #answered(ok: boolean, sent: number): void {
    this.#beat.renewing = false;
    if (this.#stopped) return;
    if (!ok) {
      this.#lose();
      return;
    }
    this.#beat.renewedAt = Math.max(this.#beat.renewedAt, sent);
    this.arm();
  }

  /** A renewal failed (a network error, a timeout): it is tried again at the next beat, until the lease ends. */
  #failed(): void {
    this.#beat.renewing = false;
    this.arm();
  }
}
