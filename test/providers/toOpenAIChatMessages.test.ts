// toOpenAIChatMessages(): the final attempt of a turn, read by openaiChat() from fixtures of the recorded shapes
// (DeepSeek's reasoning_content, OpenRouter's reasoning_details), and the executor's results, as the messages of
// the next Chat Completions request; the typed errors of a request the API would reject; the neutral fallback;
// and the doc comment's example, compiled against the official SDK's types.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { accumulateTurn, attemptPipeline, cleanTurn, type TurnEvent, type TurnState } from 'cleanturn';
import { executeTools, MemoryEffectLedger } from 'cleanturn/effects';
import { openaiChat, ProviderError, toOpenAIChatMessages } from 'cleanturn/providers';
import { at, call, finish, helpDesk, keyed, repeated } from 'cleanturn/testing';
import { from, last, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { checkBlocks, extractBlocks, typescriptLanguages } from '../../scripts/readmeCode.js';
import type { OpenAIChatChunk, OpenAIChatInput, OpenAIChatOutput } from '../../src/providers/openaiChat.js';
import type { ReleasedCall } from '../../src/types.js';
import { attempts, retriedTurn } from '../support/providerTurns.js';
import { parseSse } from '../support/sse.js';
import { toolResult } from '../support/toolResults.js';

const turnId = 'turn-42';
const dir = fileURLToPath(new URL('../fixtures/openai-chat/', import.meta.url));
/** A fixture's payloads, `[DONE]` passed on as the string it is. */
const fixture = (name: string): OpenAIChatInput[] =>
  parseSse(readFileSync(`${dir}${name}`, 'utf8')).map((e) =>
    e.data === '[DONE]' ? '[DONE]' : (JSON.parse(e.data) as OpenAIChatChunk),
  );

/** The last turn state of a fixture through the attempt pipeline and the clean turn. */
const turnOf = (name: string): Promise<TurnState> =>
  lastValueFrom(
    from(fixture(name)).pipe(attemptPipeline(openaiChat()), cleanTurn({ turnId }), accumulateTurn(), last()),
  );

const executed = (c: ReleasedCall, result: unknown) => toolResult(c, 'executed', { result });
const errorOf = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a ProviderError');
};
const first = (turn: TurnState): ReleasedCall => {
  const found = turn.toolCalls[0];
  if (found === undefined) throw new Error('no call');
  return found as ReleasedCall;
};

const refundText = '{"order_id":"ORD-7781","amount":"full"}';
const spacedRefundText = '{"order_id": "ORD-7781", "amount": "full"}';

