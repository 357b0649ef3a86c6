// toAiSdkMessages: the final attempt of an aiSdkParts turn (the fixtures of test/fixtures/ai-sdk, through the
// real pipeline) plus the executor's results, as ai@6 ModelMessages; one answer per call id; the typed errors.
import { fileURLToPath } from 'node:url';
import { accumulateTurn, attemptPipeline, cleanTurn, type ToolResultLike, type TurnState } from 'cleanturn';
import { executeTools, MemoryEffectLedger } from 'cleanturn/effects';
import { aiSdkParts, ProviderError, toAiSdkMessages } from 'cleanturn/providers';
import { helpDesk } from 'cleanturn/testing';
import { from, lastValueFrom, share, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { AiSdkOutput, AiSdkStreamPart } from '../../src/providers/aiSdkParts.js';
import type { FinishEvent } from '../../src/types.js';
import { collect } from '../support/collect.js';
import { readPayloads } from '../support/sse.js';
import { toolResult } from '../support/toolResults.js';

const turnId = 'turn-42';
const dir = fileURLToPath(new URL('../fixtures/ai-sdk/', import.meta.url));
const fixture = (name: string) => readPayloads(`${dir}${name}`) as AiSdkStreamPart[];

/** The final turn state of a fixture through the adapter and the clean turn. */
function turnOf(name: string): TurnState {
  const states = collect(
    from(fixture(name)).pipe(attemptPipeline(aiSdkParts()), cleanTurn({ turnId }), accumulateTurn()),
  );
  expect(states.error).toBeUndefined();
  const turn = states.values.at(-1);
  if (turn === undefined) throw new Error('no turn state');
  return turn;
}

/** The executed result of each released call of the turn: `value(name)`. */
const executed = (turn: TurnState, value: (name: string) => unknown = () => ({ refund_id: 're_7781' })) =>
  turn.toolCalls.map((call) => toolResult(call as never, 'executed', { result: value(call.name) }));

const refundResult = (id: string, output: unknown = { type: 'json', value: { refund_id: 're_7781' } }) => ({
  type: 'tool-result',
  toolCallId: id,
  toolName: 'issue_refund',
  output,
});
const refundCall = (id: string, more: object = {}) => ({
  type: 'tool-call',
  toolCallId: id,
  toolName: 'issue_refund',
  input: helpDesk.refundArgs,
  ...more,
});

describe('toAiSdkMessages: the final attempt as ai@6 messages', () => {
  it('Anthropic thinking: the signed and the redacted reasoning before the text and the call, then the answer', () => {
    const turn = turnOf('anthropic-thinking-signature-redacted-then-tool.jsonl');
    const id = 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP';
    const output = turn.finish?.output as AiSdkOutput;
    expect(toAiSdkMessages(turn, executed(turn))).toEqual([
      { role: 'assistant', content: output.content },
      { role: 'tool', content: [refundResult(id)] },
    ]);
    expect(output.content.map((part) => part.type)).toEqual(['reasoning', 'reasoning', 'text', 'tool-call']);
    expect(output.content[0]).toMatchObject({
      providerOptions: { anthropic: { signature: expect.any(String) } },
    });
    expect(output.content[1]).toEqual({
      type: 'reasoning',
      text: '',
      providerOptions: { anthropic: { redactedData: expect.any(String) } },
    });
  });

  it('OpenAI encrypted reasoning: both summary parts with the item id, the encrypted content, the call item id', () => {
    const turn = turnOf('openai-encrypted-reasoning-summaries-then-call.jsonl');
    const [assistant, tool] = toAiSdkMessages(
      turn,
      executed(turn, () => 'refunded'),
    );
    expect(assistant).toEqual({
      role: 'assistant',
      content: [
        {
          type: 'reasoning',
          text: '**Checking the order**\n\nThe customer wants a refund for a damaged book.',
          providerOptions: { openai: { itemId: 'rs_68f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5' } },
        },
        {
          type: 'reasoning',
          text: '**Issuing the refund**\n\nA full refund fits the policy.',
          providerOptions: {
            openai: {
              itemId: 'rs_68f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5',
              reasoningEncryptedContent: expect.stringMatching(/^gAAAAA/),
            },
          },
        },
        refundCall('call_Gh2Ij3Kl4Mn5Op6Qr7St8Uv9', {
          providerOptions: { openai: { itemId: 'fc_68f1a2b3c4d5e6f7a8b9c0d1e2f3a4c6' } },
        }),
      ],
    });
    // a string result is text, as ai@6 sends a string a tool returned
    expect(tool).toEqual({
      role: 'tool',
      content: [refundResult('call_Gh2Ij3Kl4Mn5Op6Qr7St8Uv9', { type: 'text', value: 'refunded' })],
    });
  });

  it('Gemini: each thought signature on the part that carried it (the text part, the call)', () => {
    const turn = turnOf('gemini-thought-signatures-on-text-and-call.jsonl');
    const [assistant] = toAiSdkMessages(turn, executed(turn));
    expect(assistant?.content).toEqual([
      { type: 'reasoning', text: '**Refund policy**\n\nA book that arrived damaged gets a full refund.' },
      {
        type: 'text',
        text: 'Checking order ORD-7781. ',
        providerOptions: { google: { thoughtSignature: expect.stringMatching(/^CtIB/) } },
      },
      refundCall('3xQfW9pLm2RkT8vY', {
        providerOptions: { google: { thoughtSignature: expect.stringMatching(/^CiQB/) } },
      }),
    ]);
  });

  it('pause_turn: the assistant message alone, the server tool and its encrypted result in it', () => {
    const turn = turnOf('anthropic-server-tool-pause-turn.jsonl');
    expect(turn.finish).toMatchObject({ reason: 'other', paused: true });
    const messages = toAiSdkMessages(turn, []);
    const output = turn.finish?.output as AiSdkOutput;
    expect(messages).toEqual([{ role: 'assistant', content: output.content }]);
    expect(messages[0]?.content.map((part) => part.type)).toEqual(['text', 'tool-call', 'tool-result']);
  });

  it("a multi-step run: each step's assistant message, then its tool message (the SDK's results in call order)", () => {
    const turn = turnOf('multi-step-sdk-tool-then-client-call.jsonl');
    const C1 = 'call_Q2wE3rT4yU5iO6pA7sD8fG9h';
    expect(toAiSdkMessages(turn, executed(turn))).toEqual([
      {
        role: 'assistant',
        content: [
          {
            type: 'tool-call',
            toolCallId: 'call_Lookup2aB3cD4eF5gH6iJ7kL8',
            toolName: 'lookup_order',
            input: { order_id: 'ORD-7781' },
          },
          { type: 'text', text: 'Looking the order up.' },
          {
            type: 'tool-call',
            toolCallId: 'call_Stock3bC4dE5fG6hI7jK8lM9n',
            toolName: 'check_stock',
            input: { isbn: '978-0141439518' },
          },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call_Lookup2aB3cD4eF5gH6iJ7kL8',
            toolName: 'lookup_order',
            output: { type: 'json', value: { status: 'delivered', damaged: true } },
          },
          {
            type: 'tool-result',
            toolCallId: 'call_Stock3bC4dE5fG6hI7jK8lM9n',
            toolName: 'check_stock',
            output: { type: 'error-text', value: 'the stock service timed out' },
          },
        ],
      },
      {
        role: 'assistant',
        content: [{ type: 'text', text: 'The book arrived damaged: refunding it.' }, refundCall(C1)],
      },
      { role: 'tool', content: [refundResult(C1)] },
    ]);
  });

  it('a step whose tools all ran in the SDK and then stopped: its results are the tool message, nothing to answer', () => {
    const turn = turnOf('multi-step.jsonl');
    const messages = toAiSdkMessages(turn, []);
    expect(messages.map((m) => [m.role, m.content.map((part) => part.type)])).toEqual([
      ['assistant', ['tool-call']],
      ['tool', ['tool-result']],
      ['assistant', ['text']],
    ]);
  });

  it('the UI message stream: the server tool stays in the assistant message, the client call is answered', () => {
    const turn = turnOf('ui-reasoning-signature-and-server-tool.sse');
    const messages = toAiSdkMessages(turn, executed(turn));
    expect(messages.map((m) => [m.role, m.content.map((part) => part.type)])).toEqual([
      ['assistant', ['reasoning', 'tool-call', 'tool-result', 'text', 'tool-call']],
      ['tool', ['tool-result']],
    ]);
    expect(messages[1]?.content).toEqual([refundResult('toolu_01UiRefundGgHhIiJjKk')]);
  });

  it('a run with executeTools: the real results, a failure as error-text', async () => {
    const turnEvents$ = from(fixture('parallel-calls.jsonl')).pipe(
      attemptPipeline(aiSdkParts()),
      cleanTurn({ turnId }),
      share(),
    );
    let n = 0;
    const handlers = {
      lookup_order: () => {
        if (n++ === 1) throw Object.assign(new Error('the order service is down'), { retryable: false });
        return { status: 'delivered' };
      },
    };
    const [turn, results] = await Promise.all([
      lastValueFrom(turnEvents$.pipe(accumulateTurn())),
      lastValueFrom(
        turnEvents$.pipe(executeTools(handlers, { turnId, ledger: new MemoryEffectLedger() }), toArray()),
      ),
    ]);
    expect(toAiSdkMessages(turn, results)[1]).toEqual({
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'call_Par1aaaaaaaaaaaaaaaaaaaa',
          toolName: 'lookup_order',
          output: { type: 'json', value: { status: 'delivered' } },
        },
        {
          type: 'tool-result',
          toolCallId: 'call_Par2bbbbbbbbbbbbbbbbbbbb',
          toolName: 'lookup_order',
          output: { type: 'error-text', value: expect.stringContaining('the order service is down') },
        },
      ],
    });
  });

  it('the messages are fresh: changing them leaves the turn output as it was', () => {
    const turn = turnOf('gemini-thought-signatures-on-text-and-call.jsonl');
    const before = structuredClone(turn.finish?.output);
    const [assistant] = toAiSdkMessages(turn, executed(turn));
    const part = assistant?.content[1] as unknown as { providerOptions: { google: Record<string, unknown> } };
    part.providerOptions.google.thoughtSignature = 'changed';
    assistant?.content.pop();
    expect(turn.finish?.output).toEqual(before);
  });

  it('a source of neutral events (no output): the text and the released calls; no calls, the text alone', () => {
    const call = {
      type: 'tool-call',
      id: 'c7',
      name: 'issue_refund',
      args: helpDesk.refundArgs,
      attempt: 2,
      effectKey: 'k7',
    } as const;
    const finish: FinishEvent & { attempt: number } = { type: 'finish', reason: 'tool-calls', attempt: 2 };
    const turn = { finish, text: 'Refunding.', toolCalls: [call] };
    expect(
      toAiSdkMessages(turn, [toolResult(call, 'replayed', { result: { refund_id: 're_7781' } })]),
    ).toEqual([
      { role: 'assistant', content: [{ type: 'text', text: 'Refunding.' }, refundCall('c7')] },
      { role: 'tool', content: [refundResult('c7')] },
    ]);
    const done = { finish: { ...finish, reason: 'stop' as const }, text: 'Done.', toolCalls: [] };
    expect(toAiSdkMessages(done, [])).toEqual([
      { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
    ]);
    expect(toAiSdkMessages({ ...done, text: '' }, [])).toEqual([]);
  });

  it("a tool that returned nothing is json null; an abandoned attempt's result is passed over", () => {
    const turn = turnOf('text-and-tool.jsonl');
    const [call] = turn.toolCalls;
    if (call === undefined) throw new Error('no call');
    const stale = toolResult({ ...call, id: 'call_abandoned', attempt: 0 } as never, 'executed', {
      result: 1,
    });
    expect(toAiSdkMessages(turn, [stale, toolResult(call as never, 'executed')])[1]).toEqual({
      role: 'tool',
      content: [refundResult(call.id, { type: 'json', value: null })],
    });
  });
});

