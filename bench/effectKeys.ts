// Item 4: effect keys per second, in Node (native hash, and the portable one for comparison) and in a
// browser build of the core run in headless Chromium.

import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import type * as Core from 'cleanturn';
import stringify from 'fast-json-stable-stringify';
import { chromium } from 'playwright-core';
import { build } from 'tsup';
import { sha256Hex16Portable } from '../src/internal/sha256.js';
import type { BrowserKeyResult } from './browser/page.js';
import { compare, type Measured, pick } from './harness.js';

const sampleCall = { name: 'issue_refund', args: { order_id: 'ORD-7781', amount: 'full' } } as const;
const BATCH = 20_000;

export const chromiumPath = '/usr/bin/chromium';

export interface EffectKeyResult {
  node: Measured;
  nodePortable: Measured;
  nodeKeysPerSecond: number;
  nodePortableKeysPerSecond: number;
  browser: (BrowserKeyResult & { bundleBytes: number; nodeBuiltins: string[] }) | { skipped: string };
}

/** The effect key as browsers compute it (canonical JSON, then the portable SHA-256), run in Node. */
function portableKey(turnId: string, call: { name: string; args: unknown }): string {
  return sha256Hex16Portable(stringify([turnId, call.name, call.args]));
}

const bundleDir = fileURLToPath(new URL('../node_modules/.cache/cleanturn-bench-browser/', import.meta.url));

/** Bundles bench/browser/page.ts (the whole core, rxjs, the hash) for the browser, as one IIFE. */
async function browserBundle(): Promise<string> {
  await build({
    entry: { page: fileURLToPath(new URL('./browser/page.ts', import.meta.url)) },
    format: ['iife'],
    platform: 'browser',
    target: 'es2022',
    outDir: bundleDir,
    // Everything is bundled: a Node built-in anywhere in the core fails the browser build.
    noExternal: [/.*/],
    dts: false,
    sourcemap: false,
    clean: true,
    silent: true,
    minify: true,
    tsconfig: fileURLToPath(new URL('./tsconfig.json', import.meta.url)),
  });
  return readFileSync(`${bundleDir}page.global.js`, 'utf8');
}

async function inChromium(): Promise<EffectKeyResult['browser']> {
  if (!existsSync(chromiumPath)) return { skipped: `${chromiumPath} not found` };
  const bundle = await browserBundle();
  // The build fails on a Node built-in that is imported; this also catches one required at run time. (The
  // string 'node:crypto' handed to `process.getBuiltinModule` is neither: it is looked up only on Node.)
  const nodeBuiltins = [
    ...new Set(
      Array.from(
        bundle.matchAll(/(?:require\s*\(\s*|import\s*\(\s*|from\s*)["']((?:node:)?[a-z_/]+)["']/g),
        (m) => m[1] as string,
      ).filter((name) => name.startsWith('node:') || builtinModules.includes(name)),
    ),
  ];
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
    ],
  });
  try {
    const page = await browser.newPage();
    await page.addScriptTag({ content: bundle });
    const result = await page.evaluate(
      ([batch, rounds]) =>
        (
          globalThis as unknown as {
            cleanturnBench: { measure: (batch: number, rounds: number) => BrowserKeyResult };
          }
        ).cleanturnBench.measure(batch, rounds),
      [BATCH, 9] as const,
    );
    return { ...result, bundleBytes: bundle.length, nodeBuiltins };
  } finally {
    await browser.close();
  }
}

export async function benchEffectKeys(
  core: typeof Core,
  options: { quick: boolean },
): Promise<EffectKeyResult> {
  const { effectKey } = core;
  // Both Node paths give the same key as the spec (checked by the tests on many inputs; here on a sample).
  if (effectKey('turn-42', sampleCall) !== portableKey('turn-42', sampleCall)) {
    throw new Error('effect keys: the native and the portable hash disagree');
  }
  let sink = 0;
  const results = await compare(
    [
      {
        name: 'effectKey (Node, native hash)',
        fn: () => {
          for (let i = 0; i < BATCH; i++) sink += effectKey(`turn-${i & 1023}`, sampleCall).length;
        },
      },
      {
        name: 'effectKey (Node, portable hash)',
        fn: () => {
          for (let i = 0; i < BATCH; i++) sink += portableKey(`turn-${i & 1023}`, sampleCall).length;
        },
      },
    ],
    { rounds: options.quick ? 1 : 3, iterations: options.quick ? 5 : 10, warmup: 5 },
  );
  if (sink === 0) throw new Error('no keys');
  const node = pick(results, 'effectKey (Node, native hash)');
  const nodePortable = pick(results, 'effectKey (Node, portable hash)');
  const browser = await inChromium();
  if ('sample' in browser && browser.sample !== effectKey('turn-42', sampleCall)) {
    throw new Error(
      `effect keys: Chromium computed ${browser.sample}, Node ${effectKey('turn-42', sampleCall)}`,
    );
  }
  return {
    node,
    nodePortable,
    nodeKeysPerSecond: (BATCH / node.median) * 1000,
    nodePortableKeysPerSecond: (BATCH / nodePortable.median) * 1000,
    browser,
  };
}

export function printEffectKeys(r: EffectKeyResult): void {
  console.log(
    `  Node, native SHA-256:        ${(r.nodeKeysPerSecond / 1000).toFixed(0).padStart(6)} k keys/s (target ≥ 300 k)`,
  );
  console.log(
    `  Node, portable (@noble):     ${(r.nodePortableKeysPerSecond / 1000).toFixed(0).padStart(6)} k keys/s`,
  );
  if ('skipped' in r.browser) console.log(`  Chromium: skipped (${r.browser.skipped})`);
  else {
    console.log(
      `  Chromium (headless), bundle: ${(r.browser.keysPerSecond / 1000).toFixed(0).padStart(6)} k keys/s; same key as Node; ` +
        `bundle ${(r.browser.bundleBytes / 1024).toFixed(0)} KiB, Node built-ins in it: ${r.browser.nodeBuiltins.length === 0 ? 'none' : r.browser.nodeBuiltins.join(', ')}`,
    );
  }
}

// Run alone: npx tsx bench/effectKeys.ts
if (import.meta.url === `file://${process.argv[1]}`) {
  const { loadPackage } = await import('./build.js');
  const { core } = await loadPackage();
  printEffectKeys(await benchEffectKeys(core, { quick: process.argv.includes('--quick') }));
}
