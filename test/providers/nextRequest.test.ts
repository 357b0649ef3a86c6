// The checks every next-request builder shares: the final attempt's output, and one answer per call id.
import type { ToolResultLike } from 'cleanturn';
import { ProviderError } from 'cleanturn/providers';
import { at, finish, keyed, repeated } from 'cleanturn/testing';
import { describe, expect, it } from 'vitest';
import { answersFor, outputOf, resultText } from '../../src/providers/nextRequest.js';
import type { ReleasedCall } from '../../src/types.js';

const lookup = { type: 'tool-call', id: 'c2', name: 'lookup_order', args: { order_id: 'ORD-7781' } } as const;
const refund = { type: 'tool-call', id: 'c7', name: 'issue_refund', args: { order_id: 'ORD-7781' } } as const;

function result(call: ReleasedCall, outcome: string, fields: Partial<ToolResultLike> = {}): ToolResultLike {
  return { type: 'tool-result', effectKey: call.effectKey, call, outcome, ...fields };
}

/** The code of the ProviderError `run` throws. */
function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).retryable).toBe(false);
    return (error as ProviderError).code;
  }
  return undefined;
}

describe('answersFor', () => {
  const c2 = keyed('turn-42', 2, lookup);
  const c7 = keyed('turn-42', 2, refund);
  const calls = [c2, c7];

  it('gives one answer per call id, in the order of the calls: results, failures as their message', () => {
    const answers = answersFor(
      'toX',
      calls,
      [
        result(c7, 'failed', { error: new Error('card declined') }),
        result(c2, 'executed', { result: { status: 'shipped' } }),
      ],
      2,
    );
    expect(answers.map((a) => (a.ok ? a.value : a.message))).toEqual([
      { status: 'shipped' },
      'card declined',
    ]);
  });

  it('answers a repeat with its recorded result, and an unknown tool with what happened', () => {
    const again = repeated('turn-42', 2, refund);
    const [replayed, unknown] = answersFor(
      'toX',
      [again, c2],
      [result(again, 'replayed', { result: { refund: 'R-1' } }), result(c2, 'unknown-tool')],
      2,
    );
    expect(replayed).toMatchObject({ ok: true, value: { refund: 'R-1' } });
    expect(unknown).toMatchObject({ ok: false, message: 'no tool is named lookup_order' });
  });

  it('passes over the results of an abandoned attempt: the repeat of the final attempt answers its key', () => {
    const early = keyed('turn-42', 1, { ...lookup, id: 'c1' });
    const answers = answersFor(
      'toX',
      [c2],
      [result(early, 'executed', { result: 1 }), result(c2, 'replayed', { result: 1 })],
      2,
    );
    expect(answers).toHaveLength(1);
  });

  it('refuses a call without a result, a result for another call, two results for one, one still running', () => {
    const executed = (call: ReleasedCall) => result(call, 'executed', { result: 'ok' });
    expect(codeOf(() => answersFor('toX', calls, [executed(c2)], 2))).toBe('unanswered');
    const stranger = keyed('turn-42', 2, { ...refund, id: 'c9' });
    expect(codeOf(() => answersFor('toX', calls, [executed(c2), executed(c7), executed(stranger)], 2))).toBe(
      'unknown-call',
    );
    expect(codeOf(() => answersFor('toX', calls, [executed(c2), executed(c2), executed(c7)], 2))).toBe(
      'answered-twice',
    );
    expect(codeOf(() => answersFor('toX', calls, [executed(c2), result(c7, 'in-progress')], 2))).toBe(
      'still-running',
    );
    expect(codeOf(() => answersFor('toX', calls, [executed(c2), { type: 'text' } as never], 2))).toBe(
      'not-a-result',
    );
  });

  it('names the builder and the call in its message', () => {
    expect(() => answersFor('toAnthropicMessages', calls, [], 2)).toThrow(
      /^toAnthropicMessages: call c2 \(lookup_order\) of the final attempt has no result/,
    );
  });
});

describe('outputOf', () => {
  it("returns the final attempt's output of the format, or undefined when its finish has none", () => {
    const output = { format: 'gemini', parts: [] };
    expect(outputOf('toGeminiContents', { finish: at(2, { ...finish('stop'), output }) }, 'gemini')).toBe(
      output,
    );
    expect(outputOf('toGeminiContents', { finish: at(2, finish('stop')) }, 'gemini')).toBeUndefined();
  });

  it('refuses a turn without a finish, and an output of another format', () => {
    expect(codeOf(() => outputOf('toGeminiContents', { finish: undefined }, 'gemini'))).toBe('not-finished');
    const finishWith = at(1, { ...finish('stop'), output: { format: 'anthropic-messages' } });
    expect(codeOf(() => outputOf('toGeminiContents', { finish: finishWith }, 'gemini'))).toBe('wrong-format');
  });
});

describe('resultText', () => {
  it('keeps a string, writes anything else as JSON, and nothing as {}', () => {
    expect(resultText('shipped')).toBe('shipped');
    expect(resultText({ status: 'shipped' })).toBe('{"status":"shipped"}');
    expect(resultText(undefined)).toBe('{}');
    expect(resultText(null)).toBe('null');
  });
});
