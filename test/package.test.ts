// The built package, as users load it: `dist/`, resolved through package.json "exports" by the package's own
// name. The suite's global setup (test/setup/build.ts) builds it.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as source from 'cleanturn';
import * as sourceTesting from 'cleanturn/testing';
import type * as Rxjs from 'rxjs';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');

/** The entries under test: the package name a user writes, and the file base name in dist/. */
const entries = [
  { name: 'cleanturn', file: 'index', sourceNames: Object.keys(source) },
  { name: 'cleanturn/testing', file: 'testing', sourceNames: Object.keys(sourceTesting) },
] as const;

const entryFiles = entries.flatMap((e) => [`${e.file}.js`, `${e.file}.cjs`]);

type EsmReport = Record<string, { names: string[]; probe: unknown }>;
let esmReport: EsmReport | undefined;

/** Loads the ESM entries natively in a fresh Node process, by package name, and reports what they export. */
function loadEsm(): EsmReport {
  esmReport ??= runEsm();
  return esmReport;
}

function runEsm(): EsmReport {
  const script = `
    const out = {};
    for (const name of ${JSON.stringify(entries.map((e) => e.name))}) {
      const m = await import(name);
      out[name] = { names: Object.keys(m), probe: null };
    }
    const core = await import('cleanturn');
    const testing = await import('cleanturn/testing');
    const { from, lastValueFrom, toArray } = await import('rxjs');
    const events = await lastValueFrom(from(testing.helpDesk.turn).pipe(core.cleanTurn({ turnId: 'turn-42' }), toArray()));
    out.cleanturn.probe = events.filter((e) => e.type === 'tool-call').map((e) => [e.id, e.attempt, e.effectKey]);
    console.log(JSON.stringify(out));
  `;
  const stdout = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    encoding: 'utf8',
  });
  return JSON.parse(stdout) as EsmReport;
}

/** Every module specifier a built file imports, re-exports or requires. */
function specifiers(code: string): string[] {
  const patterns = [
    /\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  return patterns.flatMap((pattern) => [...code.matchAll(pattern)].map((m) => m[1] as string));
}

/** The entry files of `cleanturn` and `cleanturn/testing` and every dist file they reach by relative import. */
function coreFiles(): string[] {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const spec of specifiers(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.')) visit(join(dirname(file), spec));
    }
  };
  for (const f of entryFiles) visit(join(dist, f));
  return [...seen];
}

