import { toTerminal } from 'cleanturn/renderers';
import { defineMarbles } from 'cleanturn/testing';
import { keyedK, tagged as t } from './alphabet.js';

const refundLine = `⚙ issue_refund {"order_id":"ORD-7781","amount":"full"} [${keyedK.effectKey}]`;

export default defineMarbles({
  name: 'toTerminal',
  summary:
    'Renders the turn for a terminal: on reset it moves the cursor back over what the abandoned attempt printed and erases it; without a TTY it prints a marker line.',
  cases: [
    {
      title:
        'on a TTY 30 columns wide, attempt 1 took two rows: the reset goes up one row, erases below and prints the marker',
      source: /*   */ '-A-D-X-B-E-K-F-|',
      values: { ...t, K: keyedK },
      label: 'toTerminal({ tty: true, columns: 30 })',
      operator: () => toTerminal({ tty: true, columns: 30 }),
      expected: /* */ '-a-d-x-b-e-k---|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        a: 'Checking order ORD-7781. ',
        d: 'Refunding the dam',
        x: '\r\x1b[1A\x1b[J\x1b[2m↺ attempt 2 (connection reset)\x1b[22m\r\n',
        b: 'Checking order ORD-7781. ',
        e: 'The book arrived damaged, so I have started a full refund.',
        k: `\r\n\x1b[2m${refundLine}\x1b[22m\r\n`,
      },
      subscriptions: '^--------------!',
    },
    {
      title: 'without a TTY (a pipe, a log): a marker line, after which the turn starts over',
      source: /*   */ '-A-D-X-B-E-K-F-|',
      values: { ...t, K: keyedK },
      label: 'toTerminal()',
      operator: () => toTerminal(),
      expected: /* */ '-a-d-x-b-e-k---|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        a: 'Checking order ORD-7781. ',
        d: 'Refunding the dam',
        x: '\n↺ attempt 2 (connection reset)\n',
        b: 'Checking order ORD-7781. ',
        e: 'The book arrived damaged, so I have started a full refund.',
        k: `\n${refundLine}\n`,
      },
    },
  ],
});
