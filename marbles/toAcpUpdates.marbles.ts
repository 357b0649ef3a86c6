import { toAcpUpdates } from 'cleanturn/acp';
import { at, defineMarbles, reasoning, reset, text } from 'cleanturn/testing';
import { keyedK, tagged as t } from './alphabet.js';

const sessionId = 'sess-1';
const messageId = (attempt: number) => `msg-${attempt}`;

const chunk = (id: string, text: string) => ({
  sessionId,
  update: { sessionUpdate: 'agent_message_chunk', messageId: id, content: { type: 'text', text } },
});
const thought = (id: string, value: string) => ({
  sessionId,
  update: { sessionUpdate: 'agent_thought_chunk', messageId: id, content: { type: 'text', text: value } },
});
const call = {
  toolCallId: keyedK.effectKey,
  title: 'issue_refund',
  name: 'issue_refund',
  kind: 'other',
  status: 'pending',
  rawInput: keyedK.args,
  _meta: { 'cleanturn/effectKey': keyedK.effectKey, 'cleanturn/attempt': 2 },
};
const opening = 'Checking order ORD-7781. ';
const sentence = 'The book arrived damaged, so I have started a full refund.';

export default defineMarbles({
  name: 'toAcpUpdates',
  summary:
    'Turns the clean turn into ACP session/update notifications; a reset starts a new message (v1) or replaces the message with nothing (v2 draft).',
  cases: [
    {
      title: 'ACP v1: the reset opens msg-2 with an empty chunk whose meta says it supersedes msg-1',
      source: /*   */ '-A-D-X-B-E-K-F-|',
      values: { ...t, K: keyedK },
      label: "toAcpUpdates({ sessionId: 'sess-1', messageId: (attempt) => 'msg-' + attempt })",
      operator: () => toAcpUpdates({ sessionId, messageId }),
      expected: /* */ '-a-d-x-b-e-k---|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        a: chunk('msg-1', opening),
        d: chunk('msg-1', 'Refunding the dam'),
        x: {
          sessionId,
          update: {
            sessionUpdate: 'agent_message_chunk', messageId: 'msg-2', content: { type: 'text', text: '' },
            _meta: { 'cleanturn/reset': { attempt: 2, reason: 'connection reset', supersedes: 'msg-1' } },
          },
        },
        b: chunk('msg-2', opening),
        e: chunk('msg-2', sentence),
        k: { sessionId, update: { sessionUpdate: 'tool_call', ...call } },
      },
      subscriptions: '^--------------!',
    },
    {
      title: "ACP v2 draft: the reset replaces msg-1's content with nothing; attempt 2 streams into it again",
      source: /*   */ '-A-D-X-B-E-K-F-|',
      values: { ...t, K: keyedK },
      label:
        "toAcpUpdates({ sessionId: 'sess-1', protocol: 'v2', messageId: (attempt) => 'msg-' + attempt })",
      operator: () => toAcpUpdates({ sessionId, protocol: 'v2', messageId }),
      expected: /* */ '-a-d-x-b-e-k---|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        a: chunk('msg-1', opening),
        d: chunk('msg-1', 'Refunding the dam'),
        x: {
          sessionId,
          update: {
            sessionUpdate: 'agent_message', messageId: 'msg-1', content: [],
            _meta: { 'cleanturn/reset': { attempt: 2, reason: 'connection reset' } },
          },
        },
        b: chunk('msg-1', opening),
        e: chunk('msg-1', sentence),
        k: { sessionId, update: { sessionUpdate: 'tool_call_update', ...call } },
      },
    },
    {
      title:
        "ACP v1: reasoning streams to the attempt's own thought; the reset supersedes it with the message",
      source: /*   */ '-r-a-x-s-b-|',
      values: {
        r: at(1, reasoning('The customer wants a refund.')),
        a: at(1, text('Refunding the dam')),
        x: reset(2, 'connection reset'),
        s: at(2, reasoning('Check the order first.')),
        b: at(2, text('Checking order ORD-7781.')),
      },
      label: "toAcpUpdates({ sessionId: 'sess-1', messageId: (attempt) => 'msg-' + attempt })",
      operator: () => toAcpUpdates({ sessionId, messageId }),
      expected: /* */ '-r-a-x-s-b-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        r: thought('msg-1:thought', 'The customer wants a refund.'),
        a: chunk('msg-1', 'Refunding the dam'),
        x: {
          sessionId,
          update: {
            sessionUpdate: 'agent_message_chunk', messageId: 'msg-2', content: { type: 'text', text: '' },
            _meta: {
              'cleanturn/reset': {
                attempt: 2, reason: 'connection reset', supersedes: 'msg-1', supersedesThought: 'msg-1:thought',
              },
            },
          },
        },
        s: thought('msg-2:thought', 'Check the order first.'),
        b: chunk('msg-2', 'Checking order ORD-7781.'),
      },
    },
    {
      title:
        'ACP v2 draft: the reset clears the abandoned reasoning in its thought, as it clears the message',
      source: /*   */ '-r-a-x----s-b-|',
      values: {
        r: at(1, reasoning('The customer wants a refund.')),
        a: at(1, text('Refunding the dam')),
        x: reset(2, 'connection reset'),
        s: at(2, reasoning('Check the order first.')),
        b: at(2, text('Checking order ORD-7781.')),
      },
      label:
        "toAcpUpdates({ sessionId: 'sess-1', protocol: 'v2', messageId: (attempt) => 'msg-' + attempt })",
      operator: () => toAcpUpdates({ sessionId, protocol: 'v2', messageId }),
      expected: /* */ '-r-a-(xy)-s-b-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        r: thought('msg-1:thought', 'The customer wants a refund.'),
        a: chunk('msg-1', 'Refunding the dam'),
        x: {
          sessionId,
          update: {
            sessionUpdate: 'agent_message', messageId: 'msg-1', content: [],
            _meta: { 'cleanturn/reset': { attempt: 2, reason: 'connection reset' } },
          },
        },
        y: { sessionId, update: { sessionUpdate: 'agent_thought', messageId: 'msg-1:thought', content: [] } },
        s: thought('msg-1:thought', 'Check the order first.'),
        b: chunk('msg-1', 'Checking order ORD-7781.'),
      },
    },
  ],
});
