import { join } from 'node:path';
import {
  assembleToolCalls,
  CleanturnError,
  effectKey,
  type FinishReason,
  type ProviderEvent,
  requireFinish,
  type TurnEvent,
} from 'cleanturn';
import { openaiResponses, ProviderError } from 'cleanturn/providers';
import { call, delta, finish, helpDesk, reasoning, text, usage } from 'cleanturn/testing';
import { defer, from, Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { OpenAIResponsesEvent, OpenAIResponsesInput } from '../../src/providers/openaiResponses.js';
import type { FinishEvent, UsageEvent } from '../../src/types.js';
import { collect } from '../support/collect.js';
import { expectTurnError } from '../support/errors.js';
import { attempts, type Expectation, expectationChecks, retriedTurn } from '../support/providerTurns.js';
import { readSseJson } from '../support/sse.js';
import { standardChecks } from '../support/standardChecks.js';

const fixtures = join(import.meta.dirname, '../fixtures/openai-responses');
const payloads = (name: string) => readSseJson(join(fixtures, name)) as OpenAIResponsesInput[];

const adapt = (inputs: readonly OpenAIResponsesInput[], operator = openaiResponses()) =>
  collect(from(inputs).pipe(operator));
const assembled = (inputs: readonly OpenAIResponsesInput[]) =>
  collect(from(inputs).pipe(openaiResponses(), assembleToolCalls()));

// Small events with the fields the adapter reads.
const textDelta = (value: string, seq?: number): OpenAIResponsesEvent => ({
  type: 'response.output_text.delta',
  item_id: 'msg_1',
  output_index: 0,
  delta: value,
  ...(seq === undefined ? {} : { sequence_number: seq }),
});
const fnItem = (n: number, args = '', more: object = {}) => ({
  id: `fc_${n}`,
  type: 'function_call',
  call_id: `call_${n}`,
  name: `tool_${n}`,
  arguments: args,
  ...more,
});
const added = (n: number, outputIndex = n, args = ''): OpenAIResponsesEvent => ({
  type: 'response.output_item.added',
  output_index: outputIndex,
  item: fnItem(n, args),
});
const argsDelta = (n: number, fragment: string, outputIndex = n): OpenAIResponsesEvent => ({
  type: 'response.function_call_arguments.delta',
  item_id: `fc_${n}`,
  output_index: outputIndex,
  delta: fragment,
});
const argsDone = (n: number, args: string, outputIndex = n): OpenAIResponsesEvent => ({
  type: 'response.function_call_arguments.done',
  item_id: `fc_${n}`,
  output_index: outputIndex,
  arguments: args,
});
const itemDone = (n: number, args: string, outputIndex = n): OpenAIResponsesEvent => ({
  type: 'response.output_item.done',
  output_index: outputIndex,
  item: fnItem(n, args, { status: 'completed' }),
});
const completed = (response: object = {}): OpenAIResponsesEvent => ({
  type: 'response.completed',
  response: { status: 'completed', ...response },
});
/** A finish with the output items it carries. */
const withOutput = (event: FinishEvent, items: readonly object[]): FinishEvent =>
  ({
    ...event,
    output: { format: 'openai-responses', items },
  }) as FinishEvent;

const lookupArgs = { order_id: 'ORD-7781' };
const unicodeText = `Merci \u{1F64F} ! Le cafe\u0301 est offert, l'équipe 👩\u200d💻 rembourse 42 €. 注文を返金しました。`;

/** A usage event with the details the Responses usage reports: cached input tokens and reasoning tokens. */
const usageOf = (input: number, output: number, cached = 0, thought = 0): UsageEvent => ({
  ...usage(input, output),
  cachedInputTokens: cached,
  reasoningTokens: thought,
});
/** The terminal event of a fixture (`response.completed` or `response.incomplete`). */
const terminalOf = (name: string) =>
  payloads(name).find(
    (p): p is OpenAIResponsesEvent =>
      typeof p === 'object' && (p.type === 'response.completed' || p.type === 'response.incomplete'),
  );
/** The output items a fixture's stream said whole: the done items, in output order. */
const doneItems = (name: string) =>
  payloads(name).flatMap((p) =>
    typeof p === 'object' && p.type === 'response.output_item.done' ? [p.item] : [],
  );
/**
 * The finish of a fixture: its response id, and as the output the terminal event's `response.output` (as sent),
 * or `items` where it has none.
 */
const finishOf = (name: string, reason: FinishReason, raw = 'completed', items?: unknown[]): FinishEvent => {
  const response = terminalOf(name)?.response;
  const output = { format: 'openai-responses', items: items ?? response?.output };
  return { ...finish(reason, raw), responseId: response?.id ?? undefined, output } as FinishEvent;
};

// biome-ignore format: a table of fixtures
const expectations: Record<string, Expectation> = {
  'text-and-call.sse': { events: [
    text('Checking order'), text(' ORD-7781. '), usageOf(187, 29),
    call('call_Zl5vIMnD7dVAjgU6FkhmiCZh', 'issue_refund', helpDesk.refundArgs), finishOf('text-and-call.sse', 'tool-calls'),
  ] },
  'no-arg-tool.sse': { events: [
    usageOf(88, 9), call('call_Pq9rS8tU7vW6xY5zA4bC3dE2', 'list_open_orders', {}), finishOf('no-arg-tool.sse', 'tool-calls'),
  ] },
  'whole-args-first-delta.sse': { events: [
    usageOf(91, 14), call('call_Hj7kL6mN5bV4cX3zQ2wE1rT0', 'lookup_order', lookupArgs), finishOf('whole-args-first-delta.sse', 'tool-calls'),
  ] },
  'parallel-interleaved.sse': { events: [
    usageOf(240, 48, 128),
    call('call_Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8', 'lookup_order', lookupArgs),
    call('call_Ii9Jj8Kk7Ll6Mm5Nn4Oo3Pp2', 'issue_refund', helpDesk.refundArgs),
    finishOf('parallel-interleaved.sse', 'tool-calls'),
  ] },
  'truncated.sse': { events: [text('Checking order ORD-7781. ')] },
  'error-flat-then-failed.sse': {
    events: [text('Refunding the dam')],
    error: {
      retryable: true,
      code: 'upstream', upstreamCode: 'server_error',
      message: 'openai-responses: The server had an error while processing your request. Sorry about that!',
    },
  },
  'error-nested-then-failed.sse': {
    events: [],
    error: { retryable: false, code: 'upstream', upstreamCode: 'insufficient_quota', message: expect.stringContaining('You exceeded your current quota') },
  },
  'failed-without-error-event.sse': {
    events: [text('Checking')],
    error: { retryable: true, code: 'upstream', upstreamCode: 'rate_limit_exceeded', message: expect.stringContaining('Rate limit reached') },
  },
  'sequence-gaps-and-replay.sse': { events: [
    text('Your refund'), text(' for ORD-7781'), text(' has started'), text('.'), usageOf(77, 10),
    finishOf('sequence-gaps-and-replay.sse', 'stop'),
  ] },
  'unicode-split.sse': { events: [
    text('Merci \ud83d'), text('\ude4f ! Le cafe'), text("\u0301 est offert, l'équipe 👩"),
    text('\u200d💻 rembourse 42 €. 注文を'), text('返金しました。'), usageOf(203, 61),
    call('call_Uv0Wx1Yz2Ab3Cd4Ef5Gh6Ij7', 'issue_refund', { order_id: 'ORD-7781', note: 'Livre abîmé 📚 → ✓' }),
    finishOf('unicode-split.sse', 'tool-calls'),
  ] },
  'crlf-framing.sse': { events: [
    text('Looking up'), text(' ORD-7781.'), usageOf(118, 22),
    call('call_Kl8Mn9Op0Qr1St2Uv3Wx4Yz5', 'lookup_order', lookupArgs), finishOf('crlf-framing.sse', 'tool-calls'),
  ] },
  'missing-optional-fields.sse': { events: [
    text('One moment.'), call('call_Ef4Gh5Ij6Kl7Mn8Op9Qr0St1', 'lookup_order', lookupArgs),
    finishOf('missing-optional-fields.sse', 'tool-calls'),
  ] },
  'incomplete-max-output-tokens.sse': { events: [
    text('Our refund policy covers'), usageOf(64, 4),
    finishOf('incomplete-max-output-tokens.sse', 'length', 'incomplete:max_output_tokens'),
  ] },
  'reasoning-then-call.sse': { events: [
    reasoning('**Checking the order**\n\nThe customer wants a refund'), usageOf(310, 212, 0, 192),
    call('call_Gh2Ij3Kl4Mn5Op6Qr7St8Uv9', 'issue_refund', helpDesk.refundArgs), finishOf('reasoning-then-call.sse', 'tool-calls'),
  ] },
  'reasoning-encrypted-summary-parts-then-call.sse': { events: [
    reasoning('**Checking the order**\n\nThe customer says the book'), reasoning(' arrived damaged.'),
    reasoning('\n\n**Refund policy**\n\nDamaged books'), reasoning(' are refunded in full.'),
    usageOf(412, 230, 256, 192), call('call_AB6AaRZ1FYZB2RwS6A5vbdqn', 'issue_refund', helpDesk.refundArgs),
    finishOf('reasoning-encrypted-summary-parts-then-call.sse', 'tool-calls'),
  ] },
  'compat-reasoning-text-deltas.sse': { events: [
    reasoning('The customer asks'), reasoning(' about ORD-7781.'), reasoning(' I should look it up.'),
    text('Let me look that'), text(' order up.'), usage(96, 41),
    call('call_2025306790300011', 'lookup_order', lookupArgs), finishOf('compat-reasoning-text-deltas.sse', 'tool-calls'),
  ] },
  'server-tools-mcp-and-web-search.sse': { events: [
    text('ORD-7781 was delivered on 2 January;'), text(' a damaged book is refunded in full.'),
    usageOf(2210, 388, 1920, 320), finishOf('server-tools-mcp-and-web-search.sse', 'stop'),
  ] },
  'server-tools-beside-a-client-call.sse': { events: [
    usageOf(6047, 1623, 2944, 1408), call('call_Nq3Rs4Tu5Vw6Xy7Za8Bc9De0', 'lookup_order', lookupArgs),
    finishOf('server-tools-beside-a-client-call.sse', 'tool-calls'),
  ] },
  'keepalive-during-reasoning.sse': { events: [
    reasoning('**Weighing the policy**\n\nA damaged'), reasoning(' delivery is refunded.'),
    text('Yes: a damaged book'), text(' is refunded in full.'), usageOf(880, 4210, 0, 4180),
    finishOf('keepalive-during-reasoning.sse', 'stop'),
  ] },
  'incomplete-while-reasoning.sse': { events: [
    reasoning('**Reading the order history**\n\nThe order has'), usageOf(318, 64, 0, 64),
    finishOf('incomplete-while-reasoning.sse', 'length', 'incomplete:max_output_tokens'),
  ] },
  'completed-with-empty-output.sse': { events: [
    text('Looking up'), text(' ORD-7781.'), usageOf(132, 24), call('call_Tz8Yx7Wv6Ut5Sr4Qp3On2Ml1', 'lookup_order', lookupArgs),
    finishOf('completed-with-empty-output.sse', 'tool-calls', 'completed', doneItems('completed-with-empty-output.sse')),
  ] },
  'call-only-in-completed-output.sse': { events: [
    text('Looking up'), text(' ORD-7781.'), usageOf(132, 24),
    call('call_Rk4Tn8Wq2Lm6Zx0Vb3Hs7Jd1', 'lookup_order', lookupArgs), finishOf('call-only-in-completed-output.sse', 'tool-calls'),
  ] },
  'completed-output-and-streamed-calls.sse': { events: [
    usageOf(260, 51),
    call('call_Uk3Vl4Wm5Xn6Yo7Zp8Aq9Br0', 'issue_refund', helpDesk.refundArgs),
    call('call_Mc5Nd6Oe7Pf8Qg9Rh0Si1Tj2', 'lookup_order', lookupArgs),
    finishOf('completed-output-and-streamed-calls.sse', 'tool-calls'),
  ] },
  'refusal.sse': { events: [
    usageOf(142, 13),
    { ...finishOf('refusal.sse', 'content-filter'), refusal: "I'm sorry, but I can't change another customer's order." },
  ] },
  'completed-then-trailing-events.sse': { events: [
    text('Your refund'), text(' has started.'), usageOf(97, 8), finishOf('completed-then-trailing-events.sse', 'stop'),
  ] },
  'compat-output-index-string.sse': { events: [
    usageOf(85, 12), call('call_Ej2Fk3Gl4Hm5In6Jo7Kp8Lq9', 'lookup_order', lookupArgs),
    finishOf('compat-output-index-string.sse', 'tool-calls'),
  ] },
  'compat-function-name-number.sse': {
    events: [],
    errorClass: ProviderError,
    error: { retryable: false, code: 'invalid-field', field: 'item.name', message: expect.stringContaining('expected a tool name') },
  },
  'compat-arguments-number.sse': {
    events: [],
    errorClass: ProviderError,
    error: { retryable: false, code: 'invalid-field', field: 'arguments', message: expect.stringContaining('got number') },
  },
  // The second call's argument events refer to an item the stream never added: a piece was lost on the way.
  'duplicate-and-missing-starts.sse': {
    events: [call('call_Wa1Xb2Yc3Zd4Ae5Bf6Cg7Dh8', 'lookup_order', lookupArgs)],
    errorClass: ProviderError,
    error: { retryable: true, code: 'unknown-reference', field: 'item_id', message: expect.stringContaining('never added') },
  },
};

describe('openaiResponses: every fixture', () => {
  expectationChecks({
    provider: 'openai-responses',
    dir: fixtures,
    expectations,
    read: payloads,
    adapter: () => openaiResponses(),
  });

  it('unicode-split.sse: the text rebuilds whole once the fragments are joined', () => {
    const joined = assembled(payloads('unicode-split.sse'))
      .values.flatMap((event) => (event.type === 'text' ? [event.text] : []))
      .join('');
    expect(joined).toBe(unicodeText);
  });

  it('truncated.sse: no terminal event, so requireFinish makes the cut a retryable error', () => {
    const result = collect(
      from(payloads('truncated.sse')).pipe(openaiResponses(), assembleToolCalls(), requireFinish()),
    );
    expectTurnError(result.error, 'missing-finish');
  });

  it('parallel-interleaved.sse: each item gets its own small index; fragments arrive as sent', () => {
    expect(adapt(payloads('parallel-interleaved.sse')).values).toEqual([
      delta(0, '', { id: 'call_Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8', name: 'lookup_order' }),
      delta(1, '', { id: 'call_Ii9Jj8Kk7Ll6Mm5Nn4Oo3Pp2', name: 'issue_refund' }),
      delta(1, '{"order_id":"ORD-'),
      delta(0, '{"order_id":'),
      delta(1, '7781","amount":'),
      delta(0, '"ORD-7781"}'),
      delta(1, '"full"}'),
      usageOf(240, 48, 128),
      finishOf('parallel-interleaved.sse', 'tool-calls'),
    ]);
  });

  it('reasoning-then-call.sse: the call at output_index 1 is neutral call #0', () => {
    const first = adapt(payloads('reasoning-then-call.sse')).values.find((e) => e.type === 'tool-call-delta');
    expect(first).toEqual(delta(0, '', { id: 'call_Gh2Ij3Kl4Mn5Op6Qr7St8Uv9', name: 'issue_refund' }));
  });

  it('error-nested-then-failed.sse: the error comes from the error event; response.failed is never read', () => {
    const inputs = payloads('error-nested-then-failed.sse');
    const error = adapt(inputs).error as ProviderError;
    expect(error.payload).toEqual(inputs[2]);
  });
});

describe('openaiResponses: calls', () => {
  it('arguments that arrive only in function_call_arguments.done are emitted once', () => {
    const inputs = [added(0), argsDone(0, '{"a":1}'), itemDone(0, '{"a":1}'), completed()];
    expect(adapt(inputs).values).toEqual([
      delta(0, '', { id: 'call_0', name: 'tool_0' }),
      delta(0, '{"a":1}'),
      withOutput(finish('tool-calls', 'completed'), [itemDone(0, '{"a":1}').item as object]),
    ]);
  });

  it('after deltas, the whole copies in .done events are ignored, not compared or joined again', () => {
    const inputs = [
      added(0),
      argsDelta(0, '{"a":'),
      argsDelta(0, '1}'),
      argsDone(0, 'ignored'),
      itemDone(0, 'x'),
    ];
    expect(adapt([...inputs, completed()]).values).toEqual([
      delta(0, '', { id: 'call_0', name: 'tool_0' }),
      delta(0, '{"a":'),
      delta(0, '1}'),
      // The output is the items as sent, as the done copy says.
      withOutput(finish('tool-calls', 'completed'), [itemDone(0, 'x').item as object]),
    ]);
  });

  it('an argument event for an item never added is an unknown-reference error (retryable), never a new call', () => {
    const orphans: OpenAIResponsesEvent[] = [
      argsDelta(3, '{"a":1}', 5),
      argsDone(3, '{"a":1}', 5),
      { type: 'response.function_call_arguments.delta', output_index: 5, delta: '{}' },
    ];
    for (const orphan of orphans) {
      const result = adapt([added(0), orphan, completed()]);
      expect(result.values).toEqual([delta(0, '', { id: 'call_0', name: 'tool_0' })]);
      expect(result.error).toBeInstanceOf(ProviderError);
      expect(result.error).toMatchObject({
        code: 'unknown-reference',
        retryable: true,
        field: orphan.item_id === undefined ? 'output_index' : 'item_id',
        payload: orphan,
      });
    }
  });

  it('a call known only from output_item.done is emitted whole', () => {
    expect(
      collect(from([itemDone(0, '{"a":1}'), completed()]).pipe(openaiResponses(), assembleToolCalls()))
        .values,
    ).toEqual([
      call('call_0', 'tool_0', { a: 1 }),
      withOutput(finish('tool-calls', 'completed'), [itemDone(0, '{"a":1}').item as object]),
    ]);
  });

  it('a repeated output_item.added (a duplicated start) is ignored', () => {
    const inputs = [added(0), argsDelta(0, '{"a":'), added(0), argsDelta(0, '1}'), completed()];
    expect(collect(from(inputs).pipe(openaiResponses(), assembleToolCalls())).values).toEqual([
      call('call_0', 'tool_0', { a: 1 }),
      finish('tool-calls', 'completed'),
    ]);
  });

  it('an item without id is keyed by its output_index', () => {
    const noId: OpenAIResponsesEvent = {
      type: 'response.output_item.added',
      output_index: 2,
      item: { type: 'function_call', call_id: 'call_x', name: 'f', arguments: '' },
    };
    const fragment: OpenAIResponsesEvent = {
      type: 'response.function_call_arguments.delta',
      output_index: 2,
      delta: '{}',
    };
    expect(adapt([noId, fragment, completed()]).values).toEqual([
      delta(0, '', { id: 'call_x', name: 'f' }),
      delta(0, '{}'),
      finish('tool-calls', 'completed'),
    ]);
  });

  it('other item types are not calls (built-in tools, custom tools, reasoning): the output keeps them', () => {
    const inputs: OpenAIResponsesEvent[] = [
      { type: 'response.output_item.added', output_index: 0, item: { id: 'ws_1', type: 'web_search_call' } },
      {
        type: 'response.output_item.added',
        output_index: 1,
        item: { id: 'ct_1', type: 'custom_tool_call', call_id: 'c', name: 'g' },
      },
      { type: 'response.custom_tool_call_input.delta', item_id: 'ct_1', output_index: 1, delta: 'raw text' },
      textDelta('Done.'),
      completed({ output: [{ type: 'web_search_call' }, { type: 'message' }] }),
    ];
    expect(adapt(inputs).values).toEqual([
      text('Done.'),
      withOutput(finish('stop', 'completed'), [{ type: 'web_search_call' }, { type: 'message' }]),
    ]);
  });

  it('a call only in response.completed.output is emitted whole, before the usage and the finish', () => {
    const result = adapt([
      textDelta('x'),
      completed({ output: [fnItem(0, '{"a":1}')], usage: { input_tokens: 5 } }),
    ]);
    expect(result.values).toEqual([
      text('x'),
      delta(0, '{"a":1}', { id: 'call_0', name: 'tool_0' }),
      { type: 'usage', inputTokens: 5 },
      withOutput(finish('tool-calls', 'completed'), [fnItem(0, '{"a":1}')]),
    ]);
  });

  it('a streamed call is not emitted again from the output, whose copy is not compared: the stream wins', () => {
    const result = adapt([added(0), argsDelta(0, '{"a":1}'), completed({ output: [fnItem(0, '{"a":2}')] })]);
    expect(result.values).toEqual([
      delta(0, '', { id: 'call_0', name: 'tool_0' }),
      delta(0, '{"a":1}'),
      withOutput(finish('tool-calls', 'completed'), [fnItem(0, '{"a":2}')]),
    ]);
  });

  it('a call added without argument text takes its arguments from the output', () => {
    expect(adapt([added(0), completed({ output: [fnItem(0, '{"a":1}')] })]).values).toEqual([
      delta(0, '', { id: 'call_0', name: 'tool_0' }),
      delta(0, '{"a":1}'),
      withOutput(finish('tool-calls', 'completed'), [fnItem(0, '{"a":1}')]),
    ]);
  });

  it('output items without id are matched to the streamed calls by their position', () => {
    const item = { type: 'function_call', call_id: 'call_x', name: 'f', arguments: '{}' };
    const inputs: OpenAIResponsesEvent[] = [
      { type: 'response.output_item.added', output_index: 1, item: { ...item, arguments: '' } },
      { type: 'response.function_call_arguments.delta', output_index: 1, delta: '{}' },
      completed({ output: [{ type: 'message' }, item, { ...item, call_id: 'call_y' }] }),
    ];
    expect(adapt(inputs).values).toEqual([
      delta(0, '', { id: 'call_x', name: 'f' }),
      delta(0, '{}'),
      delta(1, '{}', { id: 'call_y', name: 'f' }),
      withOutput(finish('tool-calls', 'completed'), [
        { type: 'message' },
        item,
        { ...item, call_id: 'call_y' },
      ]),
    ]);
  });

  it('a call in the output of response.incomplete is not released (its arguments may be cut)', () => {
    const incomplete: OpenAIResponsesEvent = {
      type: 'response.incomplete',
      response: { incomplete_details: { reason: 'max_output_tokens' }, output: [fnItem(0, '{"a":')] },
    };
    expect(adapt([incomplete]).values).toEqual([
      withOutput(finish('length', 'incomplete:max_output_tokens'), [fnItem(0, '{"a":')]),
    ]);
  });

  it('arguments sent as an object are read as their JSON text', () => {
    const parsed = { ...argsDone(0, ''), arguments: { a: 1 } } as unknown as OpenAIResponsesEvent;
    expect(adapt([added(0), parsed, completed()]).values).toEqual([
      delta(0, '', { id: 'call_0', name: 'tool_0' }),
      delta(0, '{"a":1}'),
      finish('tool-calls', 'completed'),
    ]);
  });

  it('passes each argument fragment on as it is, never joined (linear in the stream size)', () => {
    const pieces = Array.from({ length: 2_000 }, (_, i) => (i === 0 ? '{"n":"' : 'x'));
    const inputs = [added(0), ...pieces.map((p) => argsDelta(0, p)), argsDelta(0, '"}'), completed()];
    const fragments = adapt(inputs).values.flatMap((e) =>
      e.type === 'tool-call-delta' ? [e.argsDelta] : [],
    );
    expect(fragments).toEqual(['', ...pieces, '"}']);
  });
});

describe('openaiResponses: finish', () => {
  // biome-ignore format: a table
  const table: [string, OpenAIResponsesInput[], ProviderEvent][] = [
    ['completed, text only', [textDelta('x'), completed()], finish('stop', 'completed')],
    ['completed, a call in the stream', [added(0), completed()], finish('tool-calls', 'completed')],
    ['completed, a call only in response.output', [completed({ output: [fnItem(0)] })], withOutput(finish('tool-calls', 'completed'), [fnItem(0)])],
    ['completed, no status field', [{ type: 'response.completed', response: {} }], finish('stop', 'completed')],
    ['completed after a refusal', [{ type: 'response.refusal.delta', item_id: 'm', output_index: 0, delta: 'No.' }, completed()], { ...finish('content-filter', 'completed'), refusal: 'No.' }],
    ['incomplete: max_output_tokens', [{ type: 'response.incomplete', response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } } }], finish('length', 'incomplete:max_output_tokens')],
    ['incomplete: content_filter', [{ type: 'response.incomplete', response: { status: 'incomplete', incomplete_details: { reason: 'content_filter' } } }], finish('content-filter', 'incomplete:content_filter')],
    ['incomplete: no reason', [{ type: 'response.incomplete', response: { status: 'incomplete', incomplete_details: null } }], finish('other', 'incomplete')],
    ['incomplete after a call stays length', [added(0), { type: 'response.incomplete', response: { incomplete_details: { reason: 'max_output_tokens' } } }], finish('length', 'incomplete:max_output_tokens')],
  ];
  for (const [name, inputs, expected] of table) {
    it(`${name} → ${(expected as { reason: string }).reason}`, () => {
      expect(adapt(inputs).values.at(-1)).toEqual(expected);
    });
  }

  it('emits the usage of the terminal event right before the finish', () => {
    const events = adapt([
      textDelta('x'),
      completed({ usage: { input_tokens: 12, output_tokens: 3 } }),
    ]).values;
    expect(events).toEqual([text('x'), usage(12, 3), finish('stop', 'completed')]);
  });

  it('ignores everything after the terminal event', () => {
    const events = adapt([
      completed(),
      textDelta('late'),
      completed(),
      { type: 'error', code: 'server_error', message: 'm' },
    ]);
    expect(events.values).toEqual([finish('stop', 'completed')]);
    expect(events.error).toBeUndefined();
  });

  it('completes instead of erroring when the source errors after the terminal event', () => {
    const result = collect(
      new Observable<OpenAIResponsesInput>((s) => {
        s.next(completed());
        s.error(new TypeError('terminated'));
      }).pipe(openaiResponses()),
    );
    expect(result.values).toEqual([finish('stop', 'completed')]);
    expect(result.error).toBeUndefined();
    expect(result.completed).toBe(true);
  });

  it('a source error before the terminal event passes through, with no finish', () => {
    const reset = new TypeError('terminated');
    const result = collect(
      new Observable<OpenAIResponsesInput>((s) => {
        s.next(textDelta('Refunding the dam'));
        s.error(reset);
      }).pipe(openaiResponses()),
    );
    expect(result.values).toEqual([text('Refunding the dam')]);
    expect(result.error).toBe(reset);
  });

  it('emits no finish while the response is queued or in progress', () => {
    const lifecycle = ['response.queued', 'response.created', 'response.in_progress'].map((type) => ({
      type,
      response: { status: 'in_progress', usage: null },
    }));
    const result = adapt([...lifecycle, textDelta('Hi')]);
    expect(result.values).toEqual([text('Hi')]);
    expect(result.completed).toBe(true);
  });
});

