// Every TypeScript block of README.md is compiled against the package's sources, and the ones marked to run
// are executed. The convention:
//
// - Blocks fenced as ```ts (or ```typescript) are type-checked with tsconfig.json's options (strict);
//   `cleanturn` and `cleanturn/*` resolve to src/ through its `paths`. Other blocks (sh, text, python…) are
//   not touched.
// - An example may use the placeholders declared in `prelude` below (`view`, `render`, `streamFromProvider`,
//   `key`, `messages`, `tools`, `billing`) without defining them: they stand for the user's own code, and are
//   typed so that misusing cleanturn's API with them still fails to compile. Add one there when an example
//   needs a new one.
// - A block of declarations only (signatures without bodies, interfaces, types, `const x: T;`) is a synopsis of
//   the API: it is checked as ambient declarations, may use any export of the package or of rxjs as a type
//   without importing it, may leave a type out (`{ initialDelay?; … }`), and may declare only names the
//   package exports.
// - Marker comments go on the line(s) right before the fence (blank lines allowed in between):
//     <!-- run -->     also execute the block (Node.js, in a child process): it must be self-contained and
//                      offline; it passes if it completes, so check results with node:assert.
//     <!-- no-run -->  compile only, although it could run.
//     <!-- skip -->    not even compiled (pseudo-code); use sparingly.
//   An example that could run offline (no placeholder; imports only cleanturn, rxjs and node:*) must be marked
//   `run` or `no-run`, so that runnable examples are run.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type BlockReport,
  type CodeBlock,
  checkBlocks,
  extractBlocks,
  runBlock,
  runsOffline,
  typescriptLanguages,
} from '../scripts/readmeCode.js';

/** The placeholders of the README's examples. */
const prelude = `
import type { Observable } from 'rxjs';
import type { AttemptRecord, ProviderEvent, TurnEvent } from 'cleanturn';
import type { TurnReport } from 'cleanturn/transport';
import type { ToolHandler } from 'cleanturn/effects';
import type { ChatCompletionTool } from 'openai/resources/chat/completions';

declare global {
  /** The provider events of one attempt, e.g. from an adapter (Quick start). */
  function streamFromProvider(): Observable<ProviderEvent>;
  /** What the user reads (Quick start). */
  const view: { clear(): void; append(text: string): void };
  /**
   * The tools: run once per effect key, and answer a repeat (its key already ran) with the recorded result
   * (Quick start); sent as tool definitions (the fetch example).
   */
  const tools: {
    run(name: string, args: unknown, effectKey: string): void;
    replay(callId: string, effectKey: string): void;
  };
  /** Draws the turn: its text and attempts (Quick start), or one event (the fetch example). */
  function render(text: string, attempts: readonly AttemptRecord[]): void;
  function render(event: TurnEvent): void;
  /** The provider's API key (the fetch example). */
  const key: string;
  /** The conversation so far (the fetch example). */
  const messages: readonly { role: 'system' | 'user' | 'assistant' | 'tool'; content: string }[];
  /** Where the usage of every attempt is recorded (the fetch example). */
  const billing: { record(report: TurnReport): void };
  /** The refund tool's definition, as the OpenAI SDK takes it (the OpenAI adapter example). */
  const refundTool: ChatCompletionTool;
  /** A provider stream already turned into neutral events, fragments and all (the effects examples). */
  const providerEvents$: Observable<ProviderEvent>;
  /** The orchestrator's id for the turn (the effects examples). */
  const turnId: string;
  /** A schema that validates the refund tool's arguments (the effects example). */
  const RefundArgs: { parse(args: unknown): { order_id: string; amount: 'full' | 'partial' } };
  /** A payment service client that is idempotent on a key (the effects example). */
  const payments: {
    refund(orderId: string, options: { idempotencyKey: string; signal: AbortSignal }): Promise<{ id: string; status: string }>;
  };
  /** Hands a tool's outcome back to the model (the effects example). */
  function feedBackToModel(callId: string, result: unknown): void;
  /** The provider streams of the agent loop's steps (the step numbers example). */
  const steps: readonly Observable<ProviderEvent>[];
  /** The tool handlers of the agent (the step numbers example). */
  const handlers: Record<string, ToolHandler>;
}
export {};
`;

const where = (b: CodeBlock) => `README.md:${b.line}`;

/**
 * Problems the README is known to have, by message (without the line), each with its fix: they do not fail the
 * test until fixed, and an entry fails the test once its problem is gone, so that the list only shrinks.
 */
const knownProblems: Readonly<Record<string, string>> = {};
const message = (problem: string) => problem.replace(/^[^:]+:\d+: /, '');

