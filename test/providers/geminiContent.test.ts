// geminiContent(): every fixture in test/fixtures/gemini, one per trap of wire-formats.md §4, through the
// adapter and assembleToolCalls (and the clean turn); error classification; the standard operator checks.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  accumulateTurn,
  assembleToolCalls,
  attemptPipeline,
  cleanTurn,
  effectKey,
  requireFinish,
  retryAsEvents,
} from 'cleanturn';
import { geminiContent, ProviderError } from 'cleanturn/providers';
import { call, finish, helpDesk, reasoning, text, usage } from 'cleanturn/testing';
import { concat, defer, from, Observable, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { upstreamProviderError } from '../../src/providers/errors.js';
import type { GeminiChunk, GeminiOutput } from '../../src/providers/geminiContent.js';
import { collect } from '../support/collect.js';
import { expectTurnError } from '../support/errors.js';
import { attempts, type FixtureCase, fixtureChecks, retriedTurn } from '../support/providerTurns.js';
import { readPayloads } from '../support/sse.js';
import { standardChecks } from '../support/standardChecks.js';

const turnId = 'turn-42';
const dir = fileURLToPath(new URL('../fixtures/gemini/', import.meta.url));

/** The parsed chunks of a fixture file, with the raw JSON error tail a stream can end with. */
const fixture = (name: string) => readPayloads(`${dir}${name}`) as GeminiChunk[];

const refund = (id: string) => call(id, 'issue_refund', helpDesk.refundArgs);

/** The response id most fixtures carry. */
const rid = 'b36LacjwM668nsEP2tbsgQQ';
/** A finish with the response id and the attempt's output parts, as the next request sends them back. */
const done = (
  reason: 'stop' | 'tool-calls' | 'length' | 'content-filter' | 'error',
  raw: string,
  responseId: string | undefined,
  parts: GeminiOutput['parts'],
) => ({
  ...finish(reason, raw),
  ...(responseId === undefined ? {} : { responseId }),
  output: { format: 'gemini', parts },
});
/** A whole functionCall part of an output. */
const fc = (name: string, args: Record<string, unknown>, signature?: string) =>
  signature === undefined
    ? { functionCall: { name, args } }
    : { functionCall: { name, args }, thoughtSignature: signature };
/** Usage with the details Gemini reports: tokens read from the cache, tokens spent on thoughts. */
const used = (input: number, output: number, details: { cached?: number; reasoning?: number }) => ({
  ...usage(input, output),
  ...(details.cached === undefined ? {} : { cachedInputTokens: details.cached }),
  ...(details.reasoning === undefined ? {} : { reasoningTokens: details.reasoning }),
});
const summary = [
  '**Checking the refund policy**\n\nThe customer reports a damaged book. ',
  'Damage in transit qualifies for a full refund.',
] as const;

// The text pieces and cumulative output token counts of the legacy fixtures (finishReason STOP on every chunk).
const legacyAnswer = [
  'Thanks for reaching out about order ORD-7781. ',
  'I am sorry the book arrived damaged: a torn cover and bent pages are not what anyone wants to unpack.',
  '\n\nHere is what happens next:\n\n1. I have flagged the order for a full refund of $34.90 ',
  'to the card you paid with.\n2. You do not need to send the book back; ',
  'please keep or recycle it.\n3. The refund usually shows on your statement within 5 to 7 business days.',
  '\n\nIf you would rather have a replacement copy instead, reply to this message ',
  'before Friday and I will switch the refund to a free reshipment with express delivery. ',
  'Replacement copies ship from our Leipzig warehouse and arrive in 2 to 3 days.',
  '\n\nIs there anything else I can help you with today?',
];
const legacyCounts = [11, 33, 52, 67, 88, 104, 121, 135, 147];
const recitedText = [
  'The refund policy for damaged books is printed on the back of your packing slip. ',
  'It reads, in part: "Items damaged in transit ',
  'may be returned or refunded within 30 days of delivery, ',
  'provided that the customer reports the damage with a photo',
  ' of the item and of the outer packaging. ',
  'Refunds are issued to the original method of payment',
];
const recitedCounts = [17, 26, 38, 50, 59, 69];
const cancelledText = [
  'Let me check the delivery record for order ORD-7781. ',
  'The parcel was handed to the carrier on March 3 and delivered on March 5, ',
  'signed for at the front desk. The carrier noted "packaging dented" ',
  'on the delivery scan, which matches the damage you describe, so',
];
const cancelledCounts = [12, 31, 46, 58];
const midCallText = [
  'I can refund order ORD-7781 for you. ',
  'The book arrived damaged, so this qualifies for a full refund ',
  'under the transit damage policy.',
  '\n\nI have asked the billing system to start the refund. ',
  'You will get a confirmation email once it goes through.',
] as const;

/** The arguments of vertex-streamed-args-unclosed.sse, built from their paths. */
const returnArgs = {
  order_id: 'ORD-7781',
  items: [
    { sku: 'BK-0042', qty: 1 },
    { sku: 'BK-0043', qty: 2 },
  ],
  gift: false,
  note: null,
};

/** The arguments of args-own-proto-key.sse, parsed as JSON.parse does: `__proto__` is an own key. */
const ownProtoArgs = () =>
  JSON.parse(
    '{"user_id":"CUS-2231","__proto__":{"isAdmin":true},"preferences":{"constructor":{"prototype":{"role":"admin"}},"newsletter":false}}',
  ) as Record<string, unknown>;

const partialArgs = 'candidates[0].content.parts[0].functionCall.partialArgs';

/** A Vertex streamed call: the named start, one chunk with these partial arguments, the closing part and STOP. */
const streamedCall = (partials: object[]): GeminiChunk[] => [
  {
    candidates: [{ content: { parts: [{ functionCall: { name: 'update_profile', willContinue: true } }] } }],
  },
  { candidates: [{ content: { parts: [{ functionCall: { partialArgs: partials, willContinue: true } }] } }] },
  { candidates: [{ content: { parts: [{ functionCall: {} }] }, finishReason: 'STOP' }] },
];

/** The error of a streamed argument path that walks into a prototype: typed, naming the path's field. */
const unsafePath = (at: number) => (error: unknown) => {
  expect(error).toBeInstanceOf(ProviderError);
  expect(error).toMatchObject({
    code: 'unsafe-path',
    operator: 'geminiContent',
    retryable: false,
    field: `${partialArgs}[${at}].jsonPath`,
  });
};

// biome-ignore format: a table of fixtures
const cases: FixtureCase[] = [
  {
    file: 'text-and-call.sse',
    trap: 'text, then a whole functionCall without id that finishes with STOP; usage grows',
    events: [
      text('Checking order'), usage(88, 3), text(' ORD-7781. '), usage(88, 9), refund('gemini-call-0'), usage(88, 27),
      done('tool-calls', 'STOP', rid, [{ text: 'Checking order ORD-7781. ' }, fc('issue_refund', helpDesk.refundArgs)]),
    ],
    turn: { text: 'Checking order ORD-7781. ', calls: ['gemini-call-0'] },
  },
  {
    file: 'no-arg-call.sse',
    trap: 'a functionCall without args means {}',
    events: [call('gemini-call-0', 'list_orders', {}), usage(60, 5), done('tool-calls', 'STOP', rid, [fc('list_orders', {})])],
    turn: { text: '', calls: ['gemini-call-0'] },
  },
  {
    file: 'parallel-calls.sse',
    trap: 'parallel calls, two in one chunk and one in the next: ids by position',
    events: [
      text('Looking up your orders.'), usage(70, 6),
      call('gemini-call-0', 'lookup_order', { order_id: 'ORD-7781' }), call('gemini-call-1', 'lookup_order', { order_id: 'ORD-7782' }), usage(70, 30),
      call('gemini-call-2', 'lookup_order', { order_id: 'ORD-7783' }), usage(70, 44),
      done('tool-calls', 'STOP', rid, [
        { text: 'Looking up your orders.' },
        fc('lookup_order', { order_id: 'ORD-7781' }), fc('lookup_order', { order_id: 'ORD-7782' }), fc('lookup_order', { order_id: 'ORD-7783' }),
      ]),
    ],
    turn: { text: 'Looking up your orders.', calls: ['gemini-call-0', 'gemini-call-1', 'gemini-call-2'] },
  },
  {
    file: 'call-with-id.sse',
    trap: 'a functionCall that carries an id keeps it',
    events: [
      refund('fc_7d1e0b2a'), usage(88, 20),
      done('tool-calls', 'STOP', rid, [{ functionCall: { id: 'fc_7d1e0b2a', name: 'issue_refund', args: helpDesk.refundArgs } }]),
    ],
    turn: { text: '', calls: ['fc_7d1e0b2a'] },
  },
  {
    file: 'thought-parts.sse',
    trap: 'thought parts are reasoning, not answer text; thoughts count as output; the call carries its signature',
    events: [
      reasoning('**Checking the order**\n\nThe customer wants a refund for a damaged book.'), used(88, 41, { reasoning: 41 }),
      text('Checking order ORD-7781. '), used(88, 48, { reasoning: 41 }), refund('gemini-call-0'), used(88, 66, { reasoning: 41 }),
      done('tool-calls', 'STOP', rid, [
        { text: '**Checking the order**\n\nThe customer wants a refund for a damaged book.', thought: true },
        { text: 'Checking order ORD-7781. ' },
        fc('issue_refund', helpDesk.refundArgs, 'CiQB0e2Kb3Nl'),
      ]),
    ],
    turn: { text: 'Checking order ORD-7781. ', calls: ['gemini-call-0'] },
  },
  {
    file: 'error-tail.sse',
    trap: 'a raw JSON error tail (503 UNAVAILABLE) after text: a retryable ProviderError',
    events: [text('Checking order'), usage(88, 3), text(' ORD-7781. Refunding the dam'), usage(88, 9)],
    error: (error) => {
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ provider: 'gemini', code: 'upstream', upstreamCode: 'UNAVAILABLE', status: 503, retryable: true });
      expect((error as Error).message).toBe('gemini: The model is overloaded. Please try again later.');
    },
  },
  {
    file: 'error-data-line.sse',
    trap: 'the error as an SSE data line (400 INVALID_ARGUMENT): not retryable',
    events: [],
    error: (error) => {
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ code: 'upstream', upstreamCode: 'INVALID_ARGUMENT', status: 400, retryable: false });
    },
  },
  {
    file: 'malformed-function-call.sse',
    trap: 'MALFORMED_FUNCTION_CALL finishes with error',
    events: [usage(88, 0), done('error', 'MALFORMED_FUNCTION_CALL', rid, [])],
    turn: { text: '', calls: [] },
  },
  {
    file: 'safety.sse',
    trap: 'a SAFETY finish is content-filter',
    events: [text('I can help with'), usage(40, 4), done('content-filter', 'SAFETY', rid, [{ text: 'I can help with' }])],
    turn: { text: 'I can help with', calls: [] },
  },
  {
    file: 'blocked-prompt.sse',
    trap: 'a blocked prompt: no candidates, promptFeedback.blockReason',
    events: [usage(33), done('content-filter', 'PROHIBITED_CONTENT', rid, [])],
    turn: { text: '', calls: [] },
  },
  {
    file: 'empty-candidates.sse',
    trap: 'chunks with an empty candidates array are skipped; a chunk after the finish is still read (its usage)',
    events: [usage(88, 0), text('Refund started.'), usage(88, 4), usage(88, 5), done('stop', 'STOP', rid, [{ text: 'Refund started.' }])],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'max-tokens.sse',
    trap: 'MAX_TOKENS is length',
    events: [text('The refund policy says that'), usage(88, 8), done('length', 'MAX_TOKENS', rid, [{ text: 'The refund policy says that' }])],
    turn: { text: 'The refund policy says that', calls: [] },
  },
  {
    file: 'unicode-split.sse',
    trap: 'unicode split across chunks: a combining mark and a ZWJ emoji sequence; unicode in arguments',
    events: [
      text('Refund for Zoe'), usage(50, 3), text('\u0308 \u{1F469}'), usage(50, 5), text('\u200d\u{1F4BB} 注文番号 ORD-7781.'), usage(50, 12),
      call('gemini-call-0', 'add_note', { order_id: 'ORD-7781', note: 'café \u{1F4A9} ☕ 注文' }), usage(50, 30),
      done('tool-calls', 'STOP', rid, [
        { text: 'Refund for Zoe\u0308 \u{1F469}\u200d\u{1F4BB} 注文番号 ORD-7781.' },
        fc('add_note', { order_id: 'ORD-7781', note: 'café \u{1F4A9} ☕ 注文' }),
      ]),
    ],
    turn: { text: 'Refund for Zoe\u0308 \u{1F469}\u200d\u{1F4BB} 注文番号 ORD-7781.', calls: ['gemini-call-0'] },
  },
  {
    file: 'crlf.sse',
    trap: 'CRLF framing',
    events: [text('Refund '), usage(20, 2), text('started.'), usage(20, 4), done('stop', 'STOP', rid, [{ text: 'Refund started.' }])],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'missing-optional-fields.sse',
    trap: 'missing optional fields: no usageMetadata, index, role, modelVersion or responseId',
    events: [
      text('Refund started.'), refund('gemini-call-0'),
      done('tool-calls', 'STOP', undefined, [{ text: 'Refund started.' }, fc('issue_refund', helpDesk.refundArgs)]),
    ],
    turn: { text: 'Refund started.', calls: ['gemini-call-0'] },
  },
  {
    file: 'vertex-streamed-args.sse',
    trap: 'Vertex streamed arguments: path-addressed strings continued across chunks, closed by an empty functionCall',
    events: [
      text('Checking order ORD-7781. '), refund('gemini-call-0'), usage(88, 27),
      done('tool-calls', 'STOP', 'dqHOab6xGLzWodAPkPuViA4', [{ text: 'Checking order ORD-7781. ' }, fc('issue_refund', helpDesk.refundArgs)]),
    ],
    turn: { text: 'Checking order ORD-7781. ', calls: ['gemini-call-0'] },
  },
  {
    file: 'vertex-streamed-args-unclosed.sse',
    trap: 'Vertex streamed arguments with arrays, numbers, booleans, null; the closing part never arrives',
    events: [
      usage(88, 27),
      call('gemini-call-0', 'create_return', returnArgs),
      done('tool-calls', 'STOP', 'dqHOab6xGLzWodAPkPuViA4', [fc('create_return', returnArgs)]),
    ],
    turn: { text: '', calls: ['gemini-call-0'] },
  },
  {
    file: 'legacy-stop-every-chunk.sse',
    trap: 'a legacy stream with finishReason STOP on every chunk: all the text, usage per change, one finish at the end',
    events: [...legacyAnswer.flatMap((t, i) => [text(t), usage(212, legacyCounts[i])]), done('stop', 'STOP', undefined, [{ text: legacyAnswer.join('') }])],
    turn: { text: legacyAnswer.join(''), calls: [] },
  },
  {
    file: 'legacy-stop-then-recitation.sse',
    trap: 'STOP on every chunk, then a last chunk with RECITATION: the last reason wins',
    events: [
      ...recitedText.flatMap((t, i) => [text(t), usage(96, recitedCounts[i])]),
      done('content-filter', 'RECITATION', undefined, [{ text: recitedText.join('') }]),
    ],
    turn: { text: recitedText.join(''), calls: [] },
  },
  {
    file: 'legacy-stop-then-cancelled.sse',
    trap: 'STOP on every chunk, then a raw JSON error tail (499 CANCELLED): the attempt fails, no finish',
    events: cancelledText.flatMap((t, i) => [text(t), usage(140, cancelledCounts[i])]),
    error: (error) => {
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ provider: 'gemini', code: 'upstream', upstreamCode: 'CANCELLED', status: 499, retryable: true });
    },
  },
  {
    file: 'legacy-stop-call-mid-stream.sse',
    trap: 'STOP on every chunk (CRLF), a functionCall in a middle chunk, more text after it: finish tool-calls',
    events: [
      text(midCallText[0]), usage(188, 9), text(midCallText[1]), usage(188, 21), text(midCallText[2]), usage(188, 27),
      refund('gemini-call-0'), usage(188, 45), text(midCallText[3]), usage(188, 57), text(midCallText[4]), usage(188, 68),
      done('tool-calls', 'STOP', undefined, [
        { text: midCallText.slice(0, 3).join('') }, fc('issue_refund', helpDesk.refundArgs), { text: midCallText.slice(3).join('') },
      ]),
    ],
    turn: { text: midCallText.join(''), calls: ['gemini-call-0'] },
  },
  {
    file: 'args-own-proto-key.sse',
    trap: 'whole args with an own "__proto__" key (and constructor.prototype): kept as own data, never walked',
    events: [
      text('Updating the profile of customer CUS-2231. '), usage(120, 9), call('gemini-call-0', 'update_profile', ownProtoArgs()), usage(120, 38),
      done('tool-calls', 'STOP', 'Qm8RacXz4LbWodAPtK2vmQc', [{ text: 'Updating the profile of customer CUS-2231. ' }, fc('update_profile', ownProtoArgs())]),
    ],
    turn: { text: 'Updating the profile of customer CUS-2231. ', calls: ['gemini-call-0'] },
  },
  {
    file: 'vertex-proto-dot-path.sse',
    trap: 'streamed arguments at $.__proto__.isAdmin: unsafe-path, nothing reaches Object.prototype',
    events: [text('Updating your account settings. ')],
    error: unsafePath(0),
  },
  {
    file: 'vertex-proto-bracket-path.sse',
    trap: "streamed arguments at $['__proto__']['role'], continued across chunks: unsafe-path",
    events: [text('Updating your account settings. ')],
    error: unsafePath(0),
  },
  {
    file: 'vertex-constructor-prototype-path.sse',
    trap: 'streamed arguments at $["constructor"]["prototype"]["x"], second in its chunk: unsafe-path',
    events: [text('Updating your account settings. ')],
    error: unsafePath(1),
  },
  {
    file: 'vertex-nested-proto-path.sse',
    trap: 'streamed arguments at $.settings.__proto__.x, below an own object: unsafe-path',
    events: [text('Switching you to the dark theme. ')],
    error: unsafePath(0),
  },
  {
    file: 'vertex-conflicting-paths.sse',
    trap: 'a string at $.settings, then a value at $.settings.theme: an error, never an overwrite',
    events: [text('Switching you to the dark theme. ')],
    error: (error) => {
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ code: 'invalid-field', retryable: false, field: `${partialArgs}[0].jsonPath` });
    },
  },
  {
    file: 'thought-summary-then-signed-call.sse',
    trap: 'Gemini 3 with thoughts: a thought summary in two chunks, text, a signed functionCall, an empty STOP part; cached tokens',
    events: [
      reasoning(summary[0]), used(412, 86, { cached: 256, reasoning: 86 }), reasoning(summary[1]), used(412, 131, { cached: 256, reasoning: 131 }),
      text('Checking order ORD-7781. '), used(412, 138, { cached: 256, reasoning: 131 }), refund('gemini-call-0'), used(412, 156, { cached: 256, reasoning: 131 }),
      done('tool-calls', 'STOP', 'Ugx3acX2KqWZ28oP4uqPwQk', [
        { text: summary.join(''), thought: true },
        { text: 'Checking order ORD-7781. ' },
        fc('issue_refund', helpDesk.refundArgs, 'EpQCCpECAb4+9vt3kR1dZ0cQ7mJxW2s9YkVhLq8Zr0fN3uT5aP1bD4eG6hI8jK0lM2nO4pQ6rS8tU0vW2xY4z'),
      ]),
    ],
    turn: { text: 'Checking order ORD-7781. ', calls: ['gemini-call-0'] },
  },
  {
    file: 'signature-on-empty-last-part.sse',
    trap: 'a text-only Gemini 3 answer: the signature on an empty last part ends the text part it follows',
    events: [
      text('Your refund for order ORD-7781 '), used(31, 125, { reasoning: 118 }), text('has been issued in full.'), used(31, 131, { reasoning: 118 }),
      done('stop', 'STOP', 'vQRpaqzAPN2M9MoPxPq2uQ4', [
        { text: 'Your refund for order ORD-7781 has been issued in full.', thoughtSignature: 'EpcCCpQCARFNMg9GpVP+YGO3zJobwN8a+4XBKHGs8ZZ75yF6E7qlkth0vQN/W+uy' },
      ]),
    ],
    turn: { text: 'Your refund for order ORD-7781 has been issued in full.', calls: [] },
  },
  {
    file: 'parallel-calls-first-signed.sse',
    trap: 'parallel calls in one chunk: only the first functionCall part carries the signature, and keeps it',
    events: [
      call('gemini-call-0', 'lookup_order', { order_id: 'ORD-7781' }), call('gemini-call-1', 'lookup_order', { order_id: 'ORD-7782' }),
      used(70, 252, { reasoning: 222 }),
      done('tool-calls', 'STOP', 'QHiLaa6LBrb8vdIPoNztsAg', [
        fc('lookup_order', { order_id: 'ORD-7781' }, 'EpEgCo4gAb4+9vvWwdN+NkNiCCwrqvFI8uf9IiD2A47Bm4Sga0kUTm4e/QuEnsZn'),
        fc('lookup_order', { order_id: 'ORD-7782' }),
      ]),
    ],
    turn: { text: '', calls: ['gemini-call-0', 'gemini-call-1'] },
  },
  {
    file: 'signed-fragments-end-their-parts.sse',
    trap: 'signatures on a thought and on a text fragment: each ends its part, the next fragment starts a new one',
    events: [
      reasoning('The order was delivered damaged. '), used(52, 40, { reasoning: 40 }), reasoning('A full refund fits the policy.'), used(52, 64, { reasoning: 64 }),
      text('I have refunded order ORD-7781. '), used(52, 72, { reasoning: 64 }), text('The money is on its way.'), used(52, 78, { reasoning: 64 }),
      done('stop', 'STOP', 'dX6LadKVC7SZ28oPr9yJoQs', [
        { text: 'The order was delivered damaged. ', thought: true, thoughtSignature: 'CiQB0e2Kb3NlYXJjaGluZyB0aGUgb3JkZXIgaGlzdG9yeQ==' },
        { text: 'A full refund fits the policy.', thought: true },
        { text: 'I have refunded order ORD-7781. ', thoughtSignature: 'CiQB0e2Kb2Fuc3dlcmluZyB0aGUgY3VzdG9tZXI=' },
        { text: 'The money is on its way.' },
      ]),
    ],
    turn: { text: 'I have refunded order ORD-7781. The money is on its way.', calls: [] },
  },
  {
    file: 'code-execution.sse',
    trap: 'code the model ran itself (executableCode, codeExecutionResult): kept in the output, no call, STOP is stop',
    events: [
      usage(312, 12), text('The restocking fee would be $5.24, '), usage(312, 24), text('but it is waived for damaged items.'), usage(312, 35),
      done('stop', 'STOP', 'x7hVadT9OdKT_uMP792-mAc', [
        { executableCode: { language: 'PYTHON', code: 'print(round(34.90 * 0.15, 2))' }, thoughtSignature: 'EjQKMgFyyNp8VRG2uDen0QENDjUJEy6ZQlvEGUhI8VcgTgNaspEC3M5Cao6lhYRG' },
        { codeExecutionResult: { outcome: 'OUTCOME_OK', output: '5.24\n' } },
        { text: 'The restocking fee would be $5.24, but it is waived for damaged items.', thoughtSignature: 'EjQKMgFyyNp8EcK2k/joUmmIxJlqtIvdJP/1F+ziwsCn9P4uyk2ZNeBiYz2Um4GX' },
      ]),
    ],
    turn: { text: 'The restocking fee would be $5.24, but it is waived for damaged items.', calls: [] },
  },
  {
    file: 'second-candidate.sse',
    trap: "two candidates: candidate 1's text, thought, signature and call never join candidate 0's",
    events: [
      text('Checking order ORD-7781. '), usage(88, 12), usage(88, 30), refund('gemini-call-0'), usage(88, 52),
      done('tool-calls', 'STOP', 'kZ2LaaOaC4y2xN8PpLjvoQo', [{ text: 'Checking order ORD-7781. ' }, fc('issue_refund', helpDesk.refundArgs)]),
    ],
    turn: { text: 'Checking order ORD-7781. ', calls: ['gemini-call-0'] },
  },
  {
    file: 'truncated.sse',
    trap: 'the stream ended without finishReason: no finish',
    events: [text('Checking order'), usage(88, 3), text(' ORD-7781. '), usage(88, 9)],
  },
];

