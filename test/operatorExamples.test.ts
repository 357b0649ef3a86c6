// The example of every operator page (docs/operators/*.md, generated from the doc comments in src/) compiles
// against the package's sources, as the README's and the guides' blocks do. The names an example leaves to the
// reader (the stream it starts from, the UI it draws) are declared below.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkBlocks, extractBlocks, typescriptLanguages } from '../scripts/readmeCode.js';

const prelude = `
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import type { Observable } from 'rxjs';
import type { ProviderEvent } from 'cleanturn';
import type { AssembledEvent } from '../src/assembleToolCalls.js';
import type { ToolCallViewStatus } from '../src/renderers/reduceView.js';

declare global {
  /** The provider events of one attempt, calls already whole (what attemptPipeline's adapter and assembler give). */
  function streamFromProvider(): Observable<AssembledEvent<ProviderEvent>>;
  /** A provider stream already turned into neutral events with whole calls. */
  const providerEvents$: Observable<AssembledEvent<ProviderEvent>>;
  /** Draws what it is given: an event, a view, a turn's text and attempts. */
  function render(value: unknown, ...more: unknown[]): void;
  /** Runs a tool once for its effect key and returns its result. */
  function runTool(name: string, args: unknown, effectKey: string): unknown;
  /** The result a key's effect recorded. */
  function recordedResult(effectKey: string): unknown;
  /** Hands a call's answer back to the model. */
  function answer(callId: string, result: unknown): void;
  /** A schema that validates the refund tool's arguments. */
  const RefundArgs: { parse(args: unknown): { order_id: string; amount: 'full' | 'partial' } };
  /** A payment service client that is idempotent on a key. */
  const payments: {
    refund(orderId: string, options: { idempotencyKey: string; signal: AbortSignal }): Promise<{ id: string; status: string }>;
  };
  /** The provider's SDK client, and the request of the turn: whichever SDK the example uses. */
  const client: { chat: OpenAI['chat']; messages: Anthropic['messages'] };
  // biome-ignore lint/suspicious/noExplicitAny: the request of whichever SDK the example uses
  const request: any;
  /** The conversation so far (Chat Completions). */
  const messages: OpenAI.ChatCompletionMessageParam[];
  /** What the user reads. */
  const view: { clear(): void; append(text: string): void };
  /** The tools: run once per effect key; answer a repeat with the recorded result. */
  const tools: {
    run(name: string, args: unknown, effectKey: string): void;
    replay(callId: string, effectKey: string): void;
  };
  /** A web UI's parts. */
  const bubble: { textContent: string | null };
  const banner: { textContent: string | null };
  const chips: { replaceChildren(...nodes: unknown[]): void };
  function chip(name: string, status: ToolCallViewStatus): unknown;
}
export {};
`;

const dir = 'docs/operators';
const pages = readdirSync(dir)
  .filter((f) => f.endsWith('.md') && f !== 'README.md')
  .sort();

describe('operator page examples', () => {
  for (const page of pages) {
    const blocks = extractBlocks(readFileSync(`${dir}/${page}`, 'utf8')).filter((b) =>
      typescriptLanguages.has(b.lang),
    );
    if (blocks.length === 0) continue;
    it(`${page} compiles`, () => {
      const reports = checkBlocks(blocks, { prelude, fileName: `${dir}/${page}` });
      expect(reports.flatMap((r) => r.problems)).toEqual([]);
    }, 60_000);
  }
});
