// Every TypeScript block of README.md and of the guides (docs/guides/*.md) is compiled against the package's
// sources, and the ones marked to run are executed. The convention:
//
// - Blocks fenced as ```ts (or ```typescript) are type-checked with tsconfig.json's options (strict);
//   `cleanturn` and `cleanturn/*` resolve to src/ through its `paths`. Other blocks (sh, text, python…) are
//   not touched.
// - An example may use the placeholders declared in `prelude` below (`render`, `streamFromProvider`,
//   `providerEvents$`, `turnId`, `handlers`…) without defining them: they stand for the user's own code, and are
//   typed so that misusing cleanturn's API with them still fails to compile. Add one there when an example
//   needs a new one.
// - A block of declarations only (signatures without bodies, interfaces, types, `const x: T;`) is a synopsis of
//   the API: it is checked as ambient declarations, may use any export of the package or of rxjs as a type
//   without importing it, may leave a type out (`{ initialDelay?; … }`), and may declare only names the
//   package exports.
// - Marker comments go on the line(s) right before the fence (blank lines allowed in between):
//     <!-- run -->       also execute the block (Node.js, in a child process): it must be self-contained and
//                        offline; it passes if it completes, so check results with node:assert.
//     <!-- loopback -->  also execute the block against a local server that speaks the OpenAI Chat Completions
//                        format (test/readme-loopback.test.ts): the block reads OPENAI_BASE_URL and
//                        OPENAI_API_KEY, and must send one request per attempt.
//     <!-- no-run -->    compile only, although it could run.
//     <!-- skip -->      not even compiled (pseudo-code); use sparingly.
//   An example that could run offline (no placeholder; imports only cleanturn, rxjs and node:*) must be marked
//   `run`, `loopback` or `no-run`, so that runnable examples are run.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { documentPaths } from '../scripts/readme.js';
import {
  type BlockReport,
  type CodeBlock,
  checkBlocks,
  extractBlocks,
  runBlock,
  runsOffline,
  typescriptLanguages,
} from '../scripts/readmeCode.js';

/** The placeholders of the examples of the README and the guides. */
const prelude = `
import type { Observable } from 'rxjs';
import type { AttemptRecord, ProviderEvent, TurnEvent } from 'cleanturn';
import type { ToolHandler } from 'cleanturn/effects';

declare global {
  /** The provider events of one attempt, e.g. from an adapter (the ACP example). */
  function streamFromProvider(): Observable<ProviderEvent>;
  /** What the user reads (the self-tests below). */
  const view: { clear(): void; append(text: string): void };
  /** Draws the turn: its text and attempts (the Anthropic and Gemini examples). */
  function render(text: string, attempts: readonly AttemptRecord[]): void;
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
  /** The Angular guide's chat turns (its chat-turn.ts, used by its component). */
  function injectChatTurn(): (
    turnId: string,
    messages: { role: 'user' | 'assistant'; content: string }[],
  ) => Observable<TurnEvent>;
}
export {};
`;

/**
 * Problems the documents are known to have, by file and message (without the line), each with its fix: they do not
 * fail the test until fixed, and an entry fails the test once its problem is gone, so that the list only shrinks.
 */
const knownProblems: Readonly<Record<string, Readonly<Record<string, string>>>> = {};
const message = (problem: string) => problem.replace(/^[^:]+:\d+: /, '');

for (const file of documentPaths()) {
  describe(`${file} code blocks`, () => {
    const known = knownProblems[file] ?? {};
    const where = (b: CodeBlock) => `${file}:${b.line}`;
    const blocks = extractBlocks(readFileSync(file, 'utf8'));
    const typescript = blocks.filter((b) => typescriptLanguages.has(b.lang) && !b.markers.has('skip'));
    let reports: BlockReport[] = [];
    beforeAll(() => {
      reports = checkBlocks(blocks, { prelude, fileName: file });
    }, 60_000);
    const report = (b: CodeBlock): BlockReport => {
      const r = reports.find((x) => x.block === b);
      if (r === undefined) throw new Error(`no report for ${where(b)}`);
      return r;
    };

    if (file === 'README.md')
      it('has TypeScript blocks to check', () => {
        expect(typescript.length).toBeGreaterThan(0);
      });

    for (const block of typescript) {
      const first = block.code.split('\n').find((l) => l.trim() !== '') ?? '';
      it(`${where(block)} compiles: ${first.trim().slice(0, 60)}`, () => {
        expect(report(block).problems.filter((p) => !(message(p) in known))).toEqual([]);
      });
      if (block.markers.has('run')) {
        it(`${where(block)} runs`, async () => {
          await runBlock(block);
        }, 30_000);
      }
    }

    it('still has the known problems (remove the fixed ones from knownProblems)', () => {
      const found = new Set(reports.flatMap((r) => r.problems.map(message)));
      expect(Object.keys(known).filter((p) => !found.has(p))).toEqual([]);
    });

    it('every example that can run offline is marked <!-- run -->, <!-- loopback --> or <!-- no-run -->', () => {
      const unmarked = typescript
        .filter((b) => !b.markers.has('run') && !b.markers.has('no-run') && !b.markers.has('loopback'))
        .filter((b) => runsOffline(report(b)))
        .map(where);
      expect(unmarked).toEqual([]);
    });
  });
}

it('knownProblems names only documents that exist', () => {
  expect(Object.keys(knownProblems).filter((f) => !documentPaths().includes(f))).toEqual([]);
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

  it('names the document a problem is in', () => {
    const [guide] = checkBlocks(
      extractBlocks(['# A guide', '', '```ts', 'view.append(42);', '```'].join('\n')),
      {
        prelude,
        fileName: 'docs/guides/example.md',
      },
    );
    expect(guide?.problems.join('\n')).toMatch(/^docs\/guides\/example\.md:4: /);
  }, 30_000);

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
