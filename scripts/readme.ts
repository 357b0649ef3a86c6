// Rewrites the marble blocks of README.md from marbles/*.marbles.ts.
//   npx tsx scripts/readme.ts          rewrite README.md
//   npx tsx scripts/readme.ts --check  exit 1 if README.md is stale
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { MarbleSpec } from 'cleanturn/testing';
import { marbleSvgPath } from './marbleSvg.js';
import { renderSpecText } from './marbleText.js';

const root = join(import.meta.dirname, '..');

export async function loadSpecs(): Promise<Map<string, MarbleSpec>> {
  const specs = new Map<string, MarbleSpec>();
  const dir = join(root, 'marbles');
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.marbles.ts'))
    .sort()) {
    const mod = (await import(pathToFileURL(join(dir, file)).href)) as { default: MarbleSpec };
    specs.set(mod.default.name, mod.default);
  }
  return specs;
}

/**
 * Replaces every `<!-- marbles:NAME -->…<!-- /marbles -->` block (or `marbles:NAME:INDEX` for another case than
 * the first) with the spec's rendering: its SVG picture (made by `npm run docs`) above the text diagram.
 */
export function renderReadme(readme: string, specs: Map<string, MarbleSpec>): string {
  return readme.replace(
    /<!-- marbles:(\w+)(?::(\d+))? -->[\s\S]*?<!-- \/marbles -->/g,
    (_, name: string, index?: string) => {
      const spec = specs.get(name);
      if (spec === undefined) throw new Error(`README names a marble spec that does not exist: ${name}`);
      const tag = index === undefined ? name : `${name}:${index}`;
      const which = Number(index ?? 0);
      return `<!-- marbles:${tag} -->\n${renderSpecText(spec, which, marbleSvgPath(name, which))}\n<!-- /marbles -->`;
    },
  );
}

if (process.argv[1] === import.meta.filename) {
  const path = join(root, 'README.md');
  const current = readFileSync(path, 'utf8');
  const next = renderReadme(current, await loadSpecs());
  if (process.argv.includes('--check')) {
    if (next !== current) {
      console.error('README.md is stale: run npm run docs:readme');
      process.exit(1);
    }
  } else if (next !== current) {
    writeFileSync(path, next);
    console.log('README.md: marble blocks rewritten');
  }
}