describe('openaiResponses: refusals', () => {
  const refusal = (value: unknown, type = 'response.refusal.delta') =>
    ({ type, item_id: 'msg_1', output_index: 0, content_index: 0, delta: value }) as OpenAIResponsesEvent;

  it('a refusal is never text: its deltas are joined onto the finish', () => {
    expect(adapt([refusal("I can't"), refusal(' do that.'), completed()]).values).toEqual([
      { ...finish('content-filter', 'completed'), refusal: "I can't do that." },
    ]);
  });

  it('a refusal.done without deltas gives the refusal; after deltas its copy is not read again', () => {
    const done = { type: 'response.refusal.done', item_id: 'msg_1', output_index: 0, refusal: 'No.' };
    expect(adapt([done as OpenAIResponsesEvent, completed()]).values).toEqual([
      { ...finish('content-filter', 'completed'), refusal: 'No.' },
    ]);
    expect(adapt([refusal('Nope.'), done as OpenAIResponsesEvent, completed()]).values).toEqual([
      { ...finish('content-filter', 'completed'), refusal: 'Nope.' },
    ]);
  });

  it('an incomplete response keeps its own reason and carries the refusal', () => {
    const incomplete: OpenAIResponsesEvent = {
      type: 'response.incomplete',
      response: { incomplete_details: { reason: 'content_filter' } },
    };
    expect(adapt([refusal('No.'), incomplete]).values).toEqual([
      { ...finish('content-filter', 'incomplete:content_filter'), refusal: 'No.' },
    ]);
  });
});

