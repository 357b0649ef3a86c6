// toGeminiContents(): the final attempt of a Gemini turn and the executor's results as the next request's
// `contents` entries — the model content as it streamed (each signature on its part), then one functionResponse
// per call — from fixtures through the real retrying pipeline, and every typed refusal.
import { fileURLToPath } from 'node:url';
import type { ToolResultLike, TurnEvent, TurnState } from 'cleanturn';
import { executeTools, MemoryEffectLedger } from 'cleanturn/effects';
import { geminiContent, ProviderError, toGeminiContents } from 'cleanturn/providers';
import { helpDesk } from 'cleanturn/testing';
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { GeminiChunk } from '../../src/providers/geminiContent.js';
import type { ReleasedCall } from '../../src/types.js';
import { collect } from '../support/collect.js';
import { attempts, retriedTurn } from '../support/providerTurns.js';
import { readPayloads } from '../support/sse.js';

const turnId = 'turn-42';
const fixture = (name: string) =>
  readPayloads(fileURLToPath(new URL(`../fixtures/gemini/${name}`, import.meta.url))) as GeminiChunk[];

/** The final turn state of a retried Gemini turn whose n-th attempt streams the n-th payload list. */
const finalTurn = (...payloads: GeminiChunk[][]): TurnState => {
  const states = collect(attempts(...payloads).pipe(retriedTurn(geminiContent(), turnId)));
  expect(states.error).toBeUndefined();
  return states.values.at(-1) as TurnState;
};

/** A tool-result event for a released call. */
const result = (
  call: ReleasedCall,
  outcome: string,
  fields: Partial<ToolResultLike> = {},
): ToolResultLike => ({
  type: 'tool-result',
  effectKey: call.effectKey,
  call,
  outcome,
  ...fields,
});
const ran = (turn: TurnState, values: unknown[]) =>
  turn.toolCalls.map((call, i) => result(call as ReleasedCall, 'executed', { result: values[i] }));

const signature = 'EpQCCpECAb4+9vt3kR1dZ0cQ7mJxW2s9YkVhLq8Zr0fN3uT5aP1bD4eG6hI8jK0lM2nO4pQ6rS8tU0vW2xY4z';
const thinking =
  '**Checking the refund policy**\n\nThe customer reports a damaged book. Damage in transit qualifies for a full refund.';

