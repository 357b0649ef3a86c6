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
// - A block that awaits at its top level is an ES module, which the CommonJS project of `npm init -y` is not: put
//   its code in an `async function main() { … } main();`, or say in the paragraph right above it that it is an ES
//   module (`"type": "module"`, or a `.mjs` file).
// - Filled in: in the guides of `filledGuides`, an example that leaves a part to the reader (a `declare const
//   request: …`, a placeholder of the prelude) is also compiled as a reader fills it in, from the table `fillings`
//   below: the declaration replaced by a realistic value (once per shipped adapter where it takes one), the prelude's
//   placeholders defined, and no prelude at all. Such an example without a filling fails the test.
import { readFileSync } from 'node:fs';
import * as providers from 'cleanturn/providers';
import ts from 'typescript';
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
import type { ToolHandlers } from 'cleanturn/effects';

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
  const handlers: ToolHandlers;
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

// Filled in, as a user fills them: a guide's example that leaves a part to the reader (a `declare const request`,
// a placeholder of the prelude) is also compiled with that part written out, with no prelude at all. A filling
// names the text the reader replaces (a placeholder's declaration) and what they write instead; with several
// alternatives (one per shipped adapter), the block is compiled once with each. `define` adds definitions of the
// prelude's placeholders after the block's imports. Every example of these guides that leaves a part out must have
// a filling, and every filling must still find its text in exactly one block.

/** One block's filling: see above. */
interface Filling {
  /** Text of the block and what replaces it (a string, or one alternative per compilation). */
  readonly replace?: readonly (readonly [text: string, by: string | readonly string[]])[];
  /** Code added after the block's last import: the definitions of the prelude's placeholders it uses. */
  readonly define?: string;
  /** Text that identifies the block when it has nothing to replace. */
  readonly in?: string;
}

/** The guides whose examples are compiled filled in. */
const filledGuides = [
  'docs/guides/transport.md',
  'docs/guides/effects.md',
  'docs/guides/providers.md',
  'docs/guides/pipeline.md',
  'docs/guides/nestjs.md',
  'docs/guides/adapters.md',
  'docs/guides/angular.md',
  'docs/guides/observability.md',
  'docs/guides/renderers.md',
  'docs/guides/testing.md',
];

/** Every adapter of `cleanturn/providers`, as a user writes it in `adapter:` (checked against the entry below). */
const shippedAdapters: Readonly<Record<string, string>> = {
  aiSdkParts: 'aiSdkParts()',
  anthropicMessages: 'anthropicMessages()',
  geminiContent: 'geminiContent()',
  geminiInteractions: 'geminiInteractions()',
  openaiChat: 'openaiChat()',
  openaiResponses: 'openaiResponses()',
};
const adapterImport = `import { ${Object.keys(shippedAdapters).join(', ')} } from 'cleanturn/providers';`;
/** `template` once per shipped adapter, `ADAPTER` replaced by it. */
const eachAdapter = (template: string): string[] =>
  Object.values(shippedAdapters).map((adapter) => template.replaceAll('ADAPTER', adapter));

/** A request as a user writes one: the provider's URL, a key from the environment, the signal. */
const chatRequest = `({ signal }: { signal: AbortSignal }) => ({
  url: 'https://api.openai.com/v1/chat/completions',
  init: {
    method: 'POST',
    headers: { authorization: \`Bearer \${process.env.OPENAI_API_KEY}\`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4.1', stream: true, messages: [{ role: 'user', content: 'Refund ORD-7781.' }] }),
    signal,
  },
})`;

/** A provider's events over fetch, once per shipped adapter (the SSE payloads of its format). */
const providerStreams = eachAdapter(`fromSSE(${chatRequest}).pipe(sseJson(), ADAPTER)`);
const transportImport = "import { fromSSE, sseJson, streamTurn } from 'cleanturn/transport';";

/** The Angular guide's chat turn (its chat-turn.ts): a turn over the app's own endpoint. */
const angularChatTurn = `import { openaiChat as chatAdapter } from 'cleanturn/providers';
import { streamTurn as chatStream } from 'cleanturn/transport';
function injectChatTurn() {
  return (turnId: string, messages: { role: 'user' | 'assistant'; content: string }[]) =>
    chatStream({
      turnId,
      adapter: chatAdapter(),
      request: ({ signal }) =>
        new Request('/api/chat/completions', { method: 'POST', body: JSON.stringify({ messages, stream: true }), signal }),
    });
}`;

