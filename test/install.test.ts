// Installing the package as a user does before it is on the registry: `npm pack` in a clone that was never
// built (the `prepare` script builds it), then `npm install` of the tarball into a new project, offline. The project
// loads every entry in ESM and CommonJS, type-checks against the shipped declarations, and runs the README's quick
// start as pasted: against a server on 127.0.0.1 that resets the first connection, one request per attempt.
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractBlocks } from '../scripts/readmeCode.js';
import {
  isNextRequest,
  lastSentence,
  nextRequestProblems,
  retriedChatServer,
  stepTwoText,
} from './support/retriedChatServer.js';

const root = resolve(import.meta.dirname, '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  exports: Record<string, unknown>;
  dependencies: Record<string, string>;
};

let work: string;
let tarball: string;
let files: string[];
let project: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'cleanturn-install-'));
  // A clean clone's files: sources and configuration, no dist/.
  const clone = join(work, 'clone');
  mkdirSync(clone);
  for (const name of ['package.json', 'tsup.config.ts', 'tsconfig.json', 'LICENSE', 'README.md', 'src']) {
    cpSync(join(root, name), join(clone, name), { recursive: true });
  }
  symlinkSync(join(root, 'node_modules'), join(clone, 'node_modules'), 'dir');
  const packed = JSON.parse(
    execFileSync(npm, ['pack', '--json', '--pack-destination', work], { cwd: clone, encoding: 'utf8' }),
  ) as { filename: string; files: { path: string }[] }[];
  const [first] = packed;
  if (first === undefined) throw new Error('npm pack packed nothing');
  tarball = join(work, first.filename);
  files = first.files.map((f) => f.path);

  // A new project that installs the tarball (and rxjs, its peer) from npm's cache, offline.
  project = join(work, 'project');
  mkdirSync(project);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'user-project', version: '1.0.0', private: true, type: 'module' }),
  );
  // Its dependencies and rxjs come as tarballs of the copies in node_modules: no registry needed.
  const dependencies = ['rxjs', 'tslib', ...Object.keys(pkg.dependencies)].map((name) => {
    const [packedDependency] = JSON.parse(
      execFileSync(npm, ['pack', '--json', '--pack-destination', work, join(root, 'node_modules', name)], {
        cwd: work,
        encoding: 'utf8',
      }),
    ) as { filename: string }[];
    if (packedDependency === undefined) throw new Error(`npm pack packed nothing for ${name}`);
    return join(work, packedDependency.filename);
  });
  execFileSync(
    npm,
    ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball, ...dependencies],
    {
      cwd: project,
      encoding: 'utf8',
    },
  );
}, 180_000);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

/** Type-checks the project with the repository's TypeScript and the given config; throws with tsc's report. */
function typecheck(config: string): void {
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', config], {
    cwd: project,
    encoding: 'utf8',
  });
}

/** Runs `code` as a file of the project (`name` decides ESM or CommonJS) and returns what it printed. */
function runInProject(name: string, code: string): string {
  writeFileSync(join(project, name), code);
  return execFileSync(process.execPath, [name], { cwd: project, encoding: 'utf8' });
}

// Each case runs npm, node or tsc in a child process: slow on a loaded machine, never flaky.

