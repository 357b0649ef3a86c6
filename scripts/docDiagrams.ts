// Rewrites the marble diagram in the doc comment of every operator that has a spec in marbles/: the first
// `text` block of the comment becomes the rendering of the spec's first case (the same text the operator's
// page shows), followed by a pointer to the page with every case and its picture. A diagram in a doc comment is
// then one that TestScheduler runs, never a hand-drawn copy.
//   npx tsx scripts/docDiagrams.ts          rewrite the sources
//   npx tsx scripts/docDiagrams.ts --check  exit 1 if a doc comment is stale
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { MarbleSpec } from '../src/testing/marbles.js';
import { renderCaseText } from './marbleText.js';
import { loadSpecs } from './readme.js';

const root = join(import.meta.dirname, '..');

/** The TypeScript files under `dir`, recursively. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** The doc comment block of `name`'s diagram, as it should read. */
function diagramLines(spec: MarbleSpec): string[] {
  const first = spec.cases[0];
  if (first === undefined) throw new Error(`${spec.name} has no case`);
  const body = renderCaseText(first)
    .split('\n')
    .map((line) => (line === '' ? ' *' : ` * ${line}`));
  return [
    ' * ```text',
    ...body,
    ' * ```',
    ' *',
    ` * Every case of \`marbles/${spec.name}.marbles.ts\`, with pictures: \`docs/operators/${spec.name}.md\`.`,
  ];
}

/**
 * `source` with the diagram of each function that has a spec rewritten: the first ```` ```text ```` block of the
 * doc comment right before `export function <name>`, and the pointer to the operator's page after it, if any.
 */
export function renderDocDiagrams(source: string, specs: Map<string, MarbleSpec>): string {
  const lines = source.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const declared = /^export function (\w+)\b/.exec(lines[i] ?? '');
    const spec = declared === null ? undefined : specs.get(declared[1] as string);
    if (spec === undefined) continue;
    // The doc comment ends on the line before the declaration (overloads: the first declaration carries it).
    let end = i - 1;
    if ((lines[end] ?? '').trim() !== '*/') continue;
    let start = end;
    while (start > 0 && !(lines[start] ?? '').trimStart().startsWith('/**')) start--;
    const open = lines.findIndex((l, k) => k > start && k < end && l === ' * ```text');
    if (open === -1) continue;
    const close = lines.findIndex((l, k) => k > open && k < end && l === ' * ```');
    if (close === -1) throw new Error(`${spec.name}: an unclosed text block in its doc comment`);
    const pointer =
      lines[close + 1] === ' *' && (lines[close + 2] ?? '').startsWith(' * Every case of `marbles/') ? 2 : 0;
    const next = diagramLines(spec);
    lines.splice(open, close - open + 1 + pointer, ...next);
    end += next.length - (close - open + 1 + pointer);
    i = end + 1;
  }
  return lines.join('\n');
}

/** The source files whose doc comment diagrams are stale, each with its rewritten text. */
export async function staleDocDiagrams(): Promise<{ file: string; next: string }[]> {
  const specs = await loadSpecs();
  const stale: { file: string; next: string }[] = [];
  for (const file of sourceFiles(join(root, 'src'))) {
    const current = readFileSync(file, 'utf8');
    const next = renderDocDiagrams(current, specs);
    if (next !== current) stale.push({ file: relative(root, file), next });
  }
  return stale;
}

if (process.argv[1] === import.meta.filename) {
  const stale = await staleDocDiagrams();
  if (process.argv.includes('--check')) {
    for (const { file } of stale) console.error(`${file}: a doc comment diagram is stale (npm run docs)`);
    if (stale.length > 0) process.exit(1);
  } else {
    for (const { file, next } of stale) writeFileSync(join(root, file), next);
    console.log(`doc comment diagrams: ${stale.length} file(s) rewritten`);
  }
}
