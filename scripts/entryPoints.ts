// The table of entry points in README.md: one row per runtime export of each entry point of package.json
// "exports", linked to the export's page (docs/operators/<name>.md, for operators and policies that have a marble
// spec) or else to the section of a guide (docs/guides/*.md) that documents it. The exports are read with the
// TypeScript checker from the sources the entry points build from (the `cleanturn*` paths of tsconfig.json).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { packageEntries } from './docComments.js';

/** What an export is, as the table says it. */
export type ExportKind = 'operator' | 'function' | 'class' | 'error' | 'constant';
const kindOrder: readonly ExportKind[] = ['operator', 'function', 'class', 'error', 'constant'];

/** One runtime export of one entry point. */
export interface PackageExport {
  /** `cleanturn`, `cleanturn/providers`, … */
  entry: string;
  name: string;
  kind: ExportKind;
}

/** The specifiers of package.json "exports", in its order (`./package.json` left out). */
export function exportedEntries(root: string): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    name: string;
    exports?: Record<string, unknown>;
  };
  return Object.keys(pkg.exports ?? { '.': null })
    .filter((key) => key !== './package.json')
    .map((key) => (key === '.' ? pkg.name : `${pkg.name}/${key.replace(/^\.\//, '')}`));
}

function isTypeOnlyAlias(symbol: ts.Symbol): boolean {
  return (symbol.declarations ?? []).some(
    (d) => ts.isExportSpecifier(d) && (d.isTypeOnly || d.parent.parent.isTypeOnly),
  );
}

function extendsError(type: ts.Type, checker: ts.TypeChecker, depth = 0): boolean {
  if (depth > 10 || !(type.flags & ts.TypeFlags.Object)) return false;
  if (type.getSymbol()?.getName() === 'Error') return true;
  const bases =
    (type as ts.InterfaceType).objectFlags & ts.ObjectFlags.ClassOrInterface
      ? checker.getBaseTypes(type as ts.InterfaceType)
      : [];
  return bases.some((base) => extendsError(base, checker, depth + 1));
}

function kindOf(symbol: ts.Symbol, checker: ts.TypeChecker): ExportKind {
  if (symbol.flags & ts.SymbolFlags.Class)
    return extendsError(checker.getDeclaredTypeOfSymbol(symbol), checker) ? 'error' : 'class';
  const declaration = symbol.valueDeclaration ?? symbol.declarations?.[0];
  if (declaration === undefined) return 'constant';
  const signatures = checker.getTypeOfSymbolAtLocation(symbol, declaration).getCallSignatures();
  if (signatures.length === 0) return 'constant';
  const returns = signatures.map((s) => checker.getReturnTypeOfSignature(s));
  const operator = returns.every((r) =>
    /^(MonoType)?OperatorFunction\b/.test(r.aliasSymbol?.getName() ?? checker.typeToString(r)),
  );
  return operator ? 'operator' : 'function';
}

/** The runtime exports (functions, classes, constants; not types) of every entry point, in package.json order. */
export function packageExports(root: string): PackageExport[] {
  const files = new Map(packageEntries(root).map((e) => [e.specifier, e.file]));
  const entries = exportedEntries(root);
  const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  });
  if (config === undefined) throw new Error('tsconfig.json could not be read');
  const missing = entries.filter((e) => !files.has(e));
  if (missing.length > 0)
    throw new Error(`package.json exports entries that tsconfig.json does not map: ${missing.join(', ')}`);
  const program = ts.createProgram({
    rootNames: entries.map((e) => files.get(e) as string),
    options: { ...config.options, noEmit: true },
  });
  const checker = program.getTypeChecker();
  const rows: PackageExport[] = [];
  for (const entry of entries) {
    const source = program.getSourceFile(files.get(entry) as string);
    const module = source === undefined ? undefined : checker.getSymbolAtLocation(source);
    if (module === undefined) throw new Error(`${entry}: its source has no exports`);
    const found: PackageExport[] = [];
    for (const symbol of checker.getExportsOfModule(module)) {
      if (isTypeOnlyAlias(symbol)) continue;
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      if (!(target.flags & ts.SymbolFlags.Value)) continue;
      found.push({ entry, name: symbol.getName(), kind: kindOf(target, checker) });
    }
    const byName = (a: PackageExport, b: PackageExport) => {
      const [x, y] = [a.name.toLowerCase(), b.name.toLowerCase()];
      return x < y ? -1 : x > y ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    };
    rows.push(...found.sort((a, b) => kindOrder.indexOf(a.kind) - kindOrder.indexOf(b.kind) || byName(a, b)));
  }
  return rows;
}

/** GitHub's anchor of a heading: its text lower-cased, punctuation dropped, spaces as hyphens. */
export function headingSlug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** One section of a Markdown document: its heading and its prose (fenced code left out). */
export interface Section {
  heading: string;
  /** The heading's anchor, numbered as GitHub numbers repeated headings (`-1`, `-2`…). */
  anchor: string;
  prose: string;
}

/** The sections of a Markdown document, headings inside fenced code ignored. */
export function markdownSections(markdown: string): Section[] {
  const sections: Section[] = [{ heading: '', anchor: '', prose: '' }];
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker !== undefined && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const slug = headingSlug(heading);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      sections.push({ heading, anchor: count === 0 ? slug : `${slug}-${count}`, prose: '' });
    } else {
      const last = sections[sections.length - 1] as Section;
      last.prose += `${line}\n`;
    }
  }
  return sections;
}