describe('README.md code blocks', () => {
  const blocks = extractBlocks(readFileSync('README.md', 'utf8'));
  const typescript = blocks.filter((b) => typescriptLanguages.has(b.lang) && !b.markers.has('skip'));
  let reports: BlockReport[] = [];
  beforeAll(() => {
    reports = checkBlocks(blocks, { prelude });
  }, 30_000);
  const report = (b: CodeBlock): BlockReport => {
    const r = reports.find((x) => x.block === b);
    if (r === undefined) throw new Error(`no report for ${where(b)}`);
    return r;
  };

  it('has TypeScript blocks to check', () => {
    expect(typescript.length).toBeGreaterThan(0);
  });

  for (const block of typescript) {
    const first = block.code.split('\n').find((l) => l.trim() !== '') ?? '';
    it(`${where(block)} compiles: ${first.trim().slice(0, 60)}`, () => {
      expect(report(block).problems.filter((p) => !(message(p) in knownProblems))).toEqual([]);
    });
    if (block.markers.has('run')) {
      it(`${where(block)} runs`, async () => {
        await runBlock(block);
      }, 30_000);
    }
  }

  it('still has the known problems (remove the fixed ones from knownProblems)', () => {
    const found = new Set(reports.flatMap((r) => r.problems.map(message)));
    expect(Object.keys(knownProblems).filter((p) => !found.has(p))).toEqual([]);
  });

  it('every example that can run offline is marked <!-- run --> or <!-- no-run -->', () => {
    const unmarked = typescript
      .filter((b) => !b.markers.has('run') && !b.markers.has('no-run'))
      .filter((b) => runsOffline(report(b)))
      .map(where);
    expect(unmarked).toEqual([]);
  });
});

describe('the README code check can fail', () => {
  const check = (markdown: string): BlockReport[] => checkBlocks(extractBlocks(markdown), { prelude });
  let reports: BlockReport[] = [];
  beforeAll(() => {
    reports = check(
      [
        '# A page with one good and four wrong blocks',
        '',
        '```ts',
        "import { cleanTurn, effectKey } from 'cleanturn';",
        "const a = effectKey('turn-42', { name: 'issue_refund', args: { amount: 'full' } });",
        "const op = cleanTurn({ turnId: 'turn-42' });",
        'view.append(a);',
        'void op;',
        '```',
        '',
        '```ts',
        "import { cleanTurn } from 'cleanturn';",
        "cleanTurn({ turnID: 'turn-42' }); // misspelt option",
        '```',
        '',
        '```ts',
        'view.append(42); // a placeholder used against its type',
        '```',
        '',
        '```ts',
        'function cleanTurn(options: { turnId: string }): OperatorFunction<NoSuchEvent, TurnEvent>;',
        '```',
        '',
        '```ts',
        'function cleanTurns(): void; // not an export',
        '```',
        '',
        '<!-- skip -->',
        '```ts',
        'this is not TypeScript',
        '```',
        '',
        '```sh',
        'not checked',
        '```',
      ].join('\n'),
    );
  }, 30_000);

  it('passes a correct block and skips marked and non-TypeScript blocks', () => {
    expect(reports).toHaveLength(5);
    expect(reports[0]?.problems).toEqual([]);
    expect(reports[0]?.usesPlaceholders).toBe(true);
  });

  it('reports a misuse of the API, with the Markdown line', () => {
    expect(reports[1]?.problems.join('\n')).toMatch(/^README\.md:13: .*turnID/);
  });

  it('reports a placeholder used against its declared type', () => {
    expect(reports[2]?.problems.join('\n')).toMatch(/README\.md:17: .*'number'.*'string'/);
  });

  it('checks synopses: unknown types and names the package does not export', () => {
    expect(reports[3]?.kind).toBe('synopsis');
    expect(reports[3]?.problems.join('\n')).toMatch(/README\.md:21: Cannot find name 'NoSuchEvent'/);
    expect(reports[3]?.problems.join('\n')).not.toMatch(/OperatorFunction|TurnEvent/);
    expect(reports[4]?.problems).toEqual(['README.md:25: `cleanTurns` is not exported by the package']);
  });

  it('runs a block, and fails one whose assertion fails', async () => {
    const [good, bad] = extractBlocks(
      [
        '```ts',
        "import assert from 'node:assert/strict';",
        "import { effectKey } from 'cleanturn';",
        "const args = { order_id: 'ORD-7781', amount: 'full' };",
        "const c1 = effectKey('turn-42', { name: 'issue_refund', args });",
        "const c7 = effectKey('turn-42', { name: 'issue_refund', args: { amount: 'full', order_id: 'ORD-7781' } });",
        'assert.equal(c1, c7);',
        "console.log('same key', c1);",
        '```',
        '```ts',
        "import assert from 'node:assert/strict';",
        "import { effectKey } from 'cleanturn';",
        "assert.equal(effectKey('turn-42', { name: 'issue_refund', args: {} }), 'not the key');",
        '```',
      ].join('\n'),
    ) as [CodeBlock, CodeBlock];
    await expect(runBlock(good)).resolves.toMatch(/^same key [0-9a-f]{16}$/m);
    await expect(runBlock(bad)).rejects.toThrow(/block at line 11 failed[\s\S]*not the key/);
  }, 30_000);
});
