// The view reducer as a web chat uses it: a DOM-free chat bubble re-rendered to HTML from every snapshot, as
// a framework component would be. The tests read the HTML the user would see.
import { cleanTurn, effectKey, naivePolicy, resetOnlyPolicy, type ToolResultLike } from 'cleanturn';
import { initialView, reduceView, type TurnView, turnView, type ViewEvent } from 'cleanturn/renderers';
import { at, call, finish, helpDesk, keyed, repeated, reset, text, usage } from 'cleanturn/testing';
import { from, type Observable, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { PolicyEvent } from '../../src/types.js';
import { standardChecks } from '../support/standardChecks.js';
import { toolResult } from '../support/toolResults.js';

const turnId = 'turn-42';

const escapeHtml = (s: string) =>
  s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string);

/** The assistant's chat bubble, as a web chat renders it from a view snapshot. */
function bubble(view: TurnView): string {
  const notice =
    view.notice === undefined ? '' : `<p class="notice">Retrying (${escapeHtml(view.notice.reason)})…</p>`;
  const calls = view.toolCalls
    .map(
      (c) =>
        `<li class="${c.status}" data-effect-key="${c.effectKey ?? ''}">${escapeHtml(c.name)} ${escapeHtml(JSON.stringify(c.args))}</li>`,
    )
    .join('');
  return `<div class="bubble" data-attempt="${view.attempt}">${notice}<p>${escapeHtml(view.text)}</p>${calls === '' ? '' : `<ul>${calls}</ul>`}</div>`;
}

/** Every snapshot the operator emits for `events$`, synchronously. */
function snapshots(events$: Observable<ViewEvent>): TurnView[] {
  let views: TurnView[] = [];
  events$.pipe(turnView(), toArray()).subscribe((all) => {
    views = all;
  });
  return views;
}

const attempt2 = 'Checking order ORD-7781. The book arrived damaged, so I have started a full refund.';
const key = effectKey(turnId, { name: 'issue_refund', args: helpDesk.refundArgs });

describe('a web chat bubble fed by turnView()', () => {
  it('the help-desk turn: the bubble drops attempt 1 on reset, says it is retrying, and ends clean', () => {
    const html = snapshots(from(helpDesk.turn).pipe(cleanTurn({ turnId }))).map(bubble);

    expect(html).toEqual([
      '<div class="bubble" data-attempt="1"><p>Checking order ORD-7781. </p></div>',
      '<div class="bubble" data-attempt="1"><p>Checking order ORD-7781. Refunding the dam</p></div>',
      '<div class="bubble" data-attempt="2"><p class="notice">Retrying (connection reset)…</p><p></p></div>',
      '<div class="bubble" data-attempt="2"><p>Checking order ORD-7781. </p></div>',
      `<div class="bubble" data-attempt="2"><p>${attempt2}</p></div>`,
      `<div class="bubble" data-attempt="2"><p>${attempt2}</p><ul><li class="released" data-effect-key="${key}">issue_refund {&quot;order_id&quot;:&quot;ORD-7781&quot;,&quot;amount&quot;:&quot;full&quot;}</li></ul></div>`,
      `<div class="bubble" data-attempt="2"><p>${attempt2}</p><ul><li class="released" data-effect-key="${key}">issue_refund {&quot;order_id&quot;:&quot;ORD-7781&quot;,&quot;amount&quot;:&quot;full&quot;}</li></ul></div>`,
    ]);
  });

  it('the final snapshot holds attempt 2 only: its text, the one refund c7 with its key, one reset', () => {
    const last = snapshots(from(helpDesk.turn).pipe(cleanTurn({ turnId }))).at(-1);
    expect(last).toEqual({
      attempt: 2,
      text: attempt2,
      reasoning: '',
      toolCalls: [
        { id: 'c7', name: 'issue_refund', args: helpDesk.refundArgs, effectKey: key, status: 'released' },
      ],
      finished: true,
      finishReason: 'stop',
      resets: [reset(2, 'connection reset')],
      notice: undefined,
    });
  });

  it('the naive policy glues the attempts together in the same bubble; reset-only shows both refunds ran', () => {
    const naive = snapshots(from(helpDesk.turn).pipe(naivePolicy())).at(-1);
    expect(naive?.text).toContain('Refunding the damChecking order');
    expect(naive?.toolCalls.map((c) => c.id)).toEqual(['c1', 'c7']);

    // Reset-only: the text is clean (c1 vanished from the view with attempt 1), though c1 already ran.
    const resetOnly = snapshots(from(helpDesk.turn).pipe(resetOnlyPolicy())).at(-1);
    expect(resetOnly?.text).toBe(attempt2);
    expect(resetOnly?.toolCalls.map((c) => [c.id, c.effectKey])).toEqual([['c7', undefined]]);
  });

  it('emits nothing for events that change nothing', () => {
    const events: ViewEvent[] = [
      at(1, usage(120, 8)),
      at(1, text('')),
      at(1, text('Hi')),
      at(1, usage(120, 9)),
    ];
    expect(snapshots(from(events)).map((v) => v.text)).toEqual(['Hi']);
  });
});