describe('geminiContent: fixtures', () => {
  fixtureChecks({
    cases,
    files: () => readdirSync(dir),
    read: fixture,
    adapter: () => geminiContent(),
    turnId,
  });

  it('generated ids are the same on every run of the same stream', () => {
    const ids = () =>
      collect(from(fixture('parallel-calls.sse')).pipe(geminiContent()))
        .values.filter((e) => e.type === 'tool-call')
        .map((e) => e.id);
    expect(ids()).toEqual(ids());
    expect(ids()).toEqual(['gemini-call-0', 'gemini-call-1', 'gemini-call-2']);
  });

  it('a truncated stream is a retryable missing-finish TurnError with requireFinish', () => {
    const result = collect(
      from(fixture('truncated.sse')).pipe(geminiContent(), assembleToolCalls(), requireFinish()),
    );
    expectTurnError(result.error, 'missing-finish');
  });
});

describe('geminiContent: streams that report a finish reason on every chunk', () => {
  it('reads past the first finish reason: each usage change once, the finish once, last', () => {
    const result = collect(from(fixture('legacy-stop-every-chunk.sse')).pipe(geminiContent()));
    const once = done('stop', 'STOP', undefined, [{ text: legacyAnswer.join('') }]);
    expect(result.values.filter((e) => e.type === 'finish')).toEqual([once]);
    expect(result.values.at(-1)).toEqual(once);
    expect(result.values.filter((e) => e.type === 'usage')).toHaveLength(legacyCounts.length);
  });

  it('the cancelled legacy stream is retried, and the next attempt gives the whole answer', () => {
    const states = collect(
      attempts(fixture('legacy-stop-then-cancelled.sse'), fixture('legacy-stop-every-chunk.sse')).pipe(
        retriedTurn(geminiContent(), turnId),
      ),
    );
    expect(states.error).toBeUndefined();
    const turn = states.values.at(-1);
    expect(turn?.text).toBe(legacyAnswer.join(''));
    expect(turn?.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
  });
});

describe('geminiContent: argument paths never reach a prototype', () => {
  const polluted = ['isAdmin', 'role', 'x'];
  afterEach(() => {
    // Undo what an unsafe adapter would have done, so that one failure does not leak into other tests.
    for (const key of polluted) delete (Object.prototype as Record<string, unknown>)[key];
  });
  const clean = () => {
    const probe: Record<string, unknown> = {};
    expect([probe.isAdmin, probe.role, probe.x]).toEqual([undefined, undefined, undefined]);
    for (const key of polluted) expect(Object.hasOwn(Object.prototype, key)).toBe(false);
  };

  it.each([
    'vertex-proto-dot-path.sse',
    'vertex-proto-bracket-path.sse',
    'vertex-constructor-prototype-path.sse',
    'vertex-nested-proto-path.sse',
  ])('%s: a typed unsafe-path error, Object.prototype untouched', (file) => {
    const result = collect(from(fixture(file)).pipe(attemptPipeline(geminiContent())));
    clean();
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({ code: 'unsafe-path', retryable: false });
    expect(result.values.some((e) => e.type === 'tool-call')).toBe(false);
  });

  it.each([
    ['__proto__', '$.__proto__'],
    ['prototype', '$.a.prototype.b'],
    ['constructor', "$.items[0]['constructor']"],
  ])('a path step named %s is rejected wherever it is (%s)', (_, jsonPath) => {
    const result = collect(from(streamedCall([{ jsonPath, stringValue: 'x' }])).pipe(geminiContent()));
    clean();
    expect(result.error).toMatchObject({ code: 'unsafe-path', field: `${partialArgs}[0].jsonPath` });
  });

  it.each([
    [
      'a value, then a path below it',
      [
        { jsonPath: '$.a', stringValue: 'x' },
        { jsonPath: '$.a.b', numberValue: 1 },
      ],
    ],
    [
      'a path below, then a value at it',
      [
        { jsonPath: '$.a.b', numberValue: 1 },
        { jsonPath: '$.a', boolValue: true },
      ],
    ],
    [
      'an object, then an index into it',
      [
        { jsonPath: '$.a.b', numberValue: 1 },
        { jsonPath: '$.a[0]', numberValue: 2 },
      ],
    ],
    [
      'an array, then a name in it',
      [
        { jsonPath: '$.a[0]', numberValue: 1 },
        { jsonPath: '$.a.length', numberValue: 0 },
      ],
    ],
  ])('conflicting paths are an error, not an overwrite: %s', (_, partials) => {
    const result = collect(from(streamedCall(partials)).pipe(geminiContent()));
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({ code: 'invalid-field', field: `${partialArgs}[1].jsonPath` });
  });

  it('the arguments built from paths are plain objects with own data properties', () => {
    const result = collect(
      from(
        streamedCall([
          { jsonPath: '$.order.id', stringValue: 'ORD-', willContinue: true },
          { jsonPath: '$.order.id', stringValue: '7781' },
          { jsonPath: "$['order']['lines'][0].sku", stringValue: 'BK-0042' },
          { jsonPath: '$.hasOwnProperty', boolValue: true },
        ]),
      ).pipe(geminiContent()),
    );
    const args = (result.values[0] as { args: Record<string, { lines: object[] }> }).args;
    expect(args).toEqual({ order: { id: 'ORD-7781', lines: [{ sku: 'BK-0042' }] }, hasOwnProperty: true });
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
    expect(Array.isArray(args.order?.lines)).toBe(true);
    expect(Object.getOwnPropertyDescriptor(args, 'order')).toMatchObject({
      writable: true,
      enumerable: true,
    });
  });

  it('whole args with an own __proto__ key stay own data, through the clean turn', () => {
    const states = collect(
      from(fixture('args-own-proto-key.sse')).pipe(
        attemptPipeline(geminiContent()),
        cleanTurn({ turnId }),
        accumulateTurn(),
      ),
    );
    clean();
    const args = states.values.at(-1)?.toolCalls[0]?.args as Record<string, unknown>;
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
    expect(Object.hasOwn(args, '__proto__')).toBe(true);
    expect(Object.getOwnPropertyDescriptor(args, '__proto__')?.value).toEqual({ isAdmin: true });
    expect(args.isAdmin).toBeUndefined();
    expect(JSON.stringify(args)).toBe(JSON.stringify(ownProtoArgs()));
  });
});

describe('geminiContent: fields of the wrong type', () => {
  const part = (functionCall: unknown): GeminiChunk =>
    ({
      candidates: [{ content: { parts: [{ text: 'Refunding. ' }, { functionCall }] }, finishReason: 'STOP' }],
    }) as GeminiChunk;
  const errorOf = (chunk: GeminiChunk) => collect(from([chunk]).pipe(geminiContent()));
  const field = 'candidates[0].content.parts[1].functionCall';

  it.each([
    ['a number', 7781],
    ['an object', { value: 'issue_refund' }],
    ['an empty string', ''],
    ['absent', undefined],
  ])('a functionCall name that is %s: invalid-field, no call released', (_, name) => {
    const result = errorOf(part({ name, args: helpDesk.refundArgs }));
    expect(result.values).toEqual([text('Refunding. ')]);
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({ code: 'invalid-field', field: `${field}.name`, retryable: false });
  });

  it.each([
    ['a string', '{"order_id":"ORD-7781"}'],
    ['a number', 42],
    ['an array', ['ORD-7781']],
    ['a boolean', true],
  ])('args that are %s: invalid-field, never {}', (_, args) => {
    const result = errorOf(part({ name: 'issue_refund', args }));
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({ code: 'invalid-field', field: `${field}.args` });
  });

  it('absent args still mean {}', () => {
    expect(errorOf(part({ name: 'list_orders' })).values).toEqual([
      text('Refunding. '),
      call('gemini-call-0', 'list_orders', {}),
      done('tool-calls', 'STOP', undefined, [{ text: 'Refunding. ' }, fc('list_orders', {})]),
    ]);
  });

  it('a streamed call with a numeric name: invalid-field', () => {
    const result = errorOf(part({ name: 5, willContinue: true }));
    expect(result.error).toMatchObject({ code: 'invalid-field', field: `${field}.name` });
  });
});

describe('geminiContent: the help-desk retry', () => {
  it('an error tail, then a complete attempt: attempt 2 text only, one refund, one reset', () => {
    const states = collect(
      attempts(fixture('error-tail.sse'), fixture('text-and-call.sse')).pipe(
        retriedTurn(geminiContent(), turnId),
      ),
    );
    expect(states.error).toBeUndefined();
    const turn = states.values.at(-1);
    expect(turn?.text).toBe('Checking order ORD-7781. ');
    expect(turn?.toolCalls).toEqual([
      { ...refund('gemini-call-0'), attempt: 2, effectKey: effectKey(turnId, refund('gemini-call-0')) },
    ]);
    expect(turn?.attempts.map((a) => [a.attempt, a.outcome, a.usage])).toEqual([
      [1, 'abandoned', { inputTokens: 88, outputTokens: 9 }],
      [2, 'completed', { inputTokens: 88, outputTokens: 27 }],
    ]);
  });

  it('an invalid argument is not retried', () => {
    let subscriptions = 0;
    const result = collect(
      defer(() => {
        subscriptions++;
        return from(fixture('error-data-line.sse'));
      }).pipe(geminiContent(), assembleToolCalls(), requireFinish(), retryAsEvents({ count: 2 })),
    );
    expect(subscriptions).toBe(1);
    expect(result.error).toMatchObject({ retryable: false, status: 400 });
  });
});

describe('geminiContent: errors', () => {
  const tail = (error: GeminiChunk['error']): GeminiChunk[] => [{ error }];
  const errorOf = (chunks: GeminiChunk[], options = {}) =>
    collect(from(chunks).pipe(geminiContent(options))).error;

  it.each([
    [503, 'UNAVAILABLE', true],
    [429, 'RESOURCE_EXHAUSTED', true],
    [500, 'INTERNAL', true],
    [504, 'DEADLINE_EXCEEDED', true],
    [400, 'INVALID_ARGUMENT', false],
    [403, 'PERMISSION_DENIED', false],
    [401, 'UNAUTHENTICATED', false],
    [404, 'NOT_FOUND', false],
    [499, 'CANCELLED', true],
    [409, 'ABORTED', true],
    [400, 'FAILED_PRECONDITION', false],
    [502, undefined, true],
    [403, undefined, false],
    [undefined, undefined, true],
  ])('code %s, status %s: retryable %s', (code, status, expected) => {
    const error = errorOf(tail({ code, status, message: 'm' }));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      retryable: expected,
      status: code,
      code: 'upstream',
      upstreamCode: status,
    });
  });

  it('the retryable option overrides the default', () => {
    const error = errorOf(tail({ code: 503, status: 'UNAVAILABLE' }), { retryable: () => false });
    expect(error).toMatchObject({ retryable: false });
  });

  it('a retryable option that throws errors the stream with what it throws', () => {
    const thrown = new Error('the callback failed');
    const error = errorOf(tail({ code: 503 }), {
      retryable: () => {
        throw thrown;
      },
    });
    expect(error).toBe(thrown);
  });

  /** An error shaped like the SDK's `ApiError` for a stream's error tail. */
  const apiError = (status: number, body: object) =>
    Object.assign(
      new Error(
        `got status: ${(body as { error: { status: string } }).error.status}. ${JSON.stringify(body)}`,
      ),
      {
        name: 'ApiError',
        status,
      },
    );

  it("the SDK's ApiError for an error tail becomes a ProviderError with the tail's details", () => {
    const thrown = apiError(503, {
      error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' },
    });
    const error = collect(new Observable<GeminiChunk>((s) => s.error(thrown)).pipe(geminiContent())).error;
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      retryable: true,
      status: 503,
      code: 'upstream',
      upstreamCode: 'UNAVAILABLE',
      payload: thrown,
    });
    expect((error as Error).message).toBe('gemini: The model is overloaded.');
  });

  it("the SDK's ApiError for a failed response is classified by its status", () => {
    const thrown = Object.assign(new Error('{"error":{"code":400}}'), { name: 'ApiError', status: 400 });
    const error = collect(new Observable<GeminiChunk>((s) => s.error(thrown)).pipe(geminiContent())).error;
    expect(error).toMatchObject({ retryable: false, status: 400 });
  });

  it('other source errors pass through unchanged', () => {
    const reset = new TypeError('terminated');
    expect(collect(new Observable<GeminiChunk>((s) => s.error(reset)).pipe(geminiContent())).error).toBe(
      reset,
    );
  });

  it('an input that is not a chunk is a programming error, not retryable', () => {
    const error = errorOf(['data: {}' as unknown as GeminiChunk]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ code: 'not-a-payload', retryable: false });
  });

  it('a streamed argument path it cannot read is invalid-field, naming the path', () => {
    const result = collect(
      from(streamedCall([{ jsonPath: '$..a', stringValue: 'x' }])).pipe(geminiContent()),
    );
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({ code: 'invalid-field', field: `${partialArgs}[0].jsonPath` });
  });

  it('pieces of a call that was never opened are an unknown-reference (retryable)', () => {
    const error = errorOf([
      {
        candidates: [
          {
            content: {
              parts: [
                {
                  functionCall: { partialArgs: [{ jsonPath: '$.a', stringValue: 'x' }], willContinue: true },
                },
              ],
            },
          },
        ],
      },
    ]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ code: 'unknown-reference', retryable: true });
  });

  it('a second streamed call closes the first', () => {
    const start = (name: string): GeminiChunk => ({
      candidates: [{ content: { parts: [{ functionCall: { name, willContinue: true } }] } }],
    });
    const arg = (value: string): GeminiChunk => ({
      candidates: [
        {
          content: {
            parts: [{ functionCall: { partialArgs: [{ jsonPath: "$['a b']", stringValue: value }] } }],
          },
        },
      ],
    });
    const result = collect(
      from([start('f'), arg('1'), start('g'), arg('2'), { candidates: [{ finishReason: 'STOP' }] }]).pipe(
        geminiContent(),
      ),
    );
    expect(result.values).toEqual([
      call('gemini-call-0', 'f', { 'a b': '1' }),
      call('gemini-call-1', 'g', { 'a b': '2' }),
      done('tool-calls', 'STOP', undefined, [fc('f', { 'a b': '1' }), fc('g', { 'a b': '2' })]),
    ]);
  });

  it('a finish reason is provisional: later chunks are read, a later error fails the attempt', () => {
    const later: GeminiChunk[] = [
      { candidates: [{ content: { parts: [{ text: ' More.' }] } }] },
      { error: { code: 503 } },
    ];
    const result = collect(from([...fixture('crlf.sse'), ...later]).pipe(geminiContent()));
    expect(result.values).toEqual([
      text('Refund '),
      usage(20, 2),
      text('started.'),
      usage(20, 4),
      text(' More.'),
    ]);
    expect(result.error).toMatchObject({ status: 503, retryable: true });
    const reset = collect(
      concat(
        from(fixture('crlf.sse')),
        throwError(() => new Error('terminated')),
      ).pipe(geminiContent()),
    );
    expect(reset.values.some((e) => e.type === 'finish')).toBe(false);
    expect(reset.error).toMatchObject({ message: 'terminated' });
  });

  it('a streamed call open at the end: emitted after a finish reason, dropped without one', () => {
    const open = streamedCall([{ jsonPath: '$.order_id', stringValue: 'ORD-7781' }]).slice(0, 2);
    const finished = collect(
      from([...open, { candidates: [{ finishReason: 'STOP' }] }]).pipe(geminiContent()),
    );
    expect(finished.values).toEqual([
      call('gemini-call-0', 'update_profile', { order_id: 'ORD-7781' }),
      done('tool-calls', 'STOP', undefined, [fc('update_profile', { order_id: 'ORD-7781' })]),
    ]);
    const truncated = collect(from(open).pipe(geminiContent()));
    expect(truncated).toEqual({ values: [], error: undefined, completed: true });
  });

  it('STOP on every chunk does not cut a streamed call short', () => {
    const stop = (parts: object[]): GeminiChunk => ({
      candidates: [{ content: { parts }, finishReason: 'STOP' }],
    });
    const result = collect(
      from([
        stop([{ functionCall: { name: 'issue_refund', willContinue: true } }]),
        stop([
          {
            functionCall: {
              partialArgs: [{ jsonPath: '$.order_id', stringValue: 'ORD-', willContinue: true }],
              willContinue: true,
            },
          },
        ]),
        stop([
          {
            functionCall: {
              partialArgs: [{ jsonPath: '$.order_id', stringValue: '7781' }],
              willContinue: true,
            },
          },
        ]),
        stop([
          {
            functionCall: {
              partialArgs: [{ jsonPath: '$.amount', stringValue: 'full' }],
              willContinue: true,
            },
          },
        ]),
        stop([{ functionCall: {} }]),
        stop([]),
      ]).pipe(geminiContent()),
    );
    expect(result.values).toEqual([
      refund('gemini-call-0'),
      done('tool-calls', 'STOP', undefined, [fc('issue_refund', helpDesk.refundArgs)]),
    ]);
  });

  it('only the first candidate is read', () => {
    const result = collect(
      from<GeminiChunk[]>([
        { candidates: [{ index: 1, content: { parts: [{ text: 'second' }] } }] },
        { candidates: [{ index: 0, content: { parts: [{ text: 'first' }] }, finishReason: 'STOP' }] },
      ]).pipe(geminiContent()),
    );
    expect(result.values).toEqual([text('first'), done('stop', 'STOP', undefined, [{ text: 'first' }])]);
  });
});