/** The refund tool as a user writes it: the effect key goes to the payment service as its idempotency key. */
const refundHandlers = `const handlers = {
  issue_refund: async (args: unknown, { effectKey, signal }: { effectKey: string; signal: AbortSignal }) => {
    const response = await fetch('https://payments.example.com/refunds', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': effectKey },
      body: JSON.stringify(args),
      signal,
    });
    return (await response.json()) as { refund_id: string };
  },
};`;
/** A render of the turn's text and attempts into the page. */
const renderText = `function render(text: string, attempts: readonly { attempt: number; outcome: string }[]): void {
  document.querySelector('#answer')?.replaceChildren(text);
  console.log(attempts.map((a) => \`attempt \${a.attempt}: \${a.outcome}\`).join(', '));
}`;

const fillings: Readonly<Record<string, readonly Filling[]>> = {
  'docs/guides/transport.md': [
    {
      replace: [
        [
          'declare const request: (context: { attempt: number; signal: AbortSignal }) => string;\nconst stop',
          `const request = ${chatRequest};\nconst stop`,
        ],
      ],
    },
    {
      replace: [
        [
          'declare const request: (context: { attempt: number; signal: AbortSignal }) => string;\n\nstreamTurn({',
          `const request = ${chatRequest};\n\nstreamTurn({`,
        ],
      ],
    },
    ...['stop request', 'every connection reads the log'].map((anchor) => ({
      in: anchor,
      replace: [
        [
          'declare const providerOptions: (turnId: string) => StreamTurnOptions;',
          eachAdapter(
            `${adapterImport}\nconst providerOptions: (turnId: string) => StreamTurnOptions = (turnId) => ({ turnId, adapter: ADAPTER, retry: 2, request: ${chatRequest} });`,
          ),
        ],
      ] as const,
    })),
    {
      replace: [
        ['declare const turnId: string;', "const turnId = 'turn-42';"],
        ['declare function render(text: string, attempts: readonly AttemptRecord[]): void;', renderText],
      ],
    },
    {
      replace: [
        ['declare const handlers: Record<string, (args: unknown) => Promise<unknown>>;', refundHandlers],
        [
          'declare function firstMessages(runId: string): unknown[];',
          `function firstMessages(runId: string): unknown[] {\n  return [{ role: 'user', content: \`Refund order ORD-7781 (\${runId}).\` }];\n}`,
        ],
      ],
    },
    {
      replace: [
        [
          'declare const turn$: Observable<TurnEvent>;',
          eachAdapter(
            `${adapterImport}\n${transportImport}\nconst turn$: Observable<TurnEvent> = streamTurn({ turnId: 'turn-42', adapter: ADAPTER, request: ${chatRequest} });`,
          ),
        ],
      ],
    },
  ],
  'docs/guides/effects.md': [
    {
      in: 'new PostgresEffectLedger({ pool })',
      replace: [
        [
          'const pool =',
          providerStreams.map(
            (events) =>
              `${adapterImport}\n${transportImport}\nconst turnId = 'turn-42';\n${refundHandlers}\nconst providerEvents$ = ${events};\nconst pool =`,
          ),
        ],
      ],
    },
    {
      in: 'for (const [step, stream] of steps.entries())',
      define: `${adapterImport}\n${transportImport}\nconst turnId = 'run-7';\n${refundHandlers}\nconst steps = [${providerStreams[0]}];`,
    },
  ],
  'docs/guides/providers.md': [
    ...[
      'toOpenAIChatMessages(turn, results)',
      'toOpenAIResponsesInput(turn, results)',
      'toAnthropicMessages(turn, results)',
      'toGeminiContents(turn, results)',
    ].map((anchor) => ({ in: anchor, define: refundHandlers })),
    ...[
      'anthropicMessages()), //',
      "attemptPipeline(geminiContent()),\n  turnPipeline({ turnId: 'turn-42'",
      'concatMap((stream): AsyncIterable<Interactions.InteractionSSEEvent> => stream)',
    ].map((anchor) => ({ in: anchor, define: renderText })),
  ],
  'docs/guides/adapters.md': [
    {
      // The reader's own decoder, as the first block of the guide writes it: here one that reads text lines only.
      replace: [
        [
          "declare function relay(): OperatorFunction<unknown, ProviderEvent>; // import { relay } from '../src/relay.js';",
          `import { map } from 'rxjs';
const relay = (): OperatorFunction<unknown, ProviderEvent> =>
  map((line) => ({ type: 'text', text: String((line as { text?: unknown }).text) }));`,
        ],
      ],
    },
  ],
  'docs/guides/angular.md': [
    '@switch (turn.status())',
    "selector: 'app-chat-resource'",
    'imports: [AsyncPipe]',
  ].map((anchor) => ({ in: anchor, define: angularChatTurn })),
  'docs/guides/observability.md': [
    {
      replace: [
        [
          'declare const reader: MetricReader; // the reader your metrics pipeline collects from',
          `import { AggregationTemporality, InMemoryMetricExporter, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
const reader: MetricReader = new PeriodicExportingMetricReader({
  exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
});`,
        ],
      ],
    },
  ],
  'docs/guides/renderers.md': [
    {
      in: 'concatMap((update) => client.notify(acp.methods.client.session.update, update))',
      define: `${adapterImport}\n${transportImport}\nconst streamFromProvider = () => ${providerStreams[0]};`,
    },
  ],
  'docs/guides/pipeline.md': [
    {
      replace: [
        [
          'declare const validators: Record<string, ((args: unknown) => boolean) & { errors?: { message?: string }[] | null }>;',
          providerStreams.map(
            (events) => `${adapterImport}
${transportImport}
const turnId = 'turn-42';
const streamFromProvider = () => ${events};
const refundArgs = (args: unknown): boolean =>
  typeof args === 'object' && args !== null && 'order_id' in args && typeof args.order_id === 'string';
const validators: Record<string, ((args: unknown) => boolean) & { errors?: { message?: string }[] | null }> = {
  issue_refund: Object.assign(refundArgs, { errors: [{ message: 'order_id must be a string' }] }),
};`,
          ),
        ],
      ],
    },
  ],
  'docs/guides/nestjs.md': [
    {
      // The module of examples/nest with a shared log and ledger (paths from this check's own folder).
      replace: [
        [
          'TurnsModule.forRoot({\n  baseUrl',
          `import { RedisEffectLedger } from 'cleanturn/effects/redis';
import { redisTurnLog } from 'cleanturn/transport/redis';
import { Redis } from 'ioredis';
import { TurnsModule } from '../examples/nest/turns.module.js';
import type { TurnUpdate } from '../examples/nest/turns.service.js';

const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1');
TurnsModule.forRoot({\n  baseUrl`,
        ],
      ],
    },
  ],
};