/** The compiler options of a user's project that loads the package as Node resolves it. */
const userCompilerOptions = {
  strict: true,
  module: 'nodenext',
  moduleResolution: 'nodenext',
  target: 'es2022',
  noEmit: true,
};
describe('installing from a clone that was never built', { timeout: 120_000 }, () => {
  it('npm pack builds first and ships the built package, its types, README and LICENSE, and no sources', () => {
    expect(files).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'package.json']));
    for (const entry of ['index', 'transport', 'effects', 'providers', 'renderers', 'acp', 'testing']) {
      expect(files).toContain(`dist/${entry}.js`);
      expect(files).toContain(`dist/${entry}.cjs`);
      expect(files).toContain(`dist/${entry}.d.ts`);
    }
    expect(files.filter((f) => f.startsWith('src/'))).toEqual([]);
  });

  it('the installed package runs the help-desk turn in ESM and in CommonJS: one refund, one key', () => {
    const turn = (load: string) => `${load}
const events = testing.helpDesk.turn;
const out = [];
rxjs.from(events).pipe(core.cleanTurn({ turnId: testing.helpDesk.turnId })).subscribe((e) => out.push(e));
const refunds = out.filter((e) => e.type === 'tool-call');
console.log(JSON.stringify({ refunds: refunds.map((r) => [r.id, r.effectKey]), resets: out.filter((e) => e.type === 'reset').length }));
`;
    const esm = runInProject(
      'turn.mjs',
      turn(
        "import * as core from 'cleanturn'; import * as testing from 'cleanturn/testing'; import * as rxjs from 'rxjs';",
      ),
    );
    const cjs = runInProject(
      'turn.cjs',
      turn(
        "const core = require('cleanturn'); const testing = require('cleanturn/testing'); const rxjs = require('rxjs');",
      ),
    );
    // The key of the refund's meaning (turn-42, issue_refund, its canonical arguments), as every build computes it.
    expect(JSON.parse(esm)).toEqual({ refunds: [['c7', '4d02b5b61ea1afa1']], resets: 1 });
    expect(cjs).toBe(esm);
  });

  it('every entry of package.json loads from the installed package', () => {
    const entries = Object.keys(pkg.exports)
      .filter((e) => e !== './package.json')
      .map((e) => (e === '.' ? pkg.name : `${pkg.name}/${e.slice(2)}`));
    const optional = new Set([
      'cleanturn/effects/sqlite',
      'cleanturn/effects/redis',
      'cleanturn/effects/postgres',
      'cleanturn/acp',
      'cleanturn/otel',
      'cleanturn/angular',
    ]);
    const loaded = runInProject(
      'entries.mjs',
      `const names = ${JSON.stringify(entries.filter((e) => !optional.has(e)))};
const counts = [];
for (const name of names) counts.push([name, Object.keys(await import(name)).length]);
console.log(JSON.stringify(counts));`,
    );
    for (const [name, count] of JSON.parse(loaded) as [string, number][]) {
      expect(count, name).toBeGreaterThan(0);
    }
  });

  it("type-checks a user's file against the shipped declarations", () => {
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { ...userCompilerOptions, skipLibCheck: false, types: [] },
        include: ['check.ts'],
      }),
    );
    writeFileSync(
      join(project, 'check.ts'),
      `import { from, type Observable } from 'rxjs';
import { cleanTurn, type TurnEvent } from 'cleanturn';
import { helpDesk } from 'cleanturn/testing';
const turn$: Observable<TurnEvent> = from(helpDesk.turn).pipe(cleanTurn({ turnId: 'turn-42' }));
turn$.subscribe((event) => {
  if (event.type === 'tool-call') console.log(event.effectKey.toUpperCase());
});
`,
    );
    expect(() => typecheck('tsconfig.json')).not.toThrow();
  });
});

describe("the README's quick start, pasted into the new project", { timeout: 120_000 }, () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const quickStart = extractBlocks(readme.slice(readme.indexOf('## Quick start'))).find(
    (b) => b.lang === 'ts',
  );

  it('type-checks against the installed package', () => {
    if (quickStart === undefined) throw new Error('the README has no quick start block');
    writeFileSync(join(project, 'quickstart.ts'), quickStart.code);
    writeFileSync(
      join(project, 'tsconfig.quickstart.json'),
      JSON.stringify({
        compilerOptions: {
          ...userCompilerOptions,
          types: ['node'],
          typeRoots: [join(root, 'node_modules/@types')],
        },
        include: ['quickstart.ts'],
      }),
    );
    expect(() => typecheck('tsconfig.quickstart.json')).not.toThrow();
  });

  it("runs: attempt 2's text, the refund released once, one request per attempt, then the next request", async () => {
    if (quickStart === undefined) throw new Error('the README has no quick start block');
    const server = await retriedChatServer();
    try {
      const js = ts.transpileModule(quickStart.code, {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
      }).outputText;
      writeFileSync(join(project, 'quickstart.mjs'), js);
      const stdout = await new Promise<string>((resolvePromise, reject) => {
        execFile(
          process.execPath,
          ['quickstart.mjs'],
          {
            cwd: project,
            encoding: 'utf8',
            timeout: 30_000,
            env: { ...process.env, OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: 'sk-loopback' },
          },
          (error, out, err) =>
            error === null ? resolvePromise(out) : reject(new Error(`${error.message}\n${err}`)),
        );
      });
      // Two attempts of step 1, then the next request with the refund's result.
      const steps = server.requests.map((r) => (isNextRequest(r.body) ? 'next' : 'attempt'));
      expect(steps).toEqual(['attempt', 'attempt', 'next']);
      expect(nextRequestProblems(server.requests[2]?.body ?? '')).toEqual([]);
      expect(stdout).toContain(lastSentence);
      expect(stdout).toContain(stepTwoText);
      expect(stdout.match(/⚙ issue_refund, key/g)).toHaveLength(1);
    } finally {
      await server.close();
    }
  });
});
