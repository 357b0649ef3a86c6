import { toTerminal } from 'cleanturn/renderers';
import { at, defineMarbles, reasoning, reset, text } from 'cleanturn/testing';
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
    {
      title:
        'reasoning is set apart: its lines start with │ (faint on a TTY); the answer starts on a line of its own',
      source: /*   */ '-r-s-a-X-b-|',
      // biome-ignore format: an aligned value table
      values: {
        r: at(1, reasoning('The customer wants')),
        s: at(1, reasoning(' a refund.\nCheck the order.')),
        a: at(1, text('Refunding the dam')),
        X: reset(2, 'connection reset'),
        b: at(2, text('Checking order ORD-7781. ')),
      },
      label: 'toTerminal({ tty: true, columns: 30 })',
      operator: () => toTerminal({ tty: true, columns: 30 }),
      expected: /* */ '-r-s-a-x-b-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        r: '\x1b[2m│ The customer wants\x1b[22m',
        s: '\x1b[2m a refund.\r\n│ Check the order.\x1b[22m',
        a: '\r\nRefunding the dam',
        x: '\r\x1b[2A\x1b[J\x1b[2m↺ attempt 2 (connection reset)\x1b[22m\r\n',
        b: 'Checking order ORD-7781. ',
      },
    },
  ],
});