describe('openaiResponses: fields of the wrong type', () => {
  const bad = (event: object) => event as OpenAIResponsesEvent;
  // biome-ignore format: a table
  const table: [string, OpenAIResponsesEvent[], string][] = [
    ['a name that is a number', [bad({ ...added(0), item: fnItem(0, '', { name: 7 }) })], 'item.name'],
    ['an empty name', [bad({ ...added(0), item: fnItem(0, '', { name: '' }) })], 'item.name'],
    ['a call_id that is a number', [bad({ ...added(0), item: fnItem(0, '', { call_id: 12 }) })], 'item.call_id'],
    ['an item id that is a number', [bad({ ...added(0), item: fnItem(0, '', { id: 3 }) })], 'item.id'],
    ['arguments of the added item as a boolean', [bad({ ...added(0), item: fnItem(0, '', { arguments: true }) })], 'item.arguments'],
    ['an argument delta that is a number', [added(0), bad({ ...argsDelta(0, ''), delta: 5 })], 'delta'],
    ['arguments.done as a number', [added(0), bad({ ...argsDone(0, ''), arguments: 1 })], 'arguments'],
    ['output_item.done arguments as a number', [added(0), bad({ ...itemDone(0, ''), item: fnItem(0, '', { arguments: 3 }) })], 'item.arguments'],
    ['an item_id that is a number', [added(0), bad({ ...argsDelta(0, '{}'), item_id: 0 })], 'item_id'],
    ['a negative output_index', [bad({ ...added(0), output_index: -1 })], 'output_index'],
    ['an output_index that is not a decimal integer', [bad({ ...added(0), output_index: '1.5' })], 'output_index'],
    ['a text delta that is an object', [bad({ ...textDelta('x'), delta: {} })], 'delta'],
    ['a refusal delta that is a number', [bad({ type: 'response.refusal.delta', delta: 1 })], 'delta'],
    ['a name in response.output that is a number', [completed({ output: [fnItem(0, '', { name: 1 })] })], 'response.output[0].name'],
    ['arguments in response.output as a number', [completed({ output: [fnItem(0, '', { arguments: 1 })] })], 'response.output[0].arguments'],
  ];
  for (const [name, inputs, field] of table) {
    it(`${name} → invalid-field ${field}`, () => {
      const result = adapt([...inputs, completed()]);
      expect(result.values.some((e) => e.type === 'finish')).toBe(false);
      expect(result.error).toBeInstanceOf(ProviderError);
      expect(result.error).toMatchObject({
        code: 'invalid-field',
        retryable: false,
        field,
        payload: inputs.at(-1),
      });
    });
  }

  it('an output_index sent as a decimal string is read as the number', () => {
    const item = { type: 'function_call', call_id: 'call_x', name: 'f', arguments: '' };
    const inputs = [
      bad({ type: 'response.output_item.added', output_index: '2', item }),
      bad({ type: 'response.function_call_arguments.delta', output_index: 2, delta: '{}' }),
      completed(),
    ];
    expect(adapt(inputs).values).toEqual([
      delta(0, '', { id: 'call_x', name: 'f' }),
      delta(0, '{}'),
      finish('tool-calls', 'completed'),
    ]);
  });
});

