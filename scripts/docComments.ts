// Reads the doc comments of the package's exports from the sources, without type-checking: each entry point
// (the `cleanturn*` paths of tsconfig.json) is parsed, its `export … from` lines are followed to the file
// that declares the name, and the JSDoc of that declaration is read. Fast (a few files are parsed) and
// enough for the barrels of this package, which list their exports explicitly.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

/** A package entry point: the specifier users import and the source file it maps to. */
export interface PackageEntry {
  /** `cleanturn`, `cleanturn/providers`, … */
  specifier: string;
  /** The source file, absolute. */
  file: string;
}

/** The doc comment of one export. */
export interface DocComment {
  name: string;
  /** The entry point that exports it (the first one, in the order of tsconfig.json). */
  entry: string;
  /** The file that declares it, relative to the root. */
  file: string;
  /** The comment's text without its tags. */
  text: string;
}

/** The package entry points, from the `paths` of tsconfig.json (the same map the tests and the docs use). */
export function packageEntries(root: string): PackageEntry[] {
  const path = join(root, 'tsconfig.json');
  const config = ts.readConfigFile(path, ts.sys.readFile);
  if (config.error !== undefined)
    throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, '\n'));
  const paths = (config.config as { compilerOptions?: { paths?: Record<string, string[]> } }).compilerOptions
    ?.paths;
  return Object.entries(paths ?? {})
    .filter(([specifier]) => specifier === 'cleanturn' || specifier.startsWith('cleanturn/'))
    .map(([specifier, [target]]) => ({ specifier, file: resolve(root, target ?? '') }));
}

/** The files parsed by the current {@link findDocComments} call. */
const parsed = new Map<string, ts.SourceFile>();

function parse(file: string): ts.SourceFile {
  let source = parsed.get(file);
  if (source === undefined) {
    source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    parsed.set(file, source);
  }
  return source;
}

/** The source file a relative specifier such as `./bufferUntilFinish.js` names. */
function resolveModule(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = resolve(dirname(from), specifier);
  const candidates = [base.replace(/\.(m|c)?js$/, '.$1ts'), `${base}.ts`, join(base, 'index.ts'), base];
  return candidates.find((c) => c.endsWith('.ts') && existsSync(c));
}

/** The name a declaration statement declares, if it is one that can carry a doc comment. */
function declaredNames(statement: ts.Statement): { names: string[]; node: ts.Node } | undefined {
  if (
    (ts.isFunctionDeclaration(statement) ||
      ts.isClassDeclaration(statement) ||
      ts.isInterfaceDeclaration(statement) ||
      ts.isTypeAliasDeclaration(statement) ||
      ts.isEnumDeclaration(statement)) &&
    statement.name !== undefined
  ) {
    return { names: [statement.name.text], node: statement };
  }
  if (ts.isVariableStatement(statement)) {
    const names = statement.declarationList.declarations.flatMap((d) =>
      ts.isIdentifier(d.name) ? [d.name.text] : [],
    );
    return { names, node: statement.declarationList.declarations[0] ?? statement };
  }
  return undefined;
}

function commentOf(node: ts.Node): string | undefined {
  const docs = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc);
  const last = docs[docs.length - 1];
  if (last === undefined) return undefined;
  return ts.getTextOfJSDocComment(last.comment)?.trim();
}

/** Finds where `name` is declared, following `export … from` in `file`; depth-limited against cycles. */
function findDeclaration(file: string, name: string, depth = 0): { file: string; node: ts.Node } | undefined {
  if (depth > 8) return undefined;
  const source = parse(file);
  for (const statement of source.statements) {
    const declared = declaredNames(statement);
    // The first declaration that has a comment wins (overloads: the first signature).
    if (declared?.names.includes(name) && commentOf(declared.node) !== undefined)
      return { file, node: declared.node };
  }
  for (const statement of source.statements) {
    if (!ts.isExportDeclaration(statement)) continue;
    const from = statement.moduleSpecifier;
    const target =
      from !== undefined && ts.isStringLiteral(from) ? resolveModule(file, from.text) : undefined;
    const clause = statement.exportClause;
    if (clause === undefined) {
      // export * from './x.js'
      const found = target === undefined ? undefined : findDeclaration(target, name, depth + 1);
      if (found !== undefined) return found;
      continue;
    }
    if (!ts.isNamedExports(clause)) continue;
    for (const element of clause.elements) {
      if (element.name.text !== name) continue;
      const local = element.propertyName?.text ?? element.name.text;
      const found =
        target === undefined
          ? findDeclaration(file, local, depth + 1)
          : findDeclaration(target, local, depth + 1);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** The doc comments of `names`, for those that an entry point exports and that have one. */
export function findDocComments(root: string, names: readonly string[]): Map<string, DocComment> {
  parsed.clear(); // sources may have changed since the last call (watch mode)
  const entries = packageEntries(root).filter((e) => existsSync(e.file));
  const found = new Map<string, DocComment>();
  for (const name of names) {
    for (const entry of entries) {
      const declaration = findDeclaration(entry.file, name);
      const text = declaration === undefined ? undefined : commentOf(declaration.node);
      if (declaration === undefined || text === undefined) continue;
      found.set(name, {
        name,
        entry: entry.specifier,
        file: relative(root, declaration.file).split(sep).join('/'),
        text,
      });
      break;
    }
  }
  return found;
}
