// toOpenAIResponsesInput(): the final attempt of a Responses turn and the executor's results as the next request's
// input items — the output items as the API takes them back (reasoning with its encrypted content, messages,
// function calls, provider-run tools), then one function_call_output per call_id — from fixtures through the real
// retrying pipeline, and every typed refusal.
import { join } from 'node:path';
import type { ToolResultLike, TurnState } from 'cleanturn';
import { openaiResponses, ProviderError, toOpenAIResponsesInput } from 'cleanturn/providers';
import { at, finish, helpDesk, keyed } from 'cleanturn/testing';
import { describe, expect, it } from 'vitest';
import type {
  OpenAIResponsesEvent,
  OpenAIResponsesInput,
  OpenAIResponsesOutput,
} from '../../src/providers/openaiResponses.js';
import type { FinishEvent, ReleasedCall } from '../../src/types.js';
import { collect } from '../support/collect.js';
import { attempts, retriedTurn } from '../support/providerTurns.js';
import { readSseJson } from '../support/sse.js';

const turnId = 'turn-42';
const fixtures = join(import.meta.dirname, '../fixtures/openai-responses');
const payloads = (name: string) => readSseJson(join(fixtures, name)) as OpenAIResponsesEvent[];

/** The final turn state of a retried Responses turn whose n-th attempt streams the n-th payload list. */
const finalTurn = (...streams: OpenAIResponsesInput[][]): TurnState => {
  const states = collect(attempts(...streams).pipe(retriedTurn(openaiResponses(), turnId)));
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

/** A turn that finished with `items` as its Responses output, and `calls` released. */
const turnWith = (items: object[], reason: FinishEvent['reason'] = 'stop', calls: ReleasedCall[] = []) => {
  const output = { format: 'openai-responses', items } as OpenAIResponsesOutput;
  return { finish: { ...finish(reason, 'completed'), output, attempt: 1 }, text: '', toolCalls: calls };
};
const fn = (callId: string, args = '{}') => ({
  id: `fc_${callId}`,
  type: 'function_call',
  status: 'completed',
  call_id: callId,
  name: 'lookup_order',
  arguments: args,
});
const released = (id: string, attempt = 1) =>
  keyed(turnId, attempt, { type: 'tool-call', id, name: 'lookup_order', args: {} }) as ReleasedCall;

const encrypted = (name: string) =>
  payloads(name).flatMap((e) =>
    e.type === 'response.output_item.done' && e.item?.type === 'reasoning'
      ? [(e.item as { encrypted_content?: string }).encrypted_content]
      : [],
  );

describe('toOpenAIResponsesInput: the next request of a Responses turn', () => {
  it('reasoning with its summary and encrypted content, the call as sent, then its output', () => {
    const name = 'reasoning-encrypted-summary-parts-then-call.sse';
    const turn = finalTurn(payloads(name));
    const [canonical] = encrypted(name);
    expect(toOpenAIResponsesInput(turn, ran(turn, [{ refund_id: 'RF-1', status: 'refunded' }]))).toEqual([
      {
        type: 'reasoning',
        id: 'rs_07e1c3b5a9d24f6801693c32140588190be3ab04d5782d5f9',
        summary: [
          {
            type: 'summary_text',
            text: '**Checking the order**\n\nThe customer says the book arrived damaged.',
          },
          { type: 'summary_text', text: '**Refund policy**\n\nDamaged books are refunded in full.' },
        ],
        encrypted_content: canonical,
      },
      {
        type: 'function_call',
        id: 'fc_07e1c3b5a9d24f6801693c3215123481909',
        status: 'completed',
        call_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn',
        name: 'issue_refund',
        arguments: '{"order_id":"ORD-7781","amount":"full"}',
      },
      {
        type: 'function_call_output',
        call_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn',
        output: '{"refund_id":"RF-1","status":"refunded"}',
      },
    ]);
    expect(canonical).toMatch(/==$/);
    expect(JSON.stringify(toOpenAIResponsesInput(turn, ran(turn, ['ok'])))).not.toContain('_partial');
  });

  it('after a retry: nothing of the abandoned attempt, the final one exactly', () => {
    const full = payloads('reasoning-encrypted-summary-parts-then-call.sse');
    // Attempt 1 is another generation, cut in its reasoning; attempt 2 streams the whole response.
    const abandoned = JSON.parse(
      JSON.stringify(full.slice(0, 6)).replaceAll('rs_07e1', 'rs_dead').replaceAll('gAAAA', 'gZZZZ'),
    ) as OpenAIResponsesEvent[];
    const turn = finalTurn(abandoned, full);
    expect(turn.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
    const text = JSON.stringify(toOpenAIResponsesInput(turn, ran(turn, ['refunded'])));
    expect(text).not.toContain('rs_dead');
    expect(text).not.toContain('gZZZZ');
    expect(text).toContain('rs_07e1');
  });

  it('provider-run tools go back with the fields the API takes; only the client call is answered', () => {
    const turn = finalTurn(payloads('server-tools-beside-a-client-call.sse'));
    expect(turn.toolCalls.map((c) => c.id)).toEqual(['call_Nq3Rs4Tu5Vw6Xy7Za8Bc9De0']);
    const items = toOpenAIResponsesInput(turn, ran(turn, ['shipped']));
    expect(items.map((i) => i.type)).toEqual([
      'reasoning',
      'code_interpreter_call',
      'image_generation_call',
      'function_call',
      'function_call_output',
    ]);
    expect(items[1]).toEqual({
      type: 'code_interpreter_call',
      id: 'ci_68c2e6f7b72c8193ba1f552552c8dc9202d3a5742c7ddae9',
      code: 'total = 12.5 + 18.0\nround(total * 0.9, 2)\n',
      container_id: 'cntr_68c2e6f380d881908a57a82d394434ff02f484f5344062e9',
      outputs: [{ type: 'logs', logs: '27.45' }],
      status: 'completed',
    });
    expect(items[4]).toEqual({
      type: 'function_call_output',
      call_id: 'call_Nq3Rs4Tu5Vw6Xy7Za8Bc9De0',
      output: 'shipped',
    });
  });

  it('a done turn (MCP and web search run by the provider): its output items alone, messages without logprobs', () => {
    const turn = finalTurn(payloads('server-tools-mcp-and-web-search.sse'));
    const items = toOpenAIResponsesInput(turn, []);
    expect(items.map((i) => i.type)).toEqual([
      'mcp_list_tools',
      'reasoning',
      'mcp_call',
      'reasoning',
      'web_search_call',
      'message',
    ]);
    expect(items[1]).toEqual({
      type: 'reasoning',
      id: 'rs_0c72b1033351981300690ccf7c6ea4819383a27ac8faae82a2',
      summary: [],
    });
    expect(items[2]).toMatchObject({ type: 'mcp_call', name: 'shipping_status', server_label: 'orders' });
    expect(items[4]).toEqual({
      type: 'web_search_call',
      id: 'ws_0c72b1033351981300690ccf8bdcd8819383bd64316c8519a2',
      status: 'completed',
      action: {
        type: 'search',
        query: 'bookshop refund policy damaged delivery',
        sources: [{ type: 'url', url: 'https://www.example.org/help/refunds' }],
      },
    });
    expect(items[5]).toEqual({
      type: 'message',
      role: 'assistant',
      id: 'msg_0c72b1033351981300690ccf97df988193b9c062fa247e6257',
      status: 'completed',
      content: [
        {
          type: 'output_text',
          text: 'ORD-7781 was delivered on 2 January; a damaged book is refunded in full.',
          annotations: [],
        },
      ],
    });
  });

  it('the reasoning text of open-weight servers goes back in the reasoning item', () => {
    const turn = finalTurn(payloads('compat-reasoning-text-deltas.sse'));
    expect(toOpenAIResponsesInput(turn, ran(turn, [{ status: 'delivered' }]))[0]).toEqual({
      type: 'reasoning',
      id: 'rs_3yo6zy4vu4hq6iegqwhn1',
      summary: [],
      content: [{ type: 'reasoning_text', text: 'The customer asks about ORD-7781. I should look it up.' }],
      status: 'completed',
    });
  });

  it('a refusal goes back as the message part it was', () => {
    const turn = finalTurn(payloads('refusal.sse'));
    expect(toOpenAIResponsesInput(turn, [])).toEqual([
      {
        type: 'message',
        role: 'assistant',
        id: 'msg_9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a41',
        status: 'completed',
        content: [{ type: 'refusal', refusal: "I'm sorry, but I can't change another customer's order." }],
      },
    ]);
  });

  it('picks the fields the API takes: an image without its revised prompt, a message without logprobs', () => {
    const image = {
      id: 'ig_1',
      type: 'image_generation_call',
      status: 'completed',
      result: 'iVBO',
      revised_prompt: 'p',
      size: '1024x1024',
    };
    const message = {
      id: 'msg_1',
      type: 'message',
      status: 'completed',
      role: 'assistant',
      phase: 'final_answer',
      content: [{ type: 'output_text', text: 'Done.', annotations: [], logprobs: [{ token: 'Done' }] }],
    };
    expect(toOpenAIResponsesInput(turnWith([image, message]), [])).toEqual([
      { type: 'image_generation_call', id: 'ig_1', status: 'completed', result: 'iVBO' },
      {
        type: 'message',
        role: 'assistant',
        id: 'msg_1',
        status: 'completed',
        phase: 'final_answer',
        content: [{ type: 'output_text', text: 'Done.', annotations: [] }],
      },
    ]);
  });

  it('a message without an id goes back as the assistant text; a reasoning item without one is left out', () => {
    const items = [
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Thinking.' }] },
      {
        type: 'message',
        role: 'assistant',
        content: [
          { type: 'output_text', text: 'Hi ' },
          { type: 'output_text', text: 'there.' },
        ],
      },
    ];
    expect(toOpenAIResponsesInput(turnWith(items), [])).toEqual([
      { type: 'message', role: 'assistant', content: 'Hi there.' },
    ]);
  });

  it('unknown item types are left out; an item type named like a prototype key is unknown', () => {
    const items = [{ type: 'program', id: 'p_1' }, { type: 'constructor' }, { type: 'toString' }, {}];
    expect(toOpenAIResponsesInput(turnWith(items), [])).toEqual([]);
  });

  it('a call of a kind the adapter does not release (a custom tool) cannot be answered: unanswered', () => {
    const custom = { id: 'ctc_1', type: 'custom_tool_call', call_id: 'call_c', name: 'grep', input: 'x' };
    const thrown = catchError(() => toOpenAIResponsesInput(turnWith([custom]), []));
    expect(thrown).toBeInstanceOf(ProviderError);
    expect(thrown).toMatchObject({ code: 'unanswered', callId: 'call_c', builder: 'toOpenAIResponsesInput' });
  });

  it('answers: a string as it is, other values as JSON, nothing as {}, a failure as {"error": …}, a repeat with its record', () => {
    const calls = ['a', 'b', 'c', 'd', 'e'].map((id) => released(id));
    const turn = turnWith(
      calls.map((c) => fn(c.id)),
      'tool-calls',
      calls,
    );
    const [a, b, c, d, e] = calls as [ReleasedCall, ReleasedCall, ReleasedCall, ReleasedCall, ReleasedCall];
    const results = [
      result(a, 'executed', { result: 'shipped' }),
      result(b, 'executed', { result: { n: 1 } }),
      result(c, 'executed'),
      result(d, 'failed', { error: { name: 'Error', message: 'the carrier is down' } }),
      result({ ...e, type: 'tool-call-repeat' }, 'replayed', { result: [1, 2] }),
    ];
    const outputs = toOpenAIResponsesInput(turn, results).filter((i) => i.type === 'function_call_output');
    expect(outputs.map((o) => o.output)).toEqual([
      'shipped',
      '{"n":1}',
      '{}',
      JSON.stringify({ error: 'the carrier is down' }),
      '[1,2]',
    ]);
  });

  it("a result of an abandoned attempt's call is passed over", () => {
    const call = released('call_2', 2);
    const turn = {
      ...turnWith([fn('call_2')], 'tool-calls', [call]),
      finish: { ...turnWith([]).finish, attempt: 2 },
    };
    turn.finish.output = { format: 'openai-responses', items: [fn('call_2')] } as OpenAIResponsesOutput;
    const stale = result(released('call_1', 1), 'executed', { result: 'early read' });
    const items = toOpenAIResponsesInput(turn, [stale, result(call, 'executed', { result: 'ok' })]);
    expect(items.at(-1)).toEqual({ type: 'function_call_output', call_id: 'call_2', output: 'ok' });
  });

  it('without an output on the finish: the text as the assistant message, the released calls, their outputs', () => {
    const call = at(1, {
      type: 'tool-call' as const,
      id: 'call_n',
      name: 'issue_refund',
      args: helpDesk.refundArgs,
    });
    const turn = { finish: { ...finish('tool-calls'), attempt: 1 }, text: 'Refunding.', toolCalls: [call] };
    const answer = result({ ...call, effectKey: 'k' }, 'executed', { result: 'ok' });
    expect(toOpenAIResponsesInput(turn, [answer])).toEqual([
      { type: 'message', role: 'assistant', content: 'Refunding.' },
      {
        type: 'function_call',
        call_id: 'call_n',
        name: 'issue_refund',
        arguments: JSON.stringify(helpDesk.refundArgs),
      },
      { type: 'function_call_output', call_id: 'call_n', output: 'ok' },
    ]);
  });

  it('the items are copies: changing them leaves the output as it was', () => {
    const item = fn('call_x', '{"order_id":"ORD-7781"}');
    const reasoningItem = { id: 'rs_1', type: 'reasoning', summary: [{ type: 'summary_text', text: 'T' }] };
    const turn = turnWith([reasoningItem, item], 'tool-calls', [released('call_x')]);
    const before = JSON.stringify(turn.finish.output);
    const items = toOpenAIResponsesInput(turn, [result(released('call_x'), 'executed', { result: 'ok' })]);
    (items[0] as { summary: { text: string }[] }).summary[0] = { text: 'changed' };
    expect(JSON.stringify(turn.finish.output)).toBe(before);
  });

  it('refuses what the provider would reject, with a typed error', () => {
    const cases: [string, () => unknown, string][] = [
      [
        'no finish',
        () => toOpenAIResponsesInput({ finish: undefined, text: '', toolCalls: [] }, []),
        'not-finished',
      ],
      [
        'another format',
        () =>
          toOpenAIResponsesInput(
            { ...turnWith([]), finish: { ...finish(), output: { format: 'gemini' } } },
            [],
          ),
        'wrong-format',
      ],
      [
        'a call without a result',
        () => toOpenAIResponsesInput(turnWith([fn('call_1')], 'tool-calls'), []),
        'unanswered',
      ],
      [
        'a result for a call the final attempt lacks',
        () => toOpenAIResponsesInput(turnWith([]), [result(released('call_9'), 'executed', { result: 1 })]),
        'unknown-call',
      ],
      [
        'a function_call item without a call_id',
        () => toOpenAIResponsesInput(turnWith([{ type: 'function_call', name: 'f', arguments: '{}' }]), []),
        'unanswered',
      ],
    ];
    for (const [what, build, code] of cases) {
      const thrown = catchError(build);
      expect(thrown, what).toBeInstanceOf(ProviderError);
      expect(thrown, what).toMatchObject({ code, retryable: false });
    }
  });
});

function catchError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}