describe('openaiResponses: errors', () => {
  // biome-ignore format: a table
  const table: [string, OpenAIResponsesEvent, boolean, string | undefined][] = [
    ['flat server_error', { type: 'error', code: 'server_error', message: 'm', param: null }, true, 'server_error'],
    ['flat, code null', { type: 'error', code: null, message: 'm', param: null }, true, undefined],
    ['flat invalid_prompt', { type: 'error', code: 'invalid_prompt', message: 'm', param: null }, false, 'invalid_prompt'],
    ['nested rate limit', { type: 'error', error: { type: 'requests', code: 'rate_limit_exceeded', message: 'm' } }, true, 'rate_limit_exceeded'],
    ['nested invalid request', { type: 'error', error: { type: 'invalid_request_error', code: null, message: 'm' } }, false, 'invalid_request_error'],
    ['nested insufficient_quota', { type: 'error', error: { type: 'insufficient_quota', code: 'insufficient_quota', message: 'm' } }, false, 'insufficient_quota'],
    ['response.failed server_error', { type: 'response.failed', response: { status: 'failed', error: { code: 'server_error', message: 'm' } } }, true, 'server_error'],
    ['response.failed vector_store_timeout', { type: 'response.failed', response: { error: { code: 'vector_store_timeout', message: 'm' } } }, true, 'vector_store_timeout'],
    ['response.failed invalid_image', { type: 'response.failed', response: { error: { code: 'invalid_image', message: 'm' } } }, false, 'invalid_image'],
    ['response.failed image_too_large', { type: 'response.failed', response: { error: { code: 'image_too_large', message: 'm' } } }, false, 'image_too_large'],
    ['response.failed without error', { type: 'response.failed', response: { status: 'failed', error: null } }, true, undefined],
  ];
  for (const [name, event, retryable, code] of table) {
    it(`${name} → retryable ${retryable}`, () => {
      const result = adapt([textDelta('x'), event]);
      expect(result.values).toEqual([text('x')]);
      expect(result.error).toBeInstanceOf(ProviderError);
      expect(result.error).toMatchObject({
        provider: 'openai-responses',
        retryable,
        code: 'upstream',
        upstreamCode: code,
        payload: event,
      });
    });
  }

  it('the flat error event\'s own type ("error") is not read as the error type', () => {
    const error = adapt([{ type: 'error', code: null, message: 'Something went wrong.' }]).error;
    expect(error).toMatchObject({
      code: 'upstream',
      upstreamCode: undefined,
      message: 'openai-responses: Something went wrong.',
    });
  });

  it('the retryable option overrides the classification', () => {
    const result = adapt(
      [{ type: 'error', code: 'invalid_prompt', message: 'm' }],
      openaiResponses({ retryable: (info) => info.code === 'invalid_prompt' }),
    );
    expect(result.error).toMatchObject({ retryable: true });
  });

  it("classifies the official SDK's in-stream error (the nested shape makes it throw an APIError without status)", () => {
    const body = { type: 'insufficient_quota', code: 'insufficient_quota', message: 'quota', param: null };
    const sdkError = Object.assign(new Error('quota'), { status: undefined, error: body });
    const result = collect(
      new Observable<OpenAIResponsesInput>((s) => {
        s.next(textDelta('Hi'));
        s.error(sdkError);
      }).pipe(openaiResponses()),
    );
    expect(result.values).toEqual([text('Hi')]);
    expect(result.error).toMatchObject({
      retryable: false,
      code: 'upstream',
      upstreamCode: 'insufficient_quota',
      payload: body,
    });
  });

  it("reads the official SDK's HTTP error with its status (the one table decides) and keeps it as the cause", () => {
    const body = { message: 'upstream', type: 'api_error', code: null, param: null };
    const sdkError = Object.assign(new Error('503 upstream'), { status: 503, error: body });
    const result = collect(
      new Observable<OpenAIResponsesInput>((s) => s.error(sdkError)).pipe(openaiResponses()),
    );
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({
      retryable: true,
      status: 503,
      code: 'upstream',
      upstreamCode: 'api_error',
      cause: sdkError,
    });
  });

  it('passes other source errors through unchanged', () => {
    const reset = new TypeError('terminated');
    expect(
      collect(new Observable<OpenAIResponsesInput>((s) => s.error(reset)).pipe(openaiResponses())).error,
    ).toBe(reset);
  });
});

