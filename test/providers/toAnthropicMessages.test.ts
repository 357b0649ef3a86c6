// toAnthropicMessages(): the final attempt of a turn, read by anthropicMessages() from recorded fixture shapes,
// and the executor's results, as the messages of the next Anthropic request; the typed errors of a request the API
// would reject; the neutral fallback; and the doc comment's example, compiled.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { accumulateTurn, attemptPipeline, cleanTurn, type ToolResultLike, type TurnState } from 'cleanturn';
import { anthropicMessages, ProviderError, toAnthropicMessages } from 'cleanturn/providers';
import { at, call, finish, helpDesk, keyed, repeated, text } from 'cleanturn/testing';
import { from, last, lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { checkBlocks, extractBlocks, typescriptLanguages } from '../../scripts/readmeCode.js';
import type { AnthropicStreamEvent } from '../../src/providers/anthropicMessages.js';
import type { ReleasedCall } from '../../src/types.js';
import { attempts, retriedTurn } from '../support/providerTurns.js';
import { readSseJson } from '../support/sse.js';
import { toolResult } from '../support/toolResults.js';

const turnId = 'turn-42';
const dir = fileURLToPath(new URL('../fixtures/anthropic/', import.meta.url));
const fixture = (name: string) => readSseJson(`${dir}${name}`) as AnthropicStreamEvent[];

/** The last turn state of a fixture through the attempt pipeline and the clean turn. */
const turnOf = (name: string): Promise<TurnState> =>
  lastValueFrom(
    from(fixture(name)).pipe(
      attemptPipeline(anthropicMessages()),
      cleanTurn({ turnId }),
      accumulateTurn(),
      last(),
    ),
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

const SIGNATURE =
  'ErUBCkYIBRgCIkDhRfund7781SigA1bC2dE3fG4hI5jK6lM7nO8pQ9rS0tU1vW2xY3zA4bC5dE6fG7hI8jK9lM0nOEgz+PqRsTuVwXyZ01234GgxSIGNsYXVkZS1zb25uZXQ=';

describe('toAnthropicMessages: the final attempt, then one tool_result per call', () => {
  it('thinking with its signature before the text and the tool_use it led to, then the result', async () => {
    const turn = await turnOf('thinking-signature-then-tool.sse');
    const [refund] = turn.toolCalls as ReleasedCall[];
    if (refund === undefined) throw new Error('no call');
    const messages = toAnthropicMessages(turn, [executed(refund, { refund_id: 're_1', status: 'refunded' })]);
    expect(messages).toEqual([
      {
        role: 'assistant',
        content: [
          {
            type: 'thinking',
            thinking: 'The book of ORD-7781 arrived damaged, so the policy allows a full refund.',
            signature: SIGNATURE,
          },
          { type: 'text', text: 'Checking order ORD-7781. ' },
          {
            type: 'tool_use',
            id: 'toolu_01ThinkCall4Rt5Yu6Io7Pa8S',
            name: 'issue_refund',
            input: helpDesk.refundArgs,
          },
        ],
      },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_01ThinkCall4Rt5Yu6Io7Pa8S',
            content: '{"refund_id":"re_1","status":"refunded"}',
          },
        ],
      },
    ]);
  });

  it('redacted_thinking goes back first and unmodified, the thinking after it too', async () => {
    const turn = await turnOf('redacted-thinking-then-tool.sse');
    const [refund] = turn.toolCalls as ReleasedCall[];
    const [assistant] = toAnthropicMessages(turn, [executed(refund as ReleasedCall, 'refunded')]);
    expect(assistant?.content.map((b: { type: string }) => b.type)).toEqual([
      'redacted_thinking',
      'thinking',
      'tool_use',
    ]);
    expect(assistant?.content[0]).toEqual({
      type: 'redacted_thinking',
      data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB8URj2pLmN0OqRsTuVwXy+ZaBcD',
    });
  });

  it('parallel calls are answered in the order of their tool_use blocks, whatever order the results came in', async () => {
    const turn = await turnOf('parallel-calls.sse');
    const [one, two] = turn.toolCalls as ReleasedCall[];
    const messages = toAnthropicMessages(turn, [
      executed(two as ReleasedCall, { status: 'shipped' }),
      executed(one as ReleasedCall, 'delivered'),
    ]);
    expect(messages[1]).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_01Par1aaaaaaaaaaaaaaaaaaa', content: 'delivered' },
        {
          type: 'tool_result',
          tool_use_id: 'toolu_01Par2bbbbbbbbbbbbbbbbbbb',
          content: '{"status":"shipped"}',
        },
      ],
    });
  });

  it('a failed call is answered with is_error and why; an unknown tool too; a repeat with its recorded result', async () => {
    const turn = await turnOf('parallel-calls.sse');
    const [one, two] = turn.toolCalls as ReleasedCall[];
    const failed = toolResult(one as ReleasedCall, 'failed', {
      error: { name: 'PaymentError', message: 'card declined', retryable: false },
    });
    const replayed = toolResult(two as ReleasedCall, 'replayed', { result: { refund_id: 're_1' } });
    expect(toAnthropicMessages(turn, [failed, replayed])[1]?.content).toEqual([
      {
        type: 'tool_result',
        tool_use_id: 'toolu_01Par1aaaaaaaaaaaaaaaaaaa',
        content: expect.stringContaining('card declined'),
        is_error: true,
      },
      {
        type: 'tool_result',
        tool_use_id: 'toolu_01Par2bbbbbbbbbbbbbbbbbbb',
        content: '{"refund_id":"re_1"}',
      },
    ]);
    const unknown = toolResult(one as ReleasedCall, 'unknown-tool');
    expect(toAnthropicMessages(turn, [unknown, replayed])[1]?.content[0]).toEqual({
      type: 'tool_result',
      tool_use_id: 'toolu_01Par1aaaaaaaaaaaaaaaaaaa',
      content: 'no tool is named lookup_order',
      is_error: true,
    });
  });

  it('provider-run tools go back as blocks and get no tool_result: a stop turn is the assistant message alone', async () => {
    const turn = await turnOf('web-search-citations.sse');
    const messages = toAnthropicMessages(turn, []);
    expect(messages).toHaveLength(1);
    expect(messages[0]?.role).toBe('assistant');
    expect(messages[0]?.content.map((b: { type: string }) => b.type)).toEqual([
      'server_tool_use',
      'web_search_tool_result',
      'text',
      'text',
    ]);
    expect(messages[0]?.content[3].citations).toHaveLength(1);
  });

  it('a paused turn (pause_turn, compaction) is continued by its assistant message alone', async () => {
    for (const name of ['pause-turn.sse', 'compaction-pause.sse']) {
      const turn = await turnOf(name);
      expect(turn.finish?.paused).toBe(true);
      const messages = toAnthropicMessages(turn, []);
      expect(messages.map((m) => m.role)).toEqual(['assistant']);
      expect(messages[0]?.content).toEqual(
        (turn.finish?.output as unknown as { content: unknown[] } | undefined)?.content.filter(
          (b) => !((b as { type: string }).type === 'text' && (b as { text: string }).text === ''),
        ),
      );
    }
  });

  it('the messages are the request’s own copy: changing them leaves the turn as it was', async () => {
    const turn = await turnOf('thinking.sse');
    const before = structuredClone(turn.finish?.output);
    const [assistant] = toAnthropicMessages(turn, []);
    if (assistant?.role !== 'assistant') throw new Error('no assistant message');
    Object.assign(assistant.content[0], { cache_control: { type: 'ephemeral' } }); // as one marks a cache breakpoint
    assistant.content.push({ type: 'text', text: 'appended' });
    expect(turn.finish?.output).toEqual(before);
    expect(toAnthropicMessages(turn, [])[0]?.content).toHaveLength(2);
  });

  it('an empty text block is left out, and so is an assistant message with no block', () => {
    const finished = {
      ...at(1, finish('tool-calls', 'tool_use')),
      output: {
        format: 'anthropic-messages',
        content: [
          { type: 'text', text: '' },
          { type: 'tool_use', id: 'toolu_1', name: 'list_orders', input: {} },
        ],
      },
    };
    const c = keyed(turnId, 1, call('toolu_1', 'list_orders'));
    const turn = { finish: finished, text: '', toolCalls: [c] };
    expect(toAnthropicMessages(turn, [executed(c, [])])[0]).toEqual({
      role: 'assistant',
      content: [{ type: 'tool_use', id: 'toolu_1', name: 'list_orders', input: {} }],
    });
    const empty = {
      ...finished,
      output: { format: 'anthropic-messages', content: [{ type: 'text', text: '' }] },
    };
    expect(toAnthropicMessages({ finish: empty, text: '', toolCalls: [] }, [])).toEqual([]);
  });

  it('a finish without an output (a neutral source of your own): the turn text and its calls', () => {
    const c = keyed(turnId, 2, call('call_7', 'issue_refund', helpDesk.refundArgs));
    const turn = { finish: at(2, finish('tool-calls')), text: 'Refunding.', toolCalls: [c] };
    expect(toAnthropicMessages(turn, [executed(c, undefined)])).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Refunding.' },
          { type: 'tool_use', id: 'call_7', name: 'issue_refund', input: helpDesk.refundArgs },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_7', content: '{}' }] },
    ]);
  });

  it('after a retry, the final attempt only: an early read of the abandoned attempt is passed over', async () => {
    const state = await lastValueFrom(
      attempts(fixture('overloaded-after-text.sse'), fixture('thinking-signature-then-tool.sse')).pipe(
        retriedTurn(anthropicMessages(), turnId),
      ),
    );
    const [refund] = state.toolCalls as ReleasedCall[];
    const early = toolResult(
      { ...(refund as ReleasedCall), id: 'toolu_abandoned', attempt: 1 } as ReleasedCall,
      'executed',
      { result: 'ran early' },
    );
    const messages = toAnthropicMessages(state, [early, executed(refund as ReleasedCall, 'refunded')]);
    const sent = JSON.stringify(messages);
    expect(sent).not.toContain('Refunding the dam');
    expect(sent).not.toContain('toolu_abandoned');
    expect(messages[1]?.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_01ThinkCall4Rt5Yu6Io7Pa8S', content: 'refunded' },
    ]);
  });
});