/** Whether the code awaits outside any function: it is then an ES module, which `npm init -y`'s project is not. */
function awaitsAtTopLevel(code: string): boolean {
  const source = ts.createSourceFile('block.ts', code, ts.ScriptTarget.ES2022, true);
  let found = false;
  const visit = (node: ts.Node): void => {
    if (found || ts.isFunctionLike(node) || ts.isClassStaticBlockDeclaration(node)) return;
    if (ts.isAwaitExpression(node) || (ts.isForOfStatement(node) && node.awaitModifier !== undefined))
      found = true;
    else ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * Whether the paragraph right above a block (marker comments and blank lines between are passed over) says that the
 * block is an ES module: it names `"type": "module"` or a `.mjs` file.
 */
function saysModule(markdown: string, block: CodeBlock): boolean {
  const lines = markdown.split('\n');
  let i = block.line - 3; // the fence is at block.line - 1 (1-based), so the line before it at index block.line - 3
  while (i >= 0 && ((lines[i] ?? '').trim() === '' || /^<!--.*-->$/.test((lines[i] ?? '').trim()))) i--;
  const paragraph: string[] = [];
  while (i >= 0 && (lines[i] ?? '').trim() !== '') paragraph.unshift(lines[i--] ?? '');
  return /"type": "module"|\.mjs\b/.test(paragraph.join(' '));
}

/**
 * Documents whose top-level-await blocks are not yet marked, with what they need: the check skips them until then
 * (remove an entry to turn the check on).
 */
const awaitNotYetMarked: Readonly<Record<string, string>> = {};

/** The top-level declarations that stand for the reader's own code (`declare const request: …`). */
function declaredPlaceholders(code: string): string[] {
  const source = ts.createSourceFile('block.ts', code, ts.ScriptTarget.ES2022, true);
  return source.statements
    .filter(
      (s) =>
        ts.canHaveModifiers(s) && ts.getModifiers(s)?.some((m) => m.kind === ts.SyntaxKind.DeclareKeyword),
    )
    .map((s) => s.getText(source).split('\n')[0] ?? '');
}

/** The filled-in versions of a block: one per combination of alternatives. */
function fillBlock(block: CodeBlock, filling: Filling): CodeBlock[] {
  let codes = [block.code];
  for (const [text, by] of filling.replace ?? []) {
    const options = typeof by === 'string' ? [by] : by;
    codes = codes.flatMap((code) => options.map((option) => code.replace(text, () => option)));
  }
  if (filling.define !== undefined) {
    const define = filling.define;
    codes = codes.map((code) => {
      const source = ts.createSourceFile('block.ts', code, ts.ScriptTarget.ES2022, true);
      const imports = source.statements.filter(ts.isImportDeclaration);
      const at = imports.length === 0 ? 0 : (imports[imports.length - 1]?.getEnd() ?? 0);
      return `${code.slice(0, at)}\n${define}\n${code.slice(at)}`;
    });
  }
  return codes.map((code) => ({ ...block, code, markers: new Set() }));
}

/** The texts a filling looks for in its block. */
const anchorsOf = (filling: Filling): string[] => [
  ...(filling.replace ?? []).map(([text]) => text),
  ...(filling.in === undefined ? [] : [filling.in]),
];

for (const file of documentPaths()) {
  describe(`${file} code blocks`, () => {
    const known = knownProblems[file] ?? {};
    const where = (b: CodeBlock) => `${file}:${b.line}`;
    const markdown = readFileSync(file, 'utf8');
    const blocks = extractBlocks(markdown);
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

    it.skipIf(file in awaitNotYetMarked)(
      'every block with top-level await says right above it that it is an ES module',
      () => {
        const unmarked = blocks
          .filter((b) => typescriptLanguages.has(b.lang) && awaitsAtTopLevel(b.code))
          .filter((b) => !saysModule(markdown, b))
          .map(where);
        expect(unmarked).toEqual([]);
      },
    );

    if (filledGuides.includes(file))
      describe('filled in', () => {
        const filled = (fillings[file] ?? []).map((filling) => {
          const anchors = anchorsOf(filling);
          // A skipped block (an excerpt, or a fragment of a larger file) may be filled in too: it is then compiled.
          const found = blocks
            .filter((b) => typescriptLanguages.has(b.lang))
            .filter((b) => anchors.every((a) => b.code.includes(a)));
          return {
            filling,
            anchors,
            found,
            variants: found.length === 1 ? fillBlock(found[0] as CodeBlock, filling) : [],
          };
        });
        let filledReports: BlockReport[] = [];
        beforeAll(() => {
          filledReports = checkBlocks(
            filled.flatMap((f) => f.variants),
            { prelude: 'export {};', fileName: file },
          );
        }, 60_000);

        it('every example that leaves a part to the reader has a filling', () => {
          const unfilled = typescript
            .filter((b) => report(b).kind === 'example')
            .filter((b) => report(b).usesPlaceholders || declaredPlaceholders(b.code).length > 0)
            .filter((b) => !filled.some((f) => f.found.includes(b)))
            .map((b) => `${where(b)}: ${declaredPlaceholders(b.code).join(' ') || 'uses the prelude'}`);
          expect(unfilled).toEqual([]);
        });

        for (const [i, { anchors, found, variants }] of filled.entries()) {
          const name = `filling ${i + 1} (${(anchors[0] ?? '').split('\n')[0]?.slice(0, 50)})`;
          it(`${name} finds its text in exactly one block`, () => {
            expect(found.map(where)).toHaveLength(1);
            // Each variant changes the block: a filling that replaces nothing checks nothing.
            expect(variants.length).toBeGreaterThan(0);
            expect(variants.filter((v) => v.code === found[0]?.code)).toEqual([]);
          });
          for (const [j, variant] of variants.entries()) {
            it(`${where(variant)} compiles filled in (${name}, ${j + 1} of ${variants.length})`, () => {
              const r = filledReports.find((x) => x.block === variant);
              expect(r?.problems).toEqual([]);
              expect(declaredPlaceholders(variant.code)).toEqual([]);
            });
          }
        }
      });
  });
}

it('shippedAdapters names every adapter of cleanturn/providers', () => {
  const adapters = Object.entries(providers)
    .filter(([name, value]) => typeof value === 'function' && /^[a-z]/.test(name))
    .filter(([name]) => !/^to[A-Z]/.test(name) && name !== 'decodeWith')
    .map(([name]) => name)
    .sort();
  expect(adapters).toEqual(Object.keys(shippedAdapters).sort());
});

it('knownProblems and awaitNotYetMarked name only documents that exist', () => {
  expect(Object.keys(knownProblems).filter((f) => !documentPaths().includes(f))).toEqual([]);
  expect(Object.keys(awaitNotYetMarked).filter((f) => !documentPaths().includes(f))).toEqual([]);
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

  it('finds top-level await, and the paragraph above a block that says it is an ES module', () => {
    expect(awaitsAtTopLevel('const turn = await lastValueFrom(turn$);')).toBe(true);
    expect(awaitsAtTopLevel('for await (const chunk of stream) console.log(chunk);')).toBe(true);
    expect(awaitsAtTopLevel('async function main() {\n  await lastValueFrom(turn$);\n}\n\nmain();')).toBe(
      false,
    );
    expect(awaitsAtTopLevel('const run = async () => {\n  for await (const c of stream) void c;\n};')).toBe(
      false,
    );
    const markdown = [
      'An ES module (`"type": "module"` in its package.json):',
      '',
      '<!-- run -->',
      '```ts',
      'await Promise.resolve();',
      '```',
      '',
      'The same, said nowhere.',
      '',
      '```ts',
      'await Promise.resolve();',
      '```',
    ].join('\n');
    const [marked, unmarked] = extractBlocks(markdown) as [CodeBlock, CodeBlock];
    expect(saysModule(markdown, marked)).toBe(true);
    expect(saysModule(markdown, unmarked)).toBe(false);
  });

  it('compiles a block filled in, once per alternative, without the prelude, and reports a filling that does not fit', () => {
    const [block] = extractBlocks(
      [
        '```ts',
        "import { effectKey } from 'cleanturn';",
        'declare const turnId: string;',
        "console.log(effectKey(turnId, { name: 'issue_refund', args: {} }), view);",
        '```',
      ].join('\n'),
    ) as [CodeBlock];
    expect(declaredPlaceholders(block.code)).toEqual(['declare const turnId: string;']);
    const variants = fillBlock(block, {
      replace: [['declare const turnId: string;', ["const turnId = 'turn-42';", 'const turnId = 42;']]],
      define: 'const view = { append: (text: string) => console.log(text) };',
    });
    expect(variants.map((v) => declaredPlaceholders(v.code))).toEqual([[], []]);
    const [good, bad] = checkBlocks(variants, { prelude: 'export {};' });
    expect(good?.problems).toEqual([]);
    expect(bad?.problems.join('\n')).toMatch(/README\.md:\d+: .*'number'.*'string'/);
    // Without the definition, a placeholder of the prelude is not there to lean on.
    const [unfilled] = checkBlocks(
      fillBlock(block, { replace: [['declare const turnId: string;', "const turnId = 'turn-42';"]] }),
      {
        prelude: 'export {};',
      },
    );
    expect(unfilled?.problems.join('\n')).toMatch(/Cannot find name 'view'/);
  }, 30_000);

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
    // The same inside an `async function main() { … } main();`: its rejection fails the run too.
    const [wrapped] = extractBlocks(
      [
        '```ts',
        "import assert from 'node:assert/strict';",
        "import { effectKey } from 'cleanturn';",
        '',
        'async function main() {',
        '  await Promise.resolve();',
        "  assert.equal(effectKey('turn-42', { name: 'issue_refund', args: {} }), 'not the key');",
        '}',
        '',
        'main();',
        '```',
      ].join('\n'),
    ) as [CodeBlock];
    await expect(runBlock(wrapped)).rejects.toThrow(/block at line 2 failed[\s\S]*not the key/);
  }, 30_000);
});