describe('geminiContent: linear in the stream size', () => {
  it('joins a streamed string of 50,000 pieces once', () => {
    const piece = (value: string, more: boolean): GeminiChunk => ({
      candidates: [
        {
          content: {
            parts: [
              {
                functionCall: {
                  partialArgs: [{ jsonPath: '$.note', stringValue: value, willContinue: more }],
                },
              },
            ],
          },
        },
      ],
    });
    const chunks: GeminiChunk[] = [
      { candidates: [{ content: { parts: [{ functionCall: { name: 'add_note', willContinue: true } }] } }] },
      ...Array.from({ length: 50_000 }, () => piece('ab', true)),
      piece('', false),
      { candidates: [{ content: { parts: [{ functionCall: {} }] }, finishReason: 'STOP' }] },
    ];
    const result = collect(from(chunks).pipe(geminiContent()));
    const note = (result.values[0] as { args: { note: string } }).args.note;
    expect(note).toHaveLength(100_000);
  });
});

// biome-ignore format: an aligned value table
const sample: Record<'a' | 'b' | 'c', GeminiChunk> = {
  a: { candidates: [{ content: { parts: [{ text: 'Refund ' }] } }] },
  b: { candidates: [{ content: { parts: [{ text: 'started.' }] } }] },
  c: { candidates: [{ content: { parts: [] } }], usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 4 } },
};
const sampleOut = { a: text('Refund '), b: text('started.'), c: usage(20, 4) };

