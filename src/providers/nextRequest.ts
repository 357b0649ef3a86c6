// What the five next-request builders share: finding the final attempt's output, and matching the executor's
// results to the call ids that output holds (exactly one answer per id).

import { describeError } from '../internal/describeError.js';
import { describeValue } from '../internal/describeValue.js';
import { toolResultStatus } from '../toolResultStatus.js';
import type { FinishEvent, ProviderOutput, ToolResultLike } from '../types.js';
import { nextRequestError } from './errors.js';

/** What a builder reads of a turn: the final attempt's finish (`TurnState` fits this). */
export interface FinishedTurn {
  readonly finish: (FinishEvent & { readonly attempt?: number }) | undefined;
}

/** What a builder reads of a turn whose finish may carry no output: a `TurnState` of `accumulateTurn()` fits. */
export interface TextTurn extends FinishedTurn {
  /** The final attempt's text, for a finish without output. */
  readonly text: string;
  /** The final attempt's released calls, for a finish without output. */
  readonly toolCalls: readonly { readonly id: string; readonly name: string; readonly args: unknown }[];
}

/** What a builder reads of a call of the final attempt, whatever the format. */
export interface OutputCall {
  /** The provider's call id. */
  readonly id: string;
  /** The tool's name, as the provider sent it. */
  readonly name: string;
}

/** The answer of one call id: the tool's result, or why it failed, to be written in the provider's form. */
export type CallAnswer =
  | { readonly ok: true; readonly value: unknown; readonly result: ToolResultLike }
  | { readonly ok: false; readonly message: string; readonly result: ToolResultLike };

/**
 * The final attempt's output of `format`, or a `ProviderError`: no finish is `not-finished`, an
 * output of another format is `wrong-format`. `undefined` when the finish carries no output (a source of the
 * user's own that emits neutral events): the builder then builds from the turn's text and calls.
 */
export function outputOf<O extends ProviderOutput>(
  builder: string,
  turn: FinishedTurn,
  format: O['format'],
): O | undefined {
  const { finish } = turn;
  if (finish === undefined) {
    throw nextRequestError(
      builder,
      'not-finished',
      'the turn has no finish: there is no final attempt to send back',
    );
  }
  const output = finish.output;
  if (output === undefined) return undefined;
  if (output.format !== format) {
    throw nextRequestError(
      builder,
      'wrong-format',
      `the final attempt's output is ${output.format}, not ${format}: use the builder of the adapter that read it`,
    );
  }
  return output as O;
}

/**
 * One answer per call id of the final attempt, in the calls' order: the tool's result when its effect happened
 * (ran now, or replayed from the ledger for a repeat), or its error when it did not. Throws a
 * `ProviderError` for a call without a result, a result for an id not among `calls`, two results for
 * one id, or a result that says the call still runs elsewhere.
 *
 * A result whose call is stamped with an attempt other than `attempt` (the final one) belongs to an abandoned
 * attempt (an early read that ran before the reset): it is passed over, since the final attempt's own call of
 * the same key is answered by its repeat. So all of a turn's `tool-result`s can be given as they came.
 */
export function answersFor(
  builder: string,
  calls: readonly OutputCall[],
  results: readonly ToolResultLike[],
  attempt: number | undefined,
): CallAnswer[] {
  const byId = new Map<string, ToolResultLike>();
  for (let i = 0; i < results.length; i++) {
    const result: unknown = results[i];
    if (!isToolResult(result)) {
      throw nextRequestError(
        builder,
        'not-a-result',
        `results[${i}] is not a tool-result event: ${describeValue(result)}`,
      );
    }
    const stamped = (result.call as { attempt?: unknown }).attempt;
    if (attempt !== undefined && typeof stamped === 'number' && stamped !== attempt) continue;
    const id = result.call.id;
    if (byId.has(id)) throw nextRequestError(builder, 'answered-twice', `two results answer call ${id}`, id);
    byId.set(id, result);
  }
  const answers: CallAnswer[] = [];
  for (const call of calls) {
    const result = byId.get(call.id);
    if (result === undefined) {
      throw nextRequestError(
        builder,
        'unanswered',
        `call ${call.id} (${call.name}) of the final attempt has no result: the provider rejects a request that leaves it unanswered`,
        call.id,
      );
    }
    byId.delete(call.id);
    const { status } = toolResultStatus(result);
    if (status === 'running') {
      throw nextRequestError(
        builder,
        'still-running',
        `call ${call.id} (${call.name}) still runs in another process: wait for its result`,
        call.id,
      );
    }
    answers.push(
      status === 'completed'
        ? { ok: true, value: result.result, result }
        : { ok: false, message: failureText(result), result },
    );
  }
  for (const id of byId.keys()) {
    throw nextRequestError(
      builder,
      'unknown-call',
      `a result answers call ${id}, which the final attempt does not have (an abandoned attempt's call?)`,
      id,
    );
  }
  return answers;
}

/** A failed call's answer text for the model: why it did not run. */
export function failureText(result: ToolResultLike): string {
  if (result.outcome === 'unknown-tool') return `no tool is named ${result.call.name}`;
  return result.error === undefined ? `the tool failed (${result.outcome})` : describeError(result.error);
}

/**
 * A tool's result as text, for the formats that answer with a string (Chat Completions `content`, Responses
 * `output`, Anthropic `tool_result` content): a string as it is, anything else as its JSON; `undefined` (a
 * tool that returned nothing) is the empty object's JSON, `{}`.
 */
export function resultText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '{}';
  return JSON.stringify(value) ?? String(value);
}

function isToolResult(value: unknown): value is ToolResultLike {
  if (typeof value !== 'object' || value === null) return false;
  const { type, call } = value as { type?: unknown; call?: unknown };
  return (
    type === 'tool-result' &&
    typeof call === 'object' &&
    call !== null &&
    typeof (call as { id?: unknown }).id === 'string'
  );
}