describe('openaiResponses: sequence numbers and input handling', () => {
  it('drops a replayed event (a number not above the last one) and allows gaps', () => {
    const events = adapt([
      textDelta('a', 3),
      textDelta('b', 9),
      textDelta('b', 9),
      textDelta('old', 4),
      textDelta('c', 10),
    ]);
    expect(events.values).toEqual([text('a'), text('b'), text('c')]);
  });

  it('events without a sequence number are all read', () => {
    expect(adapt([textDelta('a'), textDelta('a'), completed()]).values).toEqual([
      text('a'),
      text('a'),
      finish('stop', 'completed'),
    ]);
  });

  it('reads a [DONE] sentinel as the end, as the official SDK does: nothing after it', () => {
    expect(adapt([textDelta('a'), completed(), '[DONE]']).values).toEqual([
      text('a'),
      finish('stop', 'completed'),
    ]);
    const cut = adapt([textDelta('a'), '[DONE]', textDelta('b'), completed()]);
    expect(cut.values).toEqual([text('a')]);
    expect(cut.completed).toBe(true);
  });

  it('errors with a non-retryable CleanturnError for a payload that was never parsed', () => {
    const raw = '{"type":"response.completed"}' as unknown as OpenAIResponsesInput;
    const result = adapt([raw]);
    expect(result.error).toBeInstanceOf(CleanturnError);
    expect(result.error).toMatchObject({ retryable: false });
  });

  it('ignores unknown event types and fields (forward compatibility)', () => {
    const inputs = [
      { type: 'response.future_event', whatever: 1 },
      { type: 'response.output_text.annotation.added', annotation: {} },
      { ...textDelta('ok'), obfuscation: 'x7', logprobs: [] },
      completed(),
    ] as OpenAIResponsesEvent[];
    expect(adapt(inputs).values).toEqual([text('ok'), finish('stop', 'completed')]);
  });

  it('keeps its state per subscription: one operator instance, two streams', () => {
    const operator = openaiResponses();
    const first = collect(from([textDelta('a', 0), added(0), completed()]).pipe(operator));
    const second = collect(from([textDelta('b', 0), completed()]).pipe(operator));
    expect(first.values.at(-1)).toEqual(finish('tool-calls', 'completed'));
    expect(second.values).toEqual([text('b'), finish('stop', 'completed')]);
  });
});

