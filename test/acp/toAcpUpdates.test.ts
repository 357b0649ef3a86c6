// toAcpUpdates in process: the notifications it makes of the clean turn, for ACP v1 and the v2 draft.
import { cleanTurn, type TurnEvent } from 'cleanturn';
import { acpMetaKeys, toAcpUpdates } from 'cleanturn/acp';
import { at, call, finish, helpDesk, keyed, repeated, reset, text, usage } from 'cleanturn/testing';
import { from, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { AcpNotification, AcpSourceEvent, AcpV2Notification } from '../../src/acp/toAcpUpdates.js';
import { standardChecks } from '../support/standardChecks.js';
import { toolResult } from '../support/toolResults.js';

const turnId = 'turn-42';
const sessionId = 'sess-1';
const messageId = (attempt: number) => `msg-${attempt}`;
const c7 = keyed(turnId, 2, call('c7', 'issue_refund', helpDesk.refundArgs));
const attempt2 = 'The book arrived damaged, so I have started a full refund.';

/** Everything an observable emits synchronously. */
function all<T>(source: Observable<T>): T[] {
  const out: T[] = [];
  source.subscribe((value) => out.push(value));
  return out;
}

const chunk = (id: string, value: string) => ({
  sessionId,
  update: {
    sessionUpdate: 'agent_message_chunk' as const,
    messageId: id,
    content: { type: 'text' as const, text: value },
  },
});

describe('toAcpUpdates, ACP v1', () => {
  it('the help-desk turn: attempt 1 on msg-1, the reset opens msg-2 naming msg-1, then the refund c7', () => {
    const updates = all(
      from(helpDesk.turn).pipe(cleanTurn({ turnId }), toAcpUpdates({ sessionId, messageId })),
    );
    expect(updates).toEqual<AcpNotification[]>([
      chunk('msg-1', 'Checking order ORD-7781. '),
      chunk('msg-1', 'Refunding the dam'),
      {
        sessionId,
        update: {
          sessionUpdate: 'agent_message_chunk',
          messageId: 'msg-2',
          content: { type: 'text', text: '' },
          _meta: { 'cleanturn/reset': { attempt: 2, reason: 'connection reset', supersedes: 'msg-1' } },
        },
      },
      chunk('msg-2', 'Checking order ORD-7781. '),
      chunk('msg-2', attempt2),
      {
        sessionId,
        update: {
          sessionUpdate: 'tool_call',
          toolCallId: c7.effectKey,
          title: 'issue_refund',
          name: 'issue_refund',
          kind: 'other',
          status: 'pending',
          rawInput: helpDesk.refundArgs,
          _meta: { 'cleanturn/effectKey': c7.effectKey, 'cleanturn/attempt': 2 },
        },
      },
    ]);
  });

  it('by default each attempt gets a fresh random message id', () => {
    const updates = all(from(helpDesk.turn).pipe(cleanTurn({ turnId }), toAcpUpdates({ sessionId })));
    const ids = updates.map((n) =>
      n.update.sessionUpdate === 'agent_message_chunk' ? n.update.messageId : null,
    );
    const [first, , second] = ids;
    expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(second).toMatch(/^[0-9a-f-]{36}$/);
    expect(second).not.toBe(first);
    expect(ids.slice(0, 5)).toEqual([first, first, second, second, second]);
    // Another subscription (another turn) gets other ids.
    const again = all(from(helpDesk.turn).pipe(cleanTurn({ turnId }), toAcpUpdates({ sessionId })));
    expect(again[0]?.update).not.toMatchObject({ messageId: first });
  });

  it('a reset before any text supersedes nothing; the next reset supersedes the message the first one opened', () => {
    const events: TurnEvent[] = [
      reset(2, 'stalled'),
      reset(3, 'connection reset'),
      at(3, text('Refund started.')),
    ];
    const updates = all(from(events).pipe(toAcpUpdates({ sessionId, messageId })));
    expect(updates.map((n) => n.update._meta?.[acpMetaKeys.reset])).toEqual([
      { attempt: 2, reason: 'stalled' },
      { attempt: 3, reason: 'connection reset', supersedes: 'msg-2' },
      undefined,
    ]);
    expect(updates[2]).toEqual(chunk('msg-3', 'Refund started.'));
  });

  it('ignores stragglers and stale resets; an event of a newer attempt without a reset starts a new message', () => {
    const events: TurnEvent[] = [
      at(1, text('Refunding the dam')),
      at(2, text('Refund started.')),
      at(1, text('aged book')),
      reset(2, 'duplicate'),
      reset(1, 'old'),
    ];
    expect(all(from(events).pipe(toAcpUpdates({ sessionId, messageId })))).toEqual([
      chunk('msg-1', 'Refunding the dam'),
      {
        sessionId,
        update: {
          sessionUpdate: 'agent_message_chunk',
          messageId: 'msg-2',
          content: { type: 'text', text: '' },
          _meta: { 'cleanturn/reset': { attempt: 2, reason: 'retry', supersedes: 'msg-1' } },
        },
      },
      chunk('msg-2', 'Refund started.'),
    ]);
  });

  it('usage, finishes, call fragments and empty text become nothing', () => {
    const events: TurnEvent[] = [
      at(1, usage(120, 8)),
      at(1, { type: 'tool-call-delta', index: 0, argsDelta: '{' }),
      at(1, text('')),
      at(1, finish('stop')),
    ];
    expect(all(from(events).pipe(toAcpUpdates({ sessionId, messageId })))).toEqual([]);
  });

  it("maps the executor's results to tool_call_update, under the same tool call id", () => {
    const events: AcpSourceEvent[] = [
      reset(2, 'connection reset'),
      c7,
      toolResult(c7, 'executed', { result: { refund_id: 're_7781' } }),
      toolResult(c7, 'replayed', { result: { refund_id: 're_7781' } }),
      toolResult(c7, 'in-progress'),
      toolResult(c7, 'failed', { error: { name: 'Error', message: 'declined' } }),
      toolResult(c7, 'unknown-tool', { error: { name: 'UnknownToolError', message: 'no handler' } }),
    ];
    const updates = all(
      from(events).pipe(toAcpUpdates({ sessionId, messageId, toolCallId: (c) => `${c.effectKey}:${c.id}` })),
    );
    const id = `${c7.effectKey}:c7`;
    expect(updates.map((n) => n.update)).toEqual([
      expect.objectContaining({ sessionUpdate: 'agent_message_chunk', messageId: 'msg-2' }),
      expect.objectContaining({ sessionUpdate: 'tool_call', toolCallId: id, status: 'pending' }),
      {
        sessionUpdate: 'tool_call_update',
        toolCallId: id,
        status: 'completed',
        rawOutput: { refund_id: 're_7781' },
        _meta: { 'cleanturn/outcome': 'executed' },
      },
      {
        sessionUpdate: 'tool_call_update',
        toolCallId: id,
        status: 'completed',
        rawOutput: { refund_id: 're_7781' },
        _meta: { 'cleanturn/outcome': 'replayed' },
      },
      {
        sessionUpdate: 'tool_call_update',
        toolCallId: id,
        status: 'in_progress',
        _meta: { 'cleanturn/outcome': 'in-progress' },
      },
      {
        sessionUpdate: 'tool_call_update',
        toolCallId: id,
        status: 'failed',
        rawOutput: { name: 'Error', message: 'declined' },
        _meta: { 'cleanturn/outcome': 'failed' },
      },
      {
        sessionUpdate: 'tool_call_update',
        toolCallId: id,
        status: 'failed',
        rawOutput: { name: 'UnknownToolError', message: 'no handler' },
        _meta: { 'cleanturn/outcome': 'unknown-tool' },
      },
    ]);
  });

  it('a run whose effect may have happened twice is completed, with cleanturn/inDoubt saying why', () => {
    const events: AcpSourceEvent[] = [
      reset(2, 'connection reset'),
      c7,
      toolResult(c7, 'executed', { result: 1, reclaimed: true }),
      toolResult(c7, 'executed', { result: 2, reclaimed: false, leaseLost: true }),
      toolResult(c7, 'executed', { result: 3, reclaimed: false }),
    ];
    const updates = all(from(events).pipe(toAcpUpdates({ sessionId, messageId })));
    expect(updates.slice(-3).map((n) => n.update)).toEqual([
      expect.objectContaining({
        status: 'completed',
        rawOutput: 1,
        _meta: { 'cleanturn/outcome': 'executed', 'cleanturn/inDoubt': 'reclaimed' },
      }),
      expect.objectContaining({
        status: 'completed',
        rawOutput: 2,
        _meta: { 'cleanturn/outcome': 'executed', 'cleanturn/inDoubt': 'lease-lost' },
      }),
      expect.objectContaining({
        status: 'completed',
        rawOutput: 3,
        _meta: { 'cleanturn/outcome': 'executed' },
      }),
    ]);
  });

  it('a repeat (its key already ran) is announced as completed, marked cleanturn/repeat', () => {
    const c9 = repeated(turnId, 2, call('c9', 'issue_refund', helpDesk.refundArgs));
    const events: AcpSourceEvent[] = [reset(2, 'connection reset'), c7, c9];
    // With one tool call id per call, the repeat is a tool call of its own, already done.
    const perCall = all(
      from(events).pipe(toAcpUpdates({ sessionId, messageId, toolCallId: (c) => `${c.effectKey}:${c.id}` })),
    );
    expect(perCall.map((n) => n.update).slice(1)).toEqual([
      expect.objectContaining({
        sessionUpdate: 'tool_call',
        toolCallId: `${c7.effectKey}:c7`,
        status: 'pending',
      }),
      {
        sessionUpdate: 'tool_call',
        toolCallId: `${c9.effectKey}:c9`,
        title: 'issue_refund',
        name: 'issue_refund',
        kind: 'other',
        status: 'completed',
        rawInput: helpDesk.refundArgs,
        _meta: {
          [acpMetaKeys.effectKey]: c9.effectKey,
          [acpMetaKeys.attempt]: 2,
          [acpMetaKeys.repeat]: true,
        },
      },
    ]);
    expect(perCall[1]?.update._meta).not.toHaveProperty(acpMetaKeys.repeat);
    // With the default ids (the effect key), the repeat updates the call it repeats instead of announcing it twice,
    // and leaves that entry's status to its own result: c7 may not have run yet.
    const byKey = all(from(events).pipe(toAcpUpdates({ sessionId, messageId })));
    expect(
      byKey.map((n) => [n.update.sessionUpdate, 'status' in n.update ? n.update.status : undefined]),
    ).toEqual([
      ['agent_message_chunk', undefined],
      ['tool_call', 'pending'],
      ['tool_call_update', undefined],
    ]);
    expect(byKey[2]?.update).toMatchObject({
      toolCallId: c7.effectKey,
      _meta: { [acpMetaKeys.repeat]: true },
    });
  });

  it('titles and kinds come from the options', () => {
    const [update] = all(
      from([keyed(turnId, 1, call('c1', 'issue_refund', helpDesk.refundArgs))]).pipe(
        toAcpUpdates({
          sessionId,
          title: (c) => `Refund ${(c.args as typeof helpDesk.refundArgs).order_id}`,
          kind: () => 'execute',
        }),
      ),
    );
    expect(update?.update).toMatchObject({ title: 'Refund ORD-7781', kind: 'execute' });
  });
});

describe("toAcpUpdates, ACP v2 draft (protocol: 'v2')", () => {
  it('the help-desk turn: one message per turn; the reset replaces its content with nothing', () => {
    const updates = all(
      from(helpDesk.turn).pipe(cleanTurn({ turnId }), toAcpUpdates({ sessionId, messageId, protocol: 'v2' })),
    );
    expect(updates).toEqual<AcpV2Notification[]>([
      chunk('msg-1', 'Checking order ORD-7781. '),
      chunk('msg-1', 'Refunding the dam'),
      {
        sessionId,
        update: {
          sessionUpdate: 'agent_message',
          messageId: 'msg-1',
          content: [],
          _meta: { 'cleanturn/reset': { attempt: 2, reason: 'connection reset' } },
        },
      },
      chunk('msg-1', 'Checking order ORD-7781. '),
      chunk('msg-1', attempt2),
      {
        sessionId,
        update: {
          sessionUpdate: 'tool_call_update',
          toolCallId: c7.effectKey,
          title: 'issue_refund',
          name: 'issue_refund',
          kind: 'other',
          status: 'pending',
          rawInput: helpDesk.refundArgs,
          _meta: { 'cleanturn/effectKey': c7.effectKey, 'cleanturn/attempt': 2 },
        },
      },
    ]);
  });

  it('asks for a message id once per turn, with the attempt that first shows something', () => {
    const asked: number[] = [];
    const ids = (attempt: number) => {
      asked.push(attempt);
      return `turn-message-${attempt}`;
    };
    const events: TurnEvent[] = [
      reset(2, 'stalled'),
      at(2, text('Refund')),
      reset(3, 'again'),
      at(3, text('Refund')),
    ];
    const updates = all(from(events).pipe(toAcpUpdates({ sessionId, messageId: ids, protocol: 'v2' })));
    expect(asked).toEqual([2]);
    expect(new Set(updates.map((n) => (n.update as { messageId?: string }).messageId))).toEqual(
      new Set(['turn-message-2']),
    );
  });
});

const texts = { a: at(1, text('Refund ')), b: at(1, text('started.')), c: at(1, finish()) };
const calls = {
  a: keyed(turnId, 1, call('c1', 'issue_refund', helpDesk.refundArgs)),
  b: at(1, text('Refund started.')),
  c: at(1, finish()),
};

standardChecks<AcpSourceEvent>({
  name: 'toAcpUpdates',
  make: () => toAcpUpdates({ sessionId, messageId }),
  values: { a: texts.a, b: texts.b, c: reset(2, 'connection reset') },
  expected: {
    a: chunk('msg-1', 'Refund '),
    b: chunk('msg-1', 'started.'),
    c: {
      sessionId,
      update: {
        sessionUpdate: 'agent_message_chunk',
        messageId: 'msg-2',
        content: { type: 'text', text: '' },
        _meta: { 'cleanturn/reset': { attempt: 2, reason: 'connection reset', supersedes: 'msg-1' } },
      },
    },
  },
  throwing: [
    { callback: 'messageId', make: (fail) => toAcpUpdates({ sessionId, messageId: fail }) },
    { callback: 'toolCallId', make: (fail) => toAcpUpdates({ sessionId, toolCallId: fail }), values: calls },
    { callback: 'title', make: (fail) => toAcpUpdates({ sessionId, title: fail }), values: calls },
    { callback: 'kind', make: (fail) => toAcpUpdates({ sessionId, kind: fail }), values: calls },
  ],
});

standardChecks<AcpSourceEvent>({
  name: "toAcpUpdates({ protocol: 'v2' })",
  make: () => toAcpUpdates({ sessionId, messageId, protocol: 'v2' }),
  values: { a: texts.a, b: texts.b, c: reset(2, 'connection reset') },
  expected: {
    a: chunk('msg-1', 'Refund '),
    b: chunk('msg-1', 'started.'),
    c: {
      sessionId,
      update: {
        sessionUpdate: 'agent_message',
        messageId: 'msg-1',
        content: [],
        _meta: { 'cleanturn/reset': { attempt: 2, reason: 'connection reset' } },
      },
    },
  },
  throwing: [
    { callback: 'messageId', make: (fail) => toAcpUpdates({ sessionId, protocol: 'v2', messageId: fail }) },
  ],
});

describe('toAcpUpdates: the facts of a reset, for an editor that says "retrying in 3 s"', () => {
  const facts = {
    delay: 3000,
    failedAttempt: 1,
    outputStarted: true,
    retryCount: 1,
    maxRetries: 2,
    errorName: 'HttpStatusError',
    status: 503,
  };
  const events: TurnEvent[] = [
    at(1, text('Refunding the dam')),
    reset(2, 'HTTP 503 Service Unavailable', facts),
    at(2, text('Refund started.')),
  ];

  it('v1: the reset meta carries the wait and the facts beside its existing keys', () => {
    const updates = all(from(events).pipe(toAcpUpdates({ sessionId, messageId })));
    expect(updates[1]?.update._meta?.[acpMetaKeys.reset]).toEqual({
      attempt: 2,
      reason: 'HTTP 503 Service Unavailable',
      supersedes: 'msg-1',
      ...facts,
    });
  });

  it('v2: the replacement that clears the message carries them in the same meta', () => {
    const updates = all(from(events).pipe(toAcpUpdates({ sessionId, messageId, protocol: 'v2' })));
    expect(updates[1]?.update).toMatchObject({
      sessionUpdate: 'agent_message',
      messageId: 'msg-1',
      content: [],
    });
    const meta = (updates[1]?.update as { _meta?: Record<string, unknown> } | undefined)?._meta;
    expect(meta?.[acpMetaKeys.reset]).toEqual({
      attempt: 2,
      reason: 'HTTP 503 Service Unavailable',
      ...facts,
    });
  });

  it('a reset without facts keeps the meta as before: attempt, reason, supersedes', () => {
    const plain = all(
      from([at(1, text('Refunding the dam')), reset(2, 'connection reset')] as TurnEvent[]).pipe(
        toAcpUpdates({ sessionId, messageId }),
      ),
    );
    expect(plain[1]?.update._meta?.[acpMetaKeys.reset]).toStrictEqual({
      attempt: 2,
      reason: 'connection reset',
      supersedes: 'msg-1',
    });
  });

  it('leaves out a fact of the wrong type, so that the meta is what its type says', () => {
    const odd = reset(2, 'x', { delay: 'soon' as unknown as number, status: 503 });
    const updates = all(from([odd] as TurnEvent[]).pipe(toAcpUpdates({ sessionId, messageId })));
    expect(updates[0]?.update._meta?.[acpMetaKeys.reset]).toStrictEqual({
      attempt: 2,
      reason: 'x',
      status: 503,
    });
  });

  it('a reset without an event of its own (a newer attempt straight away) has no facts to carry', () => {
    const updates = all(
      from([at(1, text('a')), at(2, text('b'))] as TurnEvent[]).pipe(toAcpUpdates({ sessionId, messageId })),
    );
    expect(updates[1]?.update._meta?.[acpMetaKeys.reset]).toStrictEqual({
      attempt: 2,
      reason: 'retry',
      supersedes: 'msg-1',
    });
  });
});
