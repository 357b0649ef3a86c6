// Rewrites the generated blocks of README.md and of the guides (docs/guides/*.md):
//   <!-- marbles:NAME --> … <!-- /marbles -->  a case of marbles/NAME.marbles.ts: its picture and text diagram
//   <!-- exports --> … <!-- /exports -->       the table of entry points, from package.json "exports"
//   npx tsx scripts/readme.ts          rewrite what is stale
//   npx tsx scripts/readme.ts --check  exit 1 if anything is stale or an export is documented nowhere
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { MarbleSpec } from '../src/testing/marbles.js';
import { type PackageExport, packageExports, renderEntryTable, rewriteEntryTable } from './entryPoints.js';
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

/** The documents with generated blocks, relative to the root: README.md, then the guides in name order. */
export function documentPaths(base = root): string[] {
  const dir = join(base, 'docs/guides');
  const guides = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.md'))
        .sort()
        .map((f) => `docs/guides/${f}`)
    : [];
  return ['README.md', ...guides];
}

/**
 * Replaces every `<!-- marbles:NAME -->…<!-- /marbles -->` block (or `marbles:NAME:INDEX` for another case than
 * the first) with the spec's rendering: its SVG picture (made by `npm run docs`) above the text diagram. `path` is
 * the document's path from the root, so that the picture's link is relative to the document.
 */
export function renderMarbleBlocks(
  markdown: string,
  specs: Map<string, MarbleSpec>,
  path = 'README.md',
): string {
  const from = posix.dirname(path);
  return markdown.replace(
    /<!-- marbles:(\w+)(?::(\d+))? -->[\s\S]*?<!-- \/marbles -->/g,
    (_, name: string, index?: string) => {
      const spec = specs.get(name);
      if (spec === undefined) throw new Error(`${path} names a marble spec that does not exist: ${name}`);
      const tag = index === undefined ? name : `${name}:${index}`;
      const which = Number(index ?? 0);
      const picture = posix.relative(from, marbleSvgPath(name, which));
      return `<!-- marbles:${tag} -->\n${renderSpecText(spec, which, picture)}\n<!-- /marbles -->`;
    },
  );
}

/** The marble blocks of README.md. */
export function renderReadme(readme: string, specs: Map<string, MarbleSpec>): string {
  return renderMarbleBlocks(readme, specs, 'README.md');
}

/** A document as it is and as it should be. */
export interface RenderedDocument {
  path: string;
  current: string;
  next: string;
}

/** What the generated blocks of every document should be, and the exports no page or guide documents. */
export function renderDocuments(
  specs: Map<string, MarbleSpec>,
  base = root,
): { documents: RenderedDocument[]; undocumented: PackageExport[] } {
  const paths = documentPaths(base);
  const texts = new Map(paths.map((p) => [p, readFileSync(join(base, p), 'utf8')]));
  const guides = new Map([...texts].filter(([p]) => p.startsWith('docs/guides/')));
  const { table, undocumented } = renderEntryTable(packageExports(base), new Set(specs.keys()), guides);
  const documents = paths.map((path) => {
    const current = texts.get(path) ?? '';
    return { path, current, next: rewriteEntryTable(renderMarbleBlocks(current, specs, path), table) };
  });
  return { documents, undocumented };
}

if (process.argv[1] === import.meta.filename) {
  const { documents, undocumented } = renderDocuments(await loadSpecs());
  const stale = documents.filter((d) => d.next !== d.current);
  for (const row of undocumented)
    console.error(`${row.entry} exports ${row.name}, which no operator page or guide documents`);
  if (process.argv.includes('--check')) {
    for (const d of stale) console.error(`${d.path} is stale: run npm run docs:readme`);
    if (stale.length > 0 || undocumented.length > 0) process.exit(1);
  } else {
    for (const d of stale) {
      writeFileSync(join(root, d.path), d.next);
      console.log(`${d.path}: generated blocks rewritten`);
    }
    if (undocumented.length > 0) process.exit(1);
  }
}