/** The guides an entry point's exports are looked for in, most likely first (others: every guide). */
const guidesByEntry: Readonly<Record<string, readonly string[]>> = {
  cleanturn: ['pipeline', 'effects', 'providers', 'transport', 'renderers'],
  'cleanturn/providers': ['providers'],
  'cleanturn/transport': ['transport'],
  'cleanturn/transport/redis': ['transport'],
  'cleanturn/effects': ['effects'],
  'cleanturn/effects/sqlite': ['effects'],
  'cleanturn/effects/redis': ['effects'],
  'cleanturn/effects/postgres': ['effects'],
  'cleanturn/testing': ['testing'],
  'cleanturn/renderers': ['renderers'],
  'cleanturn/acp': ['renderers'],
  'cleanturn/otel': ['observability'],
  'cleanturn/angular': ['angular'],
};

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Where an export is documented: its operator page when it has a marble spec, else the first section of the
 * entry's guides whose heading names it (`name`, `name(…)`, as a word of its own: headings hold no code), else (for an error class) the
 * first section about errors whose prose names it, else the first section whose prose does.
 * Paths are relative to the root; `guides` maps `docs/guides/<name>.md` to its text.
 */
export function exportLink(
  row: PackageExport,
  specs: ReadonlySet<string>,
  guides: ReadonlyMap<string, string>,
): string | undefined {
  if (specs.has(row.name)) return `docs/operators/${row.name}.md`;
  const preferred = guidesByEntry[row.entry]?.map((g) => `docs/guides/${g}.md`) ?? [...guides.keys()].sort();
  const named = new RegExp(`\`(?:new\\s+)?${escapeRegExp(row.name)}(?![\\w$])[^\`]*\``);
  const inHeading = new RegExp(`(?<![\\w$/.@'-])${escapeRegExp(row.name)}(?![\\w$/'-])`);
  const sections = preferred.flatMap((path) =>
    markdownSections(guides.get(path) ?? '').map((section) => ({ path, section })),
  );
  const errors = /\berrors?\b/i;
  const found =
    sections.find(({ section }) => inHeading.test(section.heading)) ??
    (row.kind === 'error'
      ? sections.find(({ section }) => errors.test(section.heading) && named.test(section.prose))
      : undefined) ??
    sections.find(({ section }) => named.test(section.prose));
  if (found === undefined) return undefined;
  return found.section.anchor === '' ? found.path : `${found.path}#${found.section.anchor}`;
}

/** The rendered table, and the exports that no page or guide documents (they are listed without a link). */
export function renderEntryTable(
  rows: readonly PackageExport[],
  specs: ReadonlySet<string>,
  guides: ReadonlyMap<string, string>,
): { table: string; undocumented: PackageExport[] } {
  const undocumented: PackageExport[] = [];
  const lines = ['| entry point | kind | exports |', '| --- | --- | --- |'];
  // One line per run of exports of one entry point and one kind: the names, comma-separated, in export order.
  let entry: string | undefined;
  let kind: string | undefined;
  let names: string[] = [];
  let shown: string | undefined;
  const push = (): void => {
    if (names.length === 0) return;
    const cell = entry === shown ? '' : `\`${entry}\``;
    lines.push(`| ${cell} | ${kind} | ${names.join(', ')} |`);
    shown = entry;
    names = [];
  };
  // Links by reference, one definition per page or section under the table: most exports share a section (the
  // errors of an entry point, the testing guide), and the README stays a front page.
  const labels = new Map<string, number>();
  for (const row of rows) {
    const link = exportLink(row, specs, guides);
    if (link === undefined) undocumented.push(row);
    if (row.entry !== entry || row.kind !== kind) push();
    entry = row.entry;
    kind = row.kind;
    if (link !== undefined && !labels.has(link)) labels.set(link, labels.size + 1);
    names.push(link === undefined ? `\`${row.name}\`` : `[\`${row.name}\`][${labels.get(link)}]`);
  }
  push();
  const definitions = [...labels].map(([link, label]) => `[${label}]: ${link}`);
  return { table: [...lines, '', ...definitions].join('\n'), undocumented };
}

const tableBlock = /<!-- exports -->[\s\S]*?<!-- \/exports -->/;

/** Replaces the `<!-- exports -->…<!-- /exports -->` block of a document with `table`. */
export function rewriteEntryTable(markdown: string, table: string): string {
  return markdown.replace(tableBlock, `<!-- exports -->\n${table}\n<!-- /exports -->`);
}

/** The exports a document's table lists, as `entry name`. */
export function tableExports(markdown: string): string[] {
  const block = tableBlock.exec(markdown)?.[0] ?? '';
  const listed: string[] = [];
  let entry = '';
  for (const line of block.split('\n')) {
    const cells = /^\|([^|]*)\|([^|]*)\|([^|]*)\|/.exec(line);
    if (cells === null) continue;
    const names = [...(cells[3] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
    if (names.length === 0) continue;
    entry = /`([^`]+)`/.exec(cells[1] ?? '')?.[1] ?? entry;
    for (const name of names) listed.push(`${entry} ${name}`);
  }
  return listed;
}