describe('toAiSdkMessages: a request the provider would reject is a typed error', () => {
  const turn = turnOf('text-and-tool.jsonl');
  const [call] = turn.toolCalls;
  const answer = toolResult(call as never, 'executed', { result: 1 });
  const problem = (make: () => unknown) => {
    try {
      make();
    } catch (error) {
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ builder: 'toAiSdkMessages', retryable: false });
      return (error as ProviderError).code;
    }
    throw new Error('no error');
  };

  it.each<[string, () => unknown, string]>([
    ['no finish', () => toAiSdkMessages({ ...turn, finish: undefined }, []), 'not-finished'],
    [
      "another format's output",
      () =>
        toAiSdkMessages(
          { ...turn, finish: { type: 'finish', reason: 'stop', output: { format: 'gemini' } } },
          [],
        ),
      'wrong-format',
    ],
    ['a call without a result', () => toAiSdkMessages(turn, []), 'unanswered'],
    [
      'a result of a call the final attempt lacks',
      () => toAiSdkMessages(turn, [answer, toolResult({ ...call, id: 'call_other' } as never, 'executed')]),
      'unknown-call',
    ],
    ['two results for one call', () => toAiSdkMessages(turn, [answer, answer]), 'answered-twice'],
    [
      'a call still running elsewhere',
      () => toAiSdkMessages(turn, [toolResult(call as never, 'in-progress')]),
      'still-running',
    ],
    [
      'something that is not a result',
      () => toAiSdkMessages(turn, [{ type: 'text' } as unknown as ToolResultLike]),
      'not-a-result',
    ],
  ])('%s', (_what, make, code) => {
    expect(problem(make)).toBe(code);
  });

  it('a server tool is never a call to answer: answering it is an unknown call', () => {
    const paused = turnOf('anthropic-server-tool-pause-turn.jsonl');
    const search = {
      type: 'tool-call',
      id: 'srvtoolu_01WebSearchPauseAaBbCc',
      name: 'web_search',
      args: {},
      attempt: 1,
      effectKey: 'k',
    } as const;
    expect(problem(() => toAiSdkMessages(paused, [toolResult(search, 'executed')]))).toBe('unknown-call');
  });
});