describe('reduceView', () => {
  const c7 = keyed(turnId, 2, call('c7', 'issue_refund', helpDesk.refundArgs));
  const run = (events: ViewEvent[], from: TurnView = initialView) => events.reduce(reduceView, from);

  it("keeps a refusal's message apart from the text", () => {
    const refused = { ...finish('content-filter', 'stop'), refusal: 'I cannot help with that.' };
    const view = run([at(1, text('Sure')), at(1, refused)]);
    expect(view).toMatchObject({
      text: 'Sure',
      finishReason: 'content-filter',
      refusal: 'I cannot help with that.',
    });
    expect(run([at(1, text('ok')), at(1, finish())]).refusal).toBeUndefined();
  });

  it('returns the same view for events that change nothing', () => {
    const view = run([at(2, text('Refund started.')), c7]);
    const unchanged: ViewEvent[] = [
      at(2, usage(120, 8)),
      at(1, text('aged book')), // a straggler of the abandoned attempt
      reset(2, 'a duplicate reset'),
      reset(1, 'an old reset'),
      at(2, { type: 'tool-call-delta', index: 0, argsDelta: '{' }),
      { type: 'tool-result', effectKey: 'ffffffffffffffff', call: { ...c7, id: 'c99' }, outcome: 'executed' },
      { type: 'tool-result', effectKey: c7.effectKey, call: { ...c7, attempt: 1 }, outcome: 'executed' },
    ];
    for (const event of unchanged) expect(reduceView(view, event)).toBe(view);
  });

  it('shares what did not change: a text token makes one small object, never a copy of the calls', () => {
    const before = run([reset(2, 'connection reset'), c7, at(2, text('Refund '))]);
    const after = reduceView(before, at(2, text('started.')));
    expect(after).not.toBe(before);
    expect(after.text).toBe('Refund started.');
    expect(after.toolCalls).toBe(before.toolCalls);
    expect(after.resets).toBe(before.resets);
    expect(before.text).toBe('Refund '); // the old snapshot is untouched
  });

  it('a reset empties text and calls, records the reset and shows a notice until the new attempt shows something', () => {
    const streaming = run([at(1, text('Refunding the dam')), keyed(turnId, 1, call('c2', 'lookup_order'))]);
    const reset2 = reduceView(streaming, reset(2, 'connection reset'));
    expect(reset2).toMatchObject({
      attempt: 2,
      text: '',
      toolCalls: [],
      resets: [reset(2, 'connection reset')],
      notice: { type: 'retrying', attempt: 2, reason: 'connection reset' },
    });
    expect(reduceView(reset2, at(2, usage(1, 1))).notice).toBeDefined();
    expect(reduceView(reset2, at(2, text('R'))).notice).toBeUndefined();
    expect(reduceView(reset2, c7).notice).toBeUndefined();
    expect(reduceView(reset2, at(2, finish('error'))).notice).toBeUndefined();
  });

  it('an event of a newer attempt without a reset still starts over', () => {
    const view = run([at(1, text('Refunding the dam')), at(3, text('Refund started.'))]);
    expect(view).toMatchObject({ attempt: 3, text: 'Refund started.', resets: [reset(3, 'retry')] });
  });

  it("tool results update a shown call's status and output", () => {
    const shown = run([reset(2, 'connection reset'), c7]);
    const status = (r: ToolResultLike) => reduceView(shown, r).toolCalls[0];
    expect(status(toolResult(c7, 'executed', { result: { refund_id: 're_1' } }))).toMatchObject({
      status: 'completed',
      output: { refund_id: 're_1' },
    });
    expect(status(toolResult(c7, 'replayed', { result: null }))).toMatchObject({
      status: 'completed',
      output: null,
    });
    expect(status(toolResult(c7, 'in-progress'))).toMatchObject({ status: 'running' });
    expect(status(toolResult(c7, 'failed', { error: { message: 'declined' } }))).toMatchObject({
      status: 'failed',
      output: { message: 'declined' },
    });
    expect(status(toolResult(c7, 'unknown-tool'))).toMatchObject({ status: 'failed' });
    expect(shown.toolCalls[0]?.status).toBe('released');
  });

  it('marks a run whose effect may have happened twice as in doubt (a reclaimed claim, a lost lease)', () => {
    const shown = run([reset(2, 'connection reset'), c7]);
    const view = (r: ToolResultLike) => reduceView(shown, r).toolCalls[0];
    expect(view(toolResult(c7, 'executed', { result: 1, reclaimed: false }))?.inDoubt).toBeUndefined();
    expect(view(toolResult(c7, 'executed', { result: 1, reclaimed: true }))).toMatchObject({
      status: 'completed',
      output: 1,
      inDoubt: 'reclaimed',
    });
    expect(view(toolResult(c7, 'executed', { result: 1, leaseLost: true }))).toMatchObject({
      status: 'completed',
      inDoubt: 'lease-lost',
    });
    expect(view(toolResult(c7, 'failed', { error: { message: 'aborted' }, leaseLost: true }))).toMatchObject({
      status: 'failed',
      inDoubt: 'lease-lost',
    });
    expect(view(toolResult(c7, 'replayed', { result: 1 }))?.inDoubt).toBeUndefined();
  });

  it('shows a repeat (its key already ran) as such, and its replayed result as completed', () => {
    const c9 = repeated(turnId, 2, call('c9', 'issue_refund', helpDesk.refundArgs));
    const shown = run([reset(2, 'connection reset'), c7, c9]);
    expect(shown.toolCalls.map((c) => [c.id, c.status, c.effectKey])).toEqual([
      ['c7', 'released', c7.effectKey],
      ['c9', 'repeat', c7.effectKey],
    ]);
    const answered = reduceView(shown, toolResult(c9, 'replayed', { result: { refund_id: 're_1' } }));
    expect(answered.toolCalls[1]).toMatchObject({ status: 'completed', output: { refund_id: 're_1' } });
    expect(answered.toolCalls[0]).toBe(shown.toolCalls[0]);
  });

  it('reads the output of any policy: calls without an effect key have none', () => {
    const plain: PolicyEvent = at(1, call('c1', 'issue_refund', helpDesk.refundArgs));
    expect(reduceView(initialView, plain).toolCalls[0]?.effectKey).toBeUndefined();
  });

  it('the initial view is frozen', () => {
    expect(Object.isFrozen(initialView)).toBe(true);
    expect(Object.isFrozen(initialView.toolCalls)).toBe(true);
  });
});