describe('toGeminiContents: the next request of a Gemini turn', () => {
  it('the model content as it streamed, each signature on its part, then one functionResponse per call', () => {
    const turn = finalTurn(fixture('thought-summary-then-signed-call.sse'));
    expect(toGeminiContents(turn, ran(turn, [{ refund_id: 'RF-1', status: 'refunded' }]))).toEqual([
      {
        role: 'model',
        parts: [
          { text: thinking, thought: true },
          { text: 'Checking order ORD-7781. ' },
          { functionCall: { name: 'issue_refund', args: helpDesk.refundArgs }, thoughtSignature: signature },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'issue_refund', response: { refund_id: 'RF-1', status: 'refunded' } } },
        ],
      },
    ]);
  });

  it('after a retry: nothing of the abandoned attempt, the final one exactly', () => {
    const full = fixture('thought-summary-then-signed-call.sse');
    // Attempt 1 is cut after its thoughts and text; attempt 2 streams the whole response.
    const abandoned = [
      full[0],
      full[1],
      full[2],
      { error: { code: 503, status: 'UNAVAILABLE' } },
    ] as GeminiChunk[];
    const turn = finalTurn(abandoned, full);
    expect(turn.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
    const contents = toGeminiContents(turn, ran(turn, ['refunded']));
    expect(contents[0]?.parts).toEqual([
      { text: thinking, thought: true },
      { text: 'Checking order ORD-7781. ' },
      { functionCall: { name: 'issue_refund', args: helpDesk.refundArgs }, thoughtSignature: signature },
    ]);
    expect(contents[1]).toEqual({
      role: 'user',
      parts: [{ functionResponse: { name: 'issue_refund', response: { output: 'refunded' } } }],
    });
  });

  it('parallel calls: the signature on the first call only, answers in the calls order', () => {
    const turn = finalTurn(fixture('parallel-calls-first-signed.sse'));
    const contents = toGeminiContents(
      turn,
      ran(turn, [{ status: 'shipped' }, { status: 'delivered' }]).reverse(),
    );
    expect(contents).toEqual([
      {
        role: 'model',
        parts: [
          {
            functionCall: { name: 'lookup_order', args: { order_id: 'ORD-7781' } },
            thoughtSignature: 'EpEgCo4gAb4+9vvWwdN+NkNiCCwrqvFI8uf9IiD2A47Bm4Sga0kUTm4e/QuEnsZn',
          },
          { functionCall: { name: 'lookup_order', args: { order_id: 'ORD-7782' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'lookup_order', response: { status: 'shipped' } } },
          { functionResponse: { name: 'lookup_order', response: { status: 'delivered' } } },
        ],
      },
    ]);
  });

  it("a call id the provider sent is the functionResponse's id", () => {
    const turn = finalTurn(fixture('call-with-id.sse'));
    expect(toGeminiContents(turn, ran(turn, [{ ok: true }]))).toEqual([
      {
        role: 'model',
        parts: [{ functionCall: { id: 'fc_7d1e0b2a', name: 'issue_refund', args: helpDesk.refundArgs } }],
      },
      {
        role: 'user',
        parts: [{ functionResponse: { id: 'fc_7d1e0b2a', name: 'issue_refund', response: { ok: true } } }],
      },
    ]);
  });

  it.each([
    ['a plain object, as it is', { refund_id: 'RF-1' }, { refund_id: 'RF-1' }],
    ['a string, under output', 'refunded', { output: 'refunded' }],
    ['a number, under output', 34.9, { output: 34.9 }],
    ['an array, under output', ['RF-1', 'RF-2'], { output: ['RF-1', 'RF-2'] }],
    ['null, under output', null, { output: null }],
    ['nothing, as {}', undefined, {}],
    [
      'an object with an error field of its own, under output',
      { error: 'none' },
      { output: { error: 'none' } },
    ],
    ['an object with an output field of its own, under output', { output: 1 }, { output: { output: 1 } }],
    ['a Date, under output', new Date(0), { output: new Date(0) }],
  ])('a result that is %s', (_, value, response) => {
    const turn = finalTurn(fixture('text-and-call.sse'));
    const answer = toGeminiContents(turn, ran(turn, [value]))[1];
    expect(answer).toEqual({
      role: 'user',
      parts: [{ functionResponse: { name: 'issue_refund', response } }],
    });
  });

  it('a failure is { error: message }; an unknown tool says so', () => {
    const turn = finalTurn(fixture('parallel-calls-first-signed.sse'));
    const [first, second] = turn.toolCalls as ReleasedCall[];
    const results = [
      result(first as ReleasedCall, 'failed', { error: new Error('the order service timed out') }),
      result(second as ReleasedCall, 'unknown-tool'),
    ];
    expect(toGeminiContents(turn, results)[1]?.parts).toEqual([
      { functionResponse: { name: 'lookup_order', response: { error: 'the order service timed out' } } },
      { functionResponse: { name: 'lookup_order', response: { error: 'no tool is named lookup_order' } } },
    ]);
  });

  it("a repeat is answered with its key's recorded result", () => {
    const turn = finalTurn(fixture('text-and-call.sse'));
    const call = turn.toolCalls[0] as ReleasedCall;
    const repeat = { ...call, type: 'tool-call-repeat' } as ReleasedCall;
    const answer = toGeminiContents(turn, [result(repeat, 'replayed', { result: { refund_id: 'RF-1' } })])[1];
    expect(answer?.parts).toEqual([
      { functionResponse: { name: 'issue_refund', response: { refund_id: 'RF-1' } } },
    ]);
  });

  it('a done turn gives the model content alone; code the model ran stays in it', () => {
    const turn = finalTurn(fixture('code-execution.sse'));
    expect(toGeminiContents(turn, [])).toEqual([
      {
        role: 'model',
        parts: [
          {
            executableCode: { language: 'PYTHON', code: 'print(round(34.90 * 0.15, 2))' },
            thoughtSignature: 'EjQKMgFyyNp8VRG2uDen0QENDjUJEy6ZQlvEGUhI8VcgTgNaspEC3M5Cao6lhYRG',
          },
          { codeExecutionResult: { outcome: 'OUTCOME_OK', output: '5.24\n' } },
          {
            text: 'The restocking fee would be $5.24, but it is waived for damaged items.',
            thoughtSignature: 'EjQKMgFyyNp8EcK2k/joUmmIxJlqtIvdJP/1F+ziwsCn9P4uyk2ZNeBiYz2Um4GX',
          },
        ],
      },
    ]);
  });

  it('an attempt with no parts (a blocked prompt) gives nothing to append', () => {
    expect(toGeminiContents(finalTurn(fixture('blocked-prompt.sse')), [])).toEqual([]);
  });

  it('the entries are copies: changing them leaves the turn as it was', () => {
    const turn = finalTurn(fixture('thought-summary-then-signed-call.sse'));
    const first = toGeminiContents(turn, ran(turn, ['ok']));
    const call = first[0]?.parts[2] as { functionCall: { args: Record<string, unknown> } };
    call.functionCall.args.amount = 'none';
    expect(toGeminiContents(turn, ran(turn, ['ok']))[0]?.parts[2]).toEqual({
      functionCall: { name: 'issue_refund', args: helpDesk.refundArgs },
      thoughtSignature: signature,
    });
  });

  it("a finish without output (a neutral source): the turn's text and calls, with their ids", () => {
    const turn = {
      finish: { type: 'finish', reason: 'tool-calls', attempt: 1 },
      text: 'Refunding. ',
      toolCalls: [{ id: 'c1', name: 'issue_refund', args: helpDesk.refundArgs }],
    } as const;
    const call = { ...turn.toolCalls[0], type: 'tool-call', attempt: 1, effectKey: 'k1' } as ReleasedCall;
    expect(toGeminiContents(turn, [result(call, 'executed', { result: 'ok' })])).toEqual([
      {
        role: 'model',
        parts: [
          { text: 'Refunding. ' },
          { functionCall: { id: 'c1', name: 'issue_refund', args: helpDesk.refundArgs } },
        ],
      },
      {
        role: 'user',
        parts: [{ functionResponse: { id: 'c1', name: 'issue_refund', response: { output: 'ok' } } }],
      },
    ]);
  });

  it('through the real executor: each call once, its result in the answer', async () => {
    const seen: TurnEvent[] = [];
    const turn = collect(
      attempts(fixture('parallel-calls-first-signed.sse')).pipe(retriedTurn(geminiContent(), turnId, seen)),
    ).values.at(-1) as TurnState;
    const runs: string[] = [];
    const lookup = (args: unknown) => {
      const { order_id } = args as { order_id: string };
      runs.push(order_id);
      return { order_id, status: 'delivered' };
    };
    const ledger = new MemoryEffectLedger();
    const results = await lastValueFrom(
      from(seen).pipe(executeTools({ lookup_order: lookup }, { turnId, ledger }), toArray()),
    );
    expect(runs).toEqual(['ORD-7781', 'ORD-7782']);
    expect(toGeminiContents(turn, results)[1]?.parts).toEqual([
      { functionResponse: { name: 'lookup_order', response: { order_id: 'ORD-7781', status: 'delivered' } } },
      { functionResponse: { name: 'lookup_order', response: { order_id: 'ORD-7782', status: 'delivered' } } },
    ]);
  });
});