/** Signs of rxjs's own implementation, under any name a bundler might give it. */
const bundledRxjs = [
  /\bclass\s+Subscriber\b/,
  /\bSubscriber\s*=\s*class\b/,
  /\bclass\s+TestScheduler\b/,
  /\bTestScheduler\s*=\s*class\b/,
  /\bclass\s+Observable\b/,
  /\bObservable\s*=\s*class\b/,
  /\bfunction\s+(?:Subscriber|Observable|TestScheduler)\s*\(/,
  /errors occurred during unsubscription/,
  /object unsubscribed/,
];
const looksBundled = (code: string) => bundledRxjs.filter((pattern) => pattern.test(code)).map(String);

const read = (file: string) => readFileSync(join(dist, file), 'utf8');

describe('the built package', () => {
  it('the ESM entries of cleanturn and cleanturn/testing load and export the same names as the CJS entries', () => {
    const esm = loadEsm();
    const require = createRequire(import.meta.url);
    for (const entry of entries) {
      const cjs = require(entry.name) as Record<string, unknown>;
      const esmNames = esm[entry.name]?.names ?? [];
      expect(esmNames.length, entry.name).toBeGreaterThan(0);
      expect([...esmNames].sort(), entry.name).toEqual(Object.keys(cjs).sort());
    }
  });

  it('exports what the sources export (a stale dist/ fails here: run `npm run build`)', () => {
    const esm = loadEsm();
    for (const entry of entries) {
      expect([...(esm[entry.name]?.names ?? [])].sort(), entry.name).toEqual([...entry.sourceNames].sort());
    }
  });

  it('the CJS entries resolve to dist/*.cjs and the ESM entries to dist/*.js', () => {
    const require = createRequire(import.meta.url);
    for (const entry of entries) expect(require.resolve(entry.name)).toBe(join(dist, `${entry.file}.cjs`));
    const resolved = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `console.log(JSON.stringify(${JSON.stringify(entries.map((e) => e.name))}.map((n) => import.meta.resolve(n))))`,
      ],
      { cwd: root, encoding: 'utf8' },
    );
    expect((JSON.parse(resolved) as string[]).map((url) => fileURLToPath(url))).toEqual(
      entries.map((e) => join(dist, `${e.file}.js`)),
    );
  });

  it('both builds work: the help-desk turn through cleanTurn gives the same single keyed refund', () => {
    const esm = loadEsm();
    const require = createRequire(import.meta.url);
    const core = require('cleanturn') as typeof source;
    const testing = require('cleanturn/testing') as typeof sourceTesting;
    const rxjs = require('rxjs') as typeof Rxjs;
    const calls: unknown[] = [];
    rxjs
      .from(testing.helpDesk.turn)
      .pipe(core.cleanTurn({ turnId: 'turn-42' }))
      .subscribe((e) => {
        if (e.type === 'tool-call') calls.push([e.id, e.attempt, e.effectKey]);
      });
    expect(calls).toEqual([['c7', 2, '4d02b5b61ea1afa1']]);
    expect(esm.cleanturn?.probe).toEqual(calls);
  });

  it('an error of one build is instanceof the classes of the other (ESM and CommonJS loaded in one program)', async () => {
    const require = createRequire(import.meta.url);
    const cjs = require('cleanturn') as typeof source;
    const esm = (await import(pathToFileURL(join(dist, 'index.js')).href)) as typeof source;
    const rxjs = require('rxjs') as typeof Rxjs;
    expect(cjs.TurnError).not.toBe(esm.TurnError);
    const caught: unknown[] = [];
    rxjs.EMPTY.pipe(cjs.requireFinish()).subscribe({ error: (error: unknown) => caught.push(error) });
    const [error] = caught;
    expect(error instanceof cjs.TurnError).toBe(true);
    expect(error instanceof esm.TurnError).toBe(true);
    expect(error instanceof esm.CleanturnError).toBe(true);
    expect(error instanceof esm.UsageError).toBe(false);
    expect(error).toMatchObject({ name: 'TurnError', code: 'missing-finish' });
  });

  it('imports rxjs as an external: `from "rxjs"` in ESM, `require("rxjs")` in CJS (in the entry or its chunks)', () => {
    const code = (ext: string) =>
      coreFiles()
        .filter((file) => file.endsWith(ext))
        .map((file) => readFileSync(file, 'utf8'))
        .join('\n');
    expect(specifiers(code('.js'))).toContain('rxjs');
    expect(code('.js')).toMatch(/from\s*['"]rxjs['"]/);
    expect(code('.cjs')).toMatch(/require\(\s*['"]rxjs['"]\s*\)/);
    expect(read('testing.js')).toMatch(/from\s*['"]rxjs\/testing['"]/);
    expect(read('testing.cjs')).toMatch(/require\(\s*['"]rxjs\/testing['"]\s*\)/);
  });

  it('contains no bundled rxjs code', () => {
    const offending = coreFiles().flatMap((file) =>
      looksBundled(readFileSync(file, 'utf8')).map((sign) => `${file.slice(dist.length + 1)}: ${sign}`),
    );
    expect(offending).toEqual([]);
  });

  it('the bundled-rxjs check recognises rxjs code (the check can fail)', () => {
    const require = createRequire(import.meta.url);
    const rxjsRoot = dirname(require.resolve('rxjs/package.json'));
    for (const file of [
      'dist/esm/internal/Subscriber.js',
      'dist/esm/internal/testing/TestScheduler.js',
      'dist/cjs/internal/Observable.js',
    ]) {
      expect(looksBundled(readFileSync(join(rxjsRoot, file), 'utf8')), file).not.toEqual([]);
    }
  });

  it('the core files import no node: built-ins and depend only on rxjs, the canonical JSON and the hash', () => {
    const files = coreFiles();
    expect(files.length).toBeGreaterThanOrEqual(entryFiles.length);
    const builtins = new Set(builtinModules);
    const external = new Set<string>();
    for (const file of files) {
      for (const spec of specifiers(readFileSync(file, 'utf8'))) {
        if (spec.startsWith('.')) continue;
        expect(
          spec.startsWith('node:') || builtins.has(spec.split('/')[0] as string),
          `${file}: ${spec}`,
        ).toBe(false);
        external.add(spec);
      }
    }
    for (const spec of external) {
      expect(
        ['rxjs', 'rxjs/testing', 'cleanturn'].includes(spec) || spec.startsWith('@noble/hashes/'),
        spec,
      ).toBe(true);
    }
  });
});