standardChecks<GeminiChunk>({
  name: 'geminiContent',
  make: () => geminiContent(),
  values: sample,
  expected: sampleOut,
});

describe('geminiContent: frame by frame', () => {
  const stop = (text: string): GeminiChunk => ({
    candidates: [{ content: { parts: [{ text }] }, finishReason: 'STOP' }],
  });
  const scheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

  it('a finish reason on every chunk: the text at once, one finish when the source completes', () =>
    scheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-x-y-z-|', { x: stop('Refund '), y: stop('started'), z: stop('.') });
      expectObservable(source.pipe(geminiContent())).toBe('-a-b-c-(f|)', {
        a: text('Refund '),
        b: text('started'),
        c: text('.'),
        f: done('stop', 'STOP', undefined, [{ text: 'Refund started.' }]),
      });
      expectSubscriptions(source.subscriptions).toBe('^------!');
    }));

  it('an error after a finish reason fails the attempt, with no finish', () =>
    scheduler().run(({ cold, expectObservable }) => {
      const reset = new Error('connection reset');
      const source = cold('-x-#', { x: stop('Refund ') }, reset);
      expectObservable(source.pipe(geminiContent())).toBe('-a-#', { a: text('Refund ') }, reset);
    }));

  it('errors at an error tail and unsubscribes from the source', () =>
    new TestScheduler((actual, expected) => expect(actual).toEqual(expected)).run(
      ({ cold, expectObservable, expectSubscriptions }) => {
        const e: GeminiChunk = { error: { code: 503, message: 'overloaded', status: 'UNAVAILABLE' } };
        const source = cold('-a-e-b-|', { ...sample, e });
        const expected = upstreamProviderError('gemini', 'overloaded', {
          retryable: true,
          upstreamCode: 'UNAVAILABLE',
          status: 503,
          payload: e,
        });
        expectObservable(source.pipe(geminiContent())).toBe('-a-#', sampleOut, expected);
        expectSubscriptions(source.subscriptions).toBe('^--!');
      },
    ));
});
