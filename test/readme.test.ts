// README.md is the front page and the guides (docs/guides/*.md) hold the rest. Their generated blocks (marble
// diagrams from marbles/, the table of entry points from package.json "exports") must be current
// (`npm run docs:readme` rewrites them), every export must be in the table and documented somewhere, every
// relative link must lead to a file and a heading that exist, and the README must stay a front page.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  markdownSections,
  type PackageExport,
  packageExports,
  renderEntryTable,
  tableExports,
} from '../scripts/entryPoints.js';
import { documentPaths, loadSpecs, type RenderedDocument, renderDocuments } from '../scripts/readme.js';
import type { MarbleSpec } from '../src/testing/marbles.js';

const readme = () => readFileSync('README.md', 'utf8');

let specs: Map<string, MarbleSpec>;
let rendered: { documents: RenderedDocument[]; undocumented: PackageExport[] };
let exports: PackageExport[];
beforeAll(async () => {
  specs = await loadSpecs();
  rendered = renderDocuments(specs);
  exports = packageExports(process.cwd());
}, 60_000);

describe('generated blocks', () => {
  for (const path of documentPaths()) {
    it(`${path}: diagrams and tables are the current renderings (run npm run docs:readme)`, () => {
      const document = rendered.documents.find((d) => d.path === path);
      expect(document?.next).toBe(document?.current);
    });
  }

  it('every marble diagram is generated: none is drawn by hand outside a marbles block', () => {
    const handDrawn: string[] = [];
    for (const path of documentPaths()) {
      const outside = readFileSync(path, 'utf8').replace(/<!-- marbles:[\s\S]*?<!-- \/marbles -->/g, '');
      for (const block of outside.matchAll(/```text\n([\s\S]*?)```/g)) {
        if (/^source( \d+)?: /m.test(block[1] ?? '') && /^result: /m.test(block[1] ?? ''))
          handDrawn.push(`${path}: ${(block[1] ?? '').split('\n')[0]}`);
      }
    }
    expect(handDrawn).toEqual([]);
  });
});

describe('the table of entry points', () => {
  it('lists every runtime export of every entry point of package.json', () => {
    const listed = new Set(tableExports(readme()));
    const missing = exports.map((e) => `${e.entry} ${e.name}`).filter((e) => !listed.has(e));
    expect(exports.length).toBeGreaterThan(50);
    expect(missing).toEqual([]);
  });

  it('lists nothing that is not exported', () => {
    const exported = new Set(exports.map((e) => `${e.entry} ${e.name}`));
    expect(tableExports(readme()).filter((e) => !exported.has(e))).toEqual([]);
  });

  it('links every export to its operator page or to the guide section that documents it', () => {
    expect(rendered.undocumented.map((e) => `${e.entry} ${e.name}`)).toEqual([]);
  });

  it('reports an export missing from the table, and one that nothing documents', () => {
    const extra: PackageExport = { entry: 'cleanturn', name: 'undocumentedThing', kind: 'function' };
    const guides = new Map(
      documentPaths()
        .filter((p) => p.startsWith('docs/guides/'))
        .map((p) => [p, readFileSync(p, 'utf8')] as const),
    );
    const { table, undocumented } = renderEntryTable([...exports, extra], new Set(specs.keys()), guides);
    expect(undocumented).toEqual([extra]);
    expect(tableExports(`<!-- exports -->\n${table}\n<!-- /exports -->`)).toContain(
      'cleanturn undocumentedThing',
    );
    expect(tableExports(readme())).not.toContain('cleanturn undocumentedThing');
  });
});

describe('links', () => {
  /** `[text](target)` links outside fenced code, with the line they are on. */
  const linksOf = (markdown: string) => {
    const links: { line: number; target: string }[] = [];
    let fence = false;
    markdown.split('\n').forEach((line, i) => {
      if (/^ {0,3}(```|~~~)/.test(line)) fence = !fence;
      if (fence) return;
      for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g))
        links.push({ line: i + 1, target: m[1] ?? '' });
    });
    return links;
  };

  for (const path of documentPaths()) {
    it(`${path}: every relative link leads to a file, and every anchor to a heading`, () => {
      const broken: string[] = [];
      for (const { line, target } of linksOf(readFileSync(path, 'utf8'))) {
        if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
        const [file = '', anchor] = target.split('#');
        const resolved = file === '' ? path : normalize(join(dirname(path), file));
        if (!existsSync(resolved)) {
          broken.push(`${path}:${line}: ${target} (no ${resolved})`);
          continue;
        }
        if (anchor === undefined) continue;
        const anchors = statSync(resolved).isFile()
          ? markdownSections(readFileSync(resolved, 'utf8')).map((s) => s.anchor)
          : [];
        if (!anchors.includes(anchor)) broken.push(`${path}:${line}: ${target} (no heading #${anchor})`);
      }
      expect(broken).toEqual([]);
    });
  }
});

describe('README.md', () => {
  it('opens with the two set-up commands', () => {
    const text = readme();
    const firstBlock = text.slice(text.indexOf('```sh'), text.indexOf('```', text.indexOf('```sh') + 5));
    expect(firstBlock).toContain('npm ci && npm run demo');
    expect(firstBlock).toContain('npm test');
  });

  it('is a front page: at most 25 KB, the rest is in the guides', () => {
    expect(Buffer.byteLength(readme(), 'utf8')).toBeLessThanOrEqual(25_000);
  });

  it('links to every guide', () => {
    const guides = documentPaths().filter((p) => p.startsWith('docs/guides/'));
    expect(guides.length).toBeGreaterThan(0);
    expect(guides.filter((g) => !readme().includes(`](${g})`))).toEqual([]);
  });
});