describe('toAnthropicMessages: a request the API would reject is a typed error', () => {
  const refundTurn = () => turnOf('text-and-tool.sse');

  it('a call without a result: unanswered', () => {
    const error = errorOf(() => toAnthropicMessages(refundTurnSync, []));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      code: 'unanswered',
      builder: 'toAnthropicMessages',
      callId: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP',
      retryable: false,
    });
  });

  it('a result for a call the final attempt does not have: unknown-call; two for one call: answered-twice', async () => {
    const turn = await refundTurn();
    const [refund] = turn.toolCalls as ReleasedCall[];
    const other = toolResult(
      repeated(turnId, 1, call('toolu_other', 'issue_refund', helpDesk.refundArgs)),
      'executed',
      {
        result: 1,
      },
    );
    expect(
      errorOf(() => toAnthropicMessages(turn, [executed(refund as ReleasedCall, 1), other])),
    ).toMatchObject({ code: 'unknown-call', callId: 'toolu_other' });
    const twice = [executed(refund as ReleasedCall, 1), executed(refund as ReleasedCall, 2)];
    expect(errorOf(() => toAnthropicMessages(turn, twice))).toMatchObject({ code: 'answered-twice' });
  });

  it('a call still running elsewhere: still-running; an entry that is not a result: not-a-result', async () => {
    const turn = await refundTurn();
    const [refund] = turn.toolCalls as ReleasedCall[];
    const running = toolResult(refund as ReleasedCall, 'in-progress');
    expect(errorOf(() => toAnthropicMessages(turn, [running]))).toMatchObject({ code: 'still-running' });
    const notAResult = text('no') as unknown as ToolResultLike;
    expect(errorOf(() => toAnthropicMessages(turn, [notAResult]))).toMatchObject({ code: 'not-a-result' });
  });

  it('no finish: not-finished; the output of another format: wrong-format', () => {
    expect(
      errorOf(() => toAnthropicMessages({ finish: undefined, text: '', toolCalls: [] }, [])),
    ).toMatchObject({
      code: 'not-finished',
    });
    const gemini = { ...at(1, finish('stop')), output: { format: 'gemini' } };
    expect(errorOf(() => toAnthropicMessages({ finish: gemini, text: '', toolCalls: [] }, []))).toMatchObject(
      {
        code: 'wrong-format',
      },
    );
  });
});