describe('toOpenAIChatMessages: the assistant message as sent, then one tool message per call id', () => {
  it('DeepSeek thinking mode: reasoning_content back with the call, the result as JSON text', async () => {
    const turn = await turnOf('deepseek-reasoning-content-then-call.sse');
    const messages = toOpenAIChatMessages(turn, [
      executed(first(turn), { refund_id: 're_1', status: 'refunded' }),
    ]);
    expect(messages).toEqual([
      {
        role: 'assistant',
        content: null,
        reasoning_content:
          "The customer's book arrived damaged, so a full refund of ORD-7781. I should call issue_refund.",
        tool_calls: [
          {
            id: 'call_00_Kd8sQ2vLx7Rm4TpW9nYc1BzE',
            type: 'function',
            function: { name: 'issue_refund', arguments: refundText },
          },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'call_00_Kd8sQ2vLx7Rm4TpW9nYc1BzE',
        content: '{"refund_id":"re_1","status":"refunded"}',
      },
    ]);
  });

  it('OpenRouter: reasoning_details back exactly as merged from the stream, signature included', async () => {
    const turn = await turnOf('openrouter-claude-reasoning-details-signature.sse');
    const [assistant, answer] = toOpenAIChatMessages(turn, [executed(first(turn), 'refunded')]);
    const output = turn.finish?.output as OpenAIChatOutput;
    expect(assistant).toEqual({
      role: 'assistant',
      content: 'Checking order ORD-7781. ',
      reasoning: output.message.reasoning,
      reasoning_details: output.message.reasoning_details,
      tool_calls: [
        {
          id: 'toolu_01Hx4Kq8VbN2mZ7cR5tY9wLp',
          type: 'function',
          function: { name: 'issue_refund', arguments: spacedRefundText },
        },
      ],
    });
    expect(assistant).toMatchObject({
      reasoning_details: [{ type: 'reasoning.text', signature: expect.stringMatching(/^EqQBCkYI/) }],
    });
    expect(answer).toEqual({
      role: 'tool',
      tool_call_id: 'toolu_01Hx4Kq8VbN2mZ7cR5tY9wLp',
      content: 'refunded',
    });
  });

  it('Gemini through OpenRouter: the thought signature entry stays apart from the text at the same index', async () => {
    const turn = await turnOf('openrouter-gemini-text-and-signature-same-index.sse');
    const [assistant] = toOpenAIChatMessages(turn, [executed(first(turn), { ok: true })]);
    expect(assistant).toMatchObject({
      reasoning_details: [
        { type: 'reasoning.text', index: 0 },
        { type: 'reasoning.encrypted', index: 0, id: 'tool_issue_refund_Zr5Wm1Qx8Kc3Vn7Tb2Lp' },
      ],
    });
  });

  it('parallel calls: the tool messages in the order of tool_calls, whatever the order of the results', async () => {
    const turn = await turnOf('parallel-interleaved.sse');
    const [lookup, refund] = turn.toolCalls as ReleasedCall[];
    if (lookup === undefined || refund === undefined) throw new Error('two calls expected');
    const messages = toOpenAIChatMessages(turn, [
      executed(refund, 'refunded'),
      executed(lookup, { status: 'delivered' }),
    ]);
    expect(messages.slice(1)).toEqual([
      { role: 'tool', tool_call_id: 'call_R1a8Xq2Wm5Nv9Bt3Lc7Kp0Zs', content: '{"status":"delivered"}' },
      { role: 'tool', tool_call_id: 'call_G4hJ6kL8mN0pQ2rS4tU6vW8x', content: 'refunded' },
    ]);
  });

  it('a failure is answered with a readable error; a repeat with its recorded result; nothing is {}', async () => {
    const turn = await turnOf('parallel-interleaved.sse');
    const [lookup, refund] = turn.toolCalls as ReleasedCall[];
    if (lookup === undefined || refund === undefined) throw new Error('two calls expected');
    const failed = toolResult(refund, 'failed', { error: { name: 'PaymentError', message: 'card expired' } });
    const messages = toOpenAIChatMessages(turn, [
      toolResult(lookup, 'replayed', { result: undefined }),
      failed,
    ]);
    expect(messages.slice(1)).toEqual([
      { role: 'tool', tool_call_id: 'call_R1a8Xq2Wm5Nv9Bt3Lc7Kp0Zs', content: '{}' },
      {
        role: 'tool',
        tool_call_id: 'call_G4hJ6kL8mN0pQ2rS4tU6vW8x',
        content: expect.stringMatching(/^Error: .*card expired/),
      },
    ]);
    const unknown = toOpenAIChatMessages(turn, [executed(lookup, 'x'), toolResult(refund, 'unknown-tool')]);
    expect(unknown.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_G4hJ6kL8mN0pQ2rS4tU6vW8x',
      content: 'Error: no tool is named issue_refund',
    });
  });

  it('a done turn: the assistant message alone, with its reasoning', async () => {
    const turn = await turnOf('openrouter-encrypted-reasoning-only.sse');
    expect(toOpenAIChatMessages(turn, [])).toEqual([
      {
        role: 'assistant',
        content: 'Your refund for ORD-7781 has started.',
        reasoning_details: (turn.finish?.output as OpenAIChatOutput | undefined)?.message.reasoning_details,
      },
    ]);
  });

  it('the messages are copies: changing the request does not change the turn', async () => {
    const turn = await turnOf('openrouter-claude-reasoning-details-signature.sse');
    const before = JSON.stringify(turn.finish?.output);
    const [assistant] = toOpenAIChatMessages(turn, [executed(first(turn), 'ok')]);
    if (assistant?.role !== 'assistant') throw new Error('assistant first');
    (assistant.reasoning_details?.[0] as { text: string }).text = 'edited';
    (assistant.tool_calls?.[0] as { id: string }).id = 'edited';
    expect(JSON.stringify(turn.finish?.output)).toBe(before);
  });

  it('after a retry: the final attempt only, and a result of the abandoned attempt is passed over', async () => {
    const source = attempts(fixture('truncated-no-done.sse'), fixture('text-and-call.sse'));
    const seen: TurnEvent[] = [];
    const turn = await lastValueFrom(source.pipe(retriedTurn(openaiChat(), turnId, seen), last()));
    const stale = toolResult(
      keyed(turnId, 1, call('call_Tn5cR2vX8bQ1wE4yU7iO0pLk', 'issue_refund', helpDesk.refundArgs)),
      'executed',
      {
        result: 'first',
      },
    );
    const messages = toOpenAIChatMessages(turn, [stale, executed(first(turn), 'refunded')]);
    expect(JSON.stringify(messages)).not.toContain('call_Tn5cR2vX8bQ1wE4yU7iO0pLk');
    expect(messages).toEqual([
      {
        role: 'assistant',
        content: 'Checking order ORD-7781. ',
        tool_calls: [
          {
            id: 'call_7Hq2mWbK9sXv4RtY1nCz0LdE',
            type: 'function',
            function: { name: 'issue_refund', arguments: refundText },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_7Hq2mWbK9sXv4RtY1nCz0LdE', content: 'refunded' },
    ]);
  });

  it("with executeTools' own results", async () => {
    const events = await lastValueFrom(
      from(fixture('deepseek-reasoning-content-then-call.sse')).pipe(
        attemptPipeline(openaiChat()),
        cleanTurn({ turnId }),
        toArray(),
      ),
    );
    const turn = await lastValueFrom(from(events).pipe(accumulateTurn(), last()));
    const ledger = new MemoryEffectLedger();
    const results = await lastValueFrom(
      from(events).pipe(
        executeTools({ issue_refund: () => ({ refund_id: 're_9' }) }, { turnId, ledger }),
        toArray(),
      ),
    );
    expect(toOpenAIChatMessages(turn, results).at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_00_Kd8sQ2vLx7Rm4TpW9nYc1BzE',
      content: '{"refund_id":"re_9"}',
    });
  });
});

describe('toOpenAIChatMessages: a finish without output (a source of your own)', () => {
  it('builds the message from the text and the released calls, arguments as JSON, no reasoning', () => {
    const c = keyed(turnId, 1, call('c1', 'issue_refund', helpDesk.refundArgs));
    const turn = { finish: at(1, finish('tool-calls')), text: 'Refunding.', toolCalls: [c] };
    expect(toOpenAIChatMessages(turn, [executed(c, 'ok')])).toEqual([
      {
        role: 'assistant',
        content: 'Refunding.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'issue_refund', arguments: refundText } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
    ]);
  });

  it('a repeat is a call to answer too; no text is content null', () => {
    const r = repeated(turnId, 1, call('c2', 'issue_refund', helpDesk.refundArgs));
    const turn = { finish: at(1, finish('tool-calls')), text: '', toolCalls: [r] };
    expect(toOpenAIChatMessages(turn, [toolResult(r, 'replayed', { result: 'refunded' })])).toEqual([
      { role: 'assistant', content: null, tool_calls: [expect.objectContaining({ id: 'c2' })] },
      { role: 'tool', tool_call_id: 'c2', content: 'refunded' },
    ]);
  });
});

describe('toOpenAIChatMessages: a request the provider would reject is a typed error', () => {
  it('each problem has its code, the call id, and is not retryable', async () => {
    const turn = await turnOf('parallel-interleaved.sse');
    const [lookup, refund] = turn.toolCalls as ReleasedCall[];
    if (lookup === undefined || refund === undefined) throw new Error('two calls expected');
    const other = keyed(turnId, 1, call('call_other', 'issue_refund', helpDesk.refundArgs));
    // biome-ignore format: a table
    const cases: [string, () => unknown, string | undefined][] = [
      ['not-finished', () => toOpenAIChatMessages({ ...turn, finish: undefined }, []), undefined],
      ['wrong-format', () => toOpenAIChatMessages({ ...turn, finish: { ...at(1, finish('stop')), output: { format: 'gemini' } } }, []), undefined],
      ['unanswered', () => toOpenAIChatMessages(turn, [executed(lookup, 'x')]), 'call_G4hJ6kL8mN0pQ2rS4tU6vW8x'],
      ['unknown-call', () => toOpenAIChatMessages(turn, [executed(lookup, 'x'), executed(refund, 'y'), executed(other, 'z')]), 'call_other'],
      ['answered-twice', () => toOpenAIChatMessages(turn, [executed(lookup, 'x'), executed(lookup, 'x')]), 'call_R1a8Xq2Wm5Nv9Bt3Lc7Kp0Zs'],
      ['still-running', () => toOpenAIChatMessages(turn, [executed(lookup, 'x'), toolResult(refund, 'in-progress')]), 'call_G4hJ6kL8mN0pQ2rS4tU6vW8x'],
      ['not-a-result', () => toOpenAIChatMessages(turn, [{ type: 'text', text: 'x' } as never]), undefined],
    ];
    for (const [code, run, callId] of cases) {
      const error = errorOf(run);
      expect(error, code).toBeInstanceOf(ProviderError);
      expect(error, code).toMatchObject({ code, callId, builder: 'toOpenAIChatMessages', retryable: false });
    }
  });

  it('a done turn given results: the results answer nothing the final attempt asked', async () => {
    const turn = await turnOf('usage-missing.sse');
    const stray = keyed(turnId, 1, call('call_stray', 'issue_refund', helpDesk.refundArgs));
    expect(errorOf(() => toOpenAIChatMessages(turn, [executed(stray, 'x')]))).toMatchObject({
      code: 'unknown-call',
    });
  });
});

describe("toOpenAIChatMessages: the doc comment's example", () => {
  it('compiles against the package and the SDK', () => {
    const source = readFileSync(
      fileURLToPath(new URL('../../src/providers/toOpenAIChatMessages.ts', import.meta.url)),
      'utf8',
    );
    const comment = source.slice(source.indexOf('## Example'), source.indexOf('@param turn'));
    const markdown = comment
      .split('\n')
      .map((line) => line.replace(/^ \* ?/, ''))
      .join('\n');
    const blocks = extractBlocks(markdown).filter((b) => typescriptLanguages.has(b.lang));
    expect(blocks).toHaveLength(1);
    const prelude = `
import type { Observable } from 'rxjs';
import type { TurnEvent } from 'cleanturn';
import type { ToolHandlers } from 'cleanturn/effects';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
declare global {
  /** The clean turn, e.g. of streamTurn with openaiChat(). */
  const turn$: Observable<TurnEvent>;
  /** The tool handlers. */
  const handlers: ToolHandlers;
  /** The conversation so far, in the SDK's own type. */
  const messages: ChatCompletionMessageParam[];
}
export {};
`;
    const reports = checkBlocks(blocks, { prelude, fileName: 'src/providers/toOpenAIChatMessages.ts' });
    expect(reports.flatMap((r) => r.problems)).toEqual([]);
  }, 60_000);
});