const views = {
  a: reduceView(initialView, at(1, text('Refund '))),
  b: reduceView(reduceView(initialView, at(1, text('Refund '))), at(1, text('started.'))),
};

standardChecks<ViewEvent>({
  name: 'turnView',
  make: () => turnView(),
  values: { a: at(1, text('Refund ')), b: at(1, text('started.')), c: at(1, finish()) },
  expected: {
    a: views.a,
    b: views.b,
    c: { ...views.b, finished: true, finishReason: 'stop' },
  },
});

describe('reduceView: a resume', () => {
  it('keeps the text and shows "resuming" until the answer goes on', () => {
    let view = initialView;
    view = reduceView(view, at(1, text('Checking order ')));
    const before = view;
    view = reduceView(view, { type: 'resume', attempt: 1, after: 4, reason: 'connection reset' });
    expect(view.text).toBe('Checking order ');
    expect(view.resets).toBe(before.resets);
    expect(view.notice).toEqual({ type: 'resuming', attempt: 1, reason: 'connection reset' });
    view = reduceView(view, at(1, text('ORD-7781.')));
    expect(view.text).toBe('Checking order ORD-7781.');
    expect(view.notice).toBeUndefined();
  });

  it('ignores a resume of an abandoned attempt', () => {
    const view = reduceView(reduceView(initialView, reset(2, 'connection reset')), at(2, text('Refund')));
    expect(reduceView(view, { type: 'resume', attempt: 1, after: 4, reason: 'late' })).toBe(view);
  });
});
