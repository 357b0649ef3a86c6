import { requireUsable } from 'cleanturn';
import { at, call, defineMarbles, finish, helpDesk, reset, text } from 'cleanturn/testing';
import { unusableAttemptError } from '../src/errors.js';

const refund = call('c1', 'issue_refund', helpDesk.refundArgs);
const everything = call('c1', 'issue_refund', { order_id: 'ORD-7781', amount: 'everything' });
const refused = { type: 'finish', reason: 'content-filter', refusal: "I can't help with that." } as const;
/** The refund tool's schema check, as a user would write it over Ajv or Zod. */
const validateArgs = (c: { name: string; args: unknown }) =>
  c.name === 'issue_refund' && !['full', 'partial'].includes((c.args as { amount?: string }).amount ?? '')
    ? 'amount must be "full" or "partial"'
    : undefined;
const nothing = 'the model finished with no answer text and no tool call';

export default defineMarbles({
  name: 'requireUsable',
  summary:
    'Errors with a retryable `unusable TurnError` in place of the finish of an attempt that cannot be used: a refusal, an empty answer, a malformed call, arguments that fail the schema.',
  cases: [
    {
      title: 'arguments that fail the schema: the finish becomes the error, and the call is never released',
      source: /*   */ '-a-k-f-|',
      values: { a: text('Refunding everything. '), k: everything, f: finish('tool-calls') },
      label: 'requireUsable({ validateArgs })',
      operator: () => requireUsable({ validateArgs }),
      expected: /* */ '-a-k-#',
      expectedValues: { a: text('Refunding everything. '), k: everything },
      expectedError: unusableAttemptError(
        'invalid-arguments',
        'tool call c1 (issue_refund): amount must be "full" or "partial"',
      ),
      subscriptions: '^----!',
    },
    {
      title: 'a usable attempt passes through untouched',
      source: /*   */ '-a-k-f-|',
      values: { a: text('Checking order ORD-7781. '), k: refund, f: finish('tool-calls') },
      label: 'requireUsable({ validateArgs })',
      operator: () => requireUsable({ validateArgs }),
      expected: /* */ '-a-k-f-|',
      expectedValues: { a: text('Checking order ORD-7781. '), k: refund, f: finish('tool-calls') },
      subscriptions: '^------!',
    },
    {
      title: 'a refusal becomes a retryable error in place of its finish',
      source: /*   */ '-f-|',
      values: { f: refused },
      label: 'requireUsable()',
      operator: () => requireUsable(),
      expected: /* */ '-#',
      expectedError: unusableAttemptError('refusal', 'the model refused: "I can\'t help with that."'),
      subscriptions: '^!',
    },
    {
      title: 'an answer of whitespace only is empty',
      source: /*   */ '-a-f-|',
      values: { a: text(' '), f: finish('stop') },
      label: 'requireUsable()',
      operator: () => requireUsable(),
      expected: /* */ '-a-#',
      expectedValues: { a: text(' ') },
      expectedError: unusableAttemptError('empty', nothing),
      subscriptions: '^--!',
    },
    {
      title: 'on a tagged stream each attempt is checked alone: a straggler does not fill an empty one',
      source: /*   */ '-a-x-s-f-|',
      values: {
        a: at(1, text('Refunding the dam')),
        x: reset(2, 'connection reset'),
        s: at(1, text('aged book.')),
        f: at(2, finish('stop')),
      },
      label: 'requireUsable()',
      operator: () => requireUsable(),
      expected: /* */ '-a-x-s-#',
      expectedValues: {
        a: at(1, text('Refunding the dam')),
        x: reset(2, 'connection reset'),
        s: at(1, text('aged book.')),
      },
      expectedError: unusableAttemptError('empty', nothing, 2),
      subscriptions: '^------!',
    },
  ],
});
