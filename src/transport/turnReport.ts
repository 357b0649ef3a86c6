import type { AttemptOutcome, TurnState, Usage } from '../accumulateTurn.js';
import { describeError, TurnError } from '../errors.js';
import { isInstance } from '../internal/describeError.js';

/** One attempt in a {@link TurnReport}. */
export interface AttemptReport {
  /** 1 for the first attempt. */
  attempt: number;
  /** How it ended: `abandoned` attempts were replaced by a retry; the last attempt may have `failed`. */
  outcome: AttemptOutcome;
  /** Why it was abandoned or failed, when known. */
  reason?: string;
  /** Usage as the provider reported it; absent when it sent none. */
  usage?: Usage;
  /** False when the provider sent no usage for this attempt: bill it from `textLength` or a tokenizer. */
  usageKnown: boolean;
  /** Characters of text the attempt streamed before it ended. */
  textLength: number;
  /** Tool calls of the attempt that were released to the tools. */
  toolCalls: number;
  /**
   * How many times the attempt's connection was cut and resumed (`streamTurn`'s `resume`): the same generation
   * went on, billed once. 0 when it never was.
   */
  resumes: number;
  /** The provider the attempt went to, when a plan named it (`streamTurn`'s `plan`). */
  provider?: string;
  /** The model the attempt asked for, when a plan named it. */
  model?: string;
}

/** What a turn cost and how it ended, for logs and billing. */
export interface TurnReport {
  turnId: string;
  /**
   * `completed`: the last attempt finished; `failed`: the turn errored; `stopped`: it was stopped on purpose (its
   * `signal` aborted; `error` is the `TransportError` `turn-stopped`); `cancelled`: the consumer unsubscribed.
   */
  outcome: 'completed' | 'failed' | 'stopped' | 'cancelled';
  /** The error that ended a failed turn. */
  error?: unknown;
  /** The text the user reads (the last attempt's). */
  text: string;
  /** Every attempt, abandoned ones included: each was billed. */
  attempts: AttemptReport[];
  /** Resumes of all attempts: each was one more request, but no new generation (not billed again). */
  resumes: number;
  /** Summed usage of the attempts that reported any, cached input and reasoning tokens too where reported. */
  usage: Usage;
  /** True when every attempt reported its usage. */
  usageComplete: boolean;
}

/**
 * Builds the report of a turn from its last state and how it ended.
 *
 * @param turnId The turn's id.
 * @param state The last {@link TurnState} (from `accumulateTurn`), if any event arrived.
 * @param end How the stream ended, and the error that ended it.
 * @param labels The provider and model of each attempt that started; an attempt without one is left out when it
 *   is the last (a reset announced it, and the turn ended during the wait).
 */
export function toTurnReport(
  turnId: string,
  state: TurnState<unknown> | undefined,
  end: { outcome: TurnReport['outcome']; error?: unknown },
  labels?: ReadonlyMap<number, { provider?: string; model?: string }>,
): TurnReport {
  const all = state?.attempts ?? [{ attempt: 1, outcome: 'streaming' as const, textLength: 0, toolCalls: 0 }];
  // With the labels of the attempts that started, the last record may be of an attempt that a reset announced and
  // the turn never started (it ended during the wait): it made no request, and is left out.
  const last = all[all.length - 1];
  const records =
    labels !== undefined && all.length > 1 && last !== undefined && !labels.has(last.attempt)
      ? all.slice(0, -1)
      : all;
  const attempts = records.map((record, i) => attemptReportOf(record, i === records.length - 1, end, labels));
  const report: TurnReport = {
    turnId,
    outcome: end.outcome,
    text: state?.text ?? '',
    attempts,
    resumes: attempts.reduce((sum, a) => sum + a.resumes, 0),
    usage: totalUsage(attempts),
    usageComplete: attempts.length > 0 && attempts.every((a) => a.usageKnown),
  };
  if (end.error !== undefined) report.error = end.error;
  return report;
}

type AttemptRecord = TurnState<unknown>['attempts'][number];

/**
 * The report of one attempt: its record, and, for the live attempt (`last` and still streaming), how the turn's
 * end ended it (failed, or abandoned when cancelled or stopped) and why.
 */
function attemptReportOf(
  record: AttemptRecord,
  last: boolean,
  end: { outcome: TurnReport['outcome']; error?: unknown },
  labels: ReadonlyMap<number, { provider?: string; model?: string }> | undefined,
): AttemptReport {
  const live = last && record.outcome === 'streaming';
  const outcome: AttemptOutcome = !live
    ? record.outcome
    : end.outcome === 'failed'
      ? 'failed'
      : end.outcome === 'cancelled' || end.outcome === 'stopped'
        ? 'abandoned'
        : record.outcome;
  const report: AttemptReport = {
    attempt: record.attempt,
    outcome,
    usageKnown: record.usage !== undefined,
    textLength: record.textLength,
    toolCalls: record.toolCalls,
    resumes: record.resumes ?? 0,
  };
  const reason =
    record.reason ??
    (live && end.outcome === 'failed' && end.error !== undefined
      ? ownReason(end.error)
      : live && end.outcome === 'cancelled'
        ? 'cancelled by the consumer'
        : live && end.outcome === 'stopped' && end.error !== undefined
          ? describeError(end.error)
          : undefined);
  if (reason !== undefined) report.reason = reason;
  if (record.usage !== undefined) report.usage = record.usage;
  const label = labels?.get(record.attempt);
  if (label?.provider !== undefined) report.provider = label.provider;
  if (label?.model !== undefined) report.model = label.model;
  return report;
}

/** The usage of every attempt that reported it, each count summed (abandoned attempts are billed too). */
function totalUsage(attempts: readonly AttemptReport[]): Usage {
  const usage: Usage = {};
  for (const a of attempts) {
    if (a.usage === undefined) continue;
    for (const field of usageFields) {
      const count = a.usage[field];
      if (count !== undefined) usage[field] = (usage[field] ?? 0) + count;
    }
  }
  return usage;
}

/** The counts of a usage, each summed over the attempts that reported it. */
const usageFields = ['inputTokens', 'outputTokens', 'cachedInputTokens', 'reasoningTokens'] as const;

/**
 * Why the last attempt failed: its own error's reason. When the retries ran out, that is the last record of the
 * `TurnError` `retries-exhausted` (whose message only adds the count), not the wrapper's message.
 */
function ownReason(error: unknown): string {
  if (isInstance(error, TurnError) && error.code === 'retries-exhausted') {
    const last = error.attempts?.[error.attempts.length - 1];
    if (last !== undefined) return last.reason;
  }
  return describeError(error);
}