standardChecks<OpenAIResponsesInput>({
  name: 'openaiResponses',
  make: () => openaiResponses(),
  values: { a: textDelta('Refund '), b: textDelta('started.'), c: completed() },
  expected: { a: text('Refund '), b: text('started.'), c: finish('stop', 'completed') },
});

describe('openaiResponses: the clean turn after a retry', () => {
  const turnId = 'turn-42';
  /** The n-th subscription replays the n-th fixture (payloads as the transport would hand them over). */
  const replay = (...names: string[]) => attempts(...names.map(payloads));
  const turn = (source: Observable<OpenAIResponsesInput>) => {
    const seen: TurnEvent[] = [];
    return { seen, states: collect(source.pipe(retriedTurn(openaiResponses(), turnId, seen))) };
  };

  it('a stream cut mid-call, then a whole one: the text and the refund of attempt 2 only', () => {
    const { seen, states } = turn(replay('truncated.sse', 'text-and-call.sse'));
    expect(states.error).toBeUndefined();
    const last = states.values.at(-1);
    expect(last?.text).toBe('Checking order ORD-7781. ');
    expect(last?.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
    expect(seen.filter((e) => e.type === 'reset')).toHaveLength(1);
    const released = seen.filter((e) => e.type === 'tool-call');
    expect(released).toHaveLength(1);
    expect(released[0]?.effectKey).toBe(
      effectKey(turnId, { name: 'issue_refund', args: helpDesk.refundArgs }),
    );
  });

  it('a retryable error event (flat shape) is retried; an insufficient_quota one (nested shape) is not', () => {
    const retried = turn(replay('error-flat-then-failed.sse', 'text-and-call.sse'));
    expect(retried.states.values.at(-1)?.text).toBe('Checking order ORD-7781. ');
    let subscriptions = 0;
    const quota = turn(
      defer(() => {
        subscriptions++;
        return from(payloads('error-nested-then-failed.sse'));
      }),
    );
    expect(subscriptions).toBe(1);
    expect(quota.states.error).toMatchObject({
      retryable: false,
      code: 'upstream',
      upstreamCode: 'insufficient_quota',
    });
  });
});