describe('toGeminiContents: a request the provider would reject is a ProviderError', () => {
  const refusal = (code: string, callId?: string) => (error: unknown) => {
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ code, builder: 'toGeminiContents', callId, retryable: false });
  };
  const thrown = (build: () => unknown) => {
    try {
      build();
    } catch (error) {
      return error;
    }
    throw new Error('expected the builder to throw');
  };

  it('a turn without a finish: not-finished', () => {
    const error = thrown(() => toGeminiContents({ finish: undefined, text: '', toolCalls: [] }, []));
    refusal('not-finished')(error);
  });

  it("another format's output: wrong-format", () => {
    const finish = { type: 'finish', reason: 'stop', output: { format: 'anthropic-messages' } } as const;
    refusal('wrong-format')(thrown(() => toGeminiContents({ finish, text: '', toolCalls: [] }, [])));
  });

  it('a call without a result: unanswered, naming the call', () => {
    const turn = finalTurn(fixture('parallel-calls-first-signed.sse'));
    refusal(
      'unanswered',
      'gemini-call-1',
    )(thrown(() => toGeminiContents(turn, ran(turn, ['ok']).slice(0, 1))));
  });

  it('a result for a call the final attempt does not have: unknown-call', () => {
    const turn = finalTurn(fixture('text-and-call.sse'));
    const stranger = { ...(turn.toolCalls[0] as ReleasedCall), id: 'gemini-call-9' } as ReleasedCall;
    const results = [...ran(turn, ['ok']), result(stranger, 'executed', { result: 'ok' })];
    refusal('unknown-call', 'gemini-call-9')(thrown(() => toGeminiContents(turn, results)));
  });

  it('a call that still runs elsewhere: still-running', () => {
    const turn = finalTurn(fixture('text-and-call.sse'));
    const results = [result(turn.toolCalls[0] as ReleasedCall, 'in-progress')];
    refusal('still-running', 'gemini-call-0')(thrown(() => toGeminiContents(turn, results)));
  });

  it("a result of an abandoned attempt's call is passed over", () => {
    const full = fixture('text-and-call.sse');
    const turn = finalTurn([...full.slice(0, 2), { error: { code: 503 } }], full);
    const final = turn.toolCalls[0] as ReleasedCall;
    const early = result({ ...final, attempt: 1 } as ReleasedCall, 'executed', { result: 'early' });
    const answer = toGeminiContents(turn, [early, ...ran(turn, ['final'])])[1];
    expect(answer?.parts).toEqual([
      { functionResponse: { name: 'issue_refund', response: { output: 'final' } } },
    ]);
  });
});