/** The text-and-tool turn, built without a pipeline: its final attempt has one call and no result is given. */
const refundTurnSync = {
  finish: {
    ...at(1, finish('tool-calls', 'tool_use')),
    output: {
      format: 'anthropic-messages',
      content: [
        {
          type: 'tool_use',
          id: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP',
          name: 'issue_refund',
          input: helpDesk.refundArgs,
        },
      ],
    },
  },
  text: '',
  toolCalls: [keyed(turnId, 1, call('toolu_01QE1WLsSVp5hy5Q3GmGTmjP', 'issue_refund', helpDesk.refundArgs))],
};

describe("toAnthropicMessages: the doc comment's example", () => {
  it('compiles against the package and the SDK', () => {
    const source = readFileSync(
      fileURLToPath(new URL('../../src/providers/toAnthropicMessages.ts', import.meta.url)),
      'utf8',
    );
    const comment = source.slice(source.indexOf('## Example'), source.indexOf('@param turn'));
    const markdown = comment
      .split('\n')
      .map((line) => line.replace(/^ \* ?/, ''))
      .join('\n');
    const blocks = extractBlocks(markdown).filter((b) => typescriptLanguages.has(b.lang));
    expect(blocks).toHaveLength(1);
    const reports = checkBlocks(blocks, {
      prelude: 'export {};',
      fileName: 'src/providers/toAnthropicMessages.ts',
    });
    expect(reports.flatMap((r) => r.problems)).toEqual([]);
  }, 60_000);
});
