// Compiles (and, where marked, runs) the TypeScript code blocks of a Markdown file against the package's
// sources. The convention is documented in test/readme-code.test.ts, which uses this on README.md and on every
// guide (docs/guides/*.md); test/readme-loopback.test.ts runs the blocks that make requests.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import ts from 'typescript';
import { packageEntries } from './docComments.js';

const defaultRoot = join(import.meta.dirname, '..');

/**
 * The markers a block may carry, as an HTML comment on the line(s) right before its fence: `run` (executed
 * offline), `no-run` (compiled only), `skip` (not even compiled), `loopback` (executed against a local server
 * that speaks the OpenAI Chat Completions format, at `OPENAI_BASE_URL`).
 */
export type BlockMarker = 'run' | 'no-run' | 'skip' | 'loopback';
const markerNames: readonly BlockMarker[] = ['run', 'no-run', 'skip', 'loopback'];

/** One fenced code block. */
export interface CodeBlock {
  /** The info string's first word (`ts`, `sh`, `text`…), lower case. */
  lang: string;
  /** The line (1-based) of the block's first line of code. */
  line: number;
  code: string;
  markers: ReadonlySet<BlockMarker>;
}

/** The fenced code blocks of a Markdown text, with the markers in the HTML comments right before each. */
export function extractBlocks(markdown: string): CodeBlock[] {
  const lines = markdown.split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i] ?? '');
    if (open === null) continue;
    const fence = open[1] ?? '```';
    const markers = new Set<BlockMarker>();
    for (let j = i - 1; j >= 0; j--) {
      const previous = (lines[j] ?? '').trim();
      if (previous === '') continue;
      const comment = /^<!--\s*([\w-]+)(?::[^>]*)?\s*-->$/.exec(previous);
      if (comment === null) break;
      const name = comment[1] as BlockMarker;
      if (markerNames.includes(name)) markers.add(name);
      else break;
    }
    const start = i + 1;
    let end = start;
    while (
      end < lines.length &&
      !(lines[end] ?? '').trimStart().startsWith(fence[0]?.repeat(fence.length) ?? fence)
    )
      end++;
    blocks.push({
      lang: (open[2] ?? '').toLowerCase(),
      line: start + 1,
      code: lines.slice(start, end).join('\n'),
      markers,
    });
    i = end;
  }
  return blocks;
}

/** The languages that are type-checked; every other block (sh, text, python…) is left alone. */
export const typescriptLanguages: ReadonlySet<string> = new Set(['ts', 'typescript', 'mts']);

/**
 * A synopsis is a block of declarations only (function signatures without bodies, interfaces, types, `const`s
 * without values), such as the signatures of the API section: it is checked as ambient declarations.
 */
export function isSynopsis(code: string): boolean {
  const source = ts.createSourceFile('block.ts', code, ts.ScriptTarget.ES2022, false);
  return (
    source.statements.length > 0 &&
    source.statements.every(
      (s) =>
        (ts.isFunctionDeclaration(s) && s.body === undefined) ||
        ts.isInterfaceDeclaration(s) ||
        ts.isTypeAliasDeclaration(s) ||
        (ts.isVariableStatement(s) &&
          s.declarationList.declarations.every((d) => d.initializer === undefined)),
    )
  );
}

/** The problems found in one block. */
export interface BlockReport {
  block: CodeBlock;
  kind: 'example' | 'synopsis';
  /** Compiler errors and other problems, each as `README.md:LINE: message`. */
  problems: string[];
  /** The block uses a placeholder of the prelude (so it cannot run as it is). */
  usesPlaceholders: boolean;
  /** Modules the block imports. */
  imports: string[];
}

/** Names exported by a module file (syntactically, following `export *`), for the imports of synopses. */
function exportedNames(file: string, seen = new Set<string>()): string[] {
  if (seen.has(file)) return [];
  seen.add(file);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, false);
  const names: string[] = [];
  for (const s of source.statements) {
    if (ts.isExportDeclaration(s)) {
      if (s.exportClause !== undefined && ts.isNamedExports(s.exportClause)) {
        names.push(...s.exportClause.elements.map((e) => e.name.text));
      } else if (
        s.exportClause === undefined &&
        s.moduleSpecifier !== undefined &&
        ts.isStringLiteral(s.moduleSpecifier)
      ) {
        const base = resolve(dirname(file), s.moduleSpecifier.text).replace(/\.(js|d\.ts|ts)$/, '');
        for (const candidate of [
          `${base}.d.ts`,
          `${base}.ts`,
          join(base, 'index.d.ts'),
          join(base, 'index.ts'),
        ]) {
          const found = exportedNames(candidate, seen);
          if (found.length > 0) {
            names.push(...found);
            break;
          }
        }
      }
    } else if (
      (ts.isFunctionDeclaration(s) ||
        ts.isClassDeclaration(s) ||
        ts.isInterfaceDeclaration(s) ||
        ts.isTypeAliasDeclaration(s)) &&
      s.name !== undefined &&
      s.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)
    ) {
      names.push(s.name.text);
    } else if (
      ts.isVariableStatement(s) &&
      s.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)
    ) {
      for (const d of s.declarationList.declarations) if (ts.isIdentifier(d.name)) names.push(d.name.text);
    }
  }
  return names;
}

/** Top-level names a block declares. */
function declaredNames(source: ts.SourceFile): string[] {
  return source.statements.flatMap((s) => {
    if (ts.isVariableStatement(s)) {
      return s.declarationList.declarations.flatMap((d) => (ts.isIdentifier(d.name) ? [d.name.text] : []));
    }
    const name = (s as ts.Statement & { name?: ts.Node }).name;
    return name !== undefined && ts.isIdentifier(name) ? [name.text] : [];
  });
}

/** Names a block uses as types (the left-most identifier of each type reference). */
function referencedTypeNames(source: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isTypeReferenceNode(node) || ts.isExpressionWithTypeArguments(node)) {
      let name: ts.Node = ts.isTypeReferenceNode(node) ? node.typeName : node.expression;
      while (ts.isQualifiedName(name)) name = name.left;
      while (ts.isPropertyAccessExpression(name)) name = name.expression;
      if (ts.isIdentifier(name)) names.add(name.text);
    }
    if (ts.isTypeQueryNode(node)) {
      let name: ts.Node = node.exprName;
      while (ts.isQualifiedName(name)) name = name.left;
      if (ts.isIdentifier(name)) names.add(name.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return names;
}

/** Implicit-any errors, allowed in synopses: `{ initialDelay?; … }` abbreviates a type by leaving it out. */
const implicitAny = new Set([7005, 7006, 7008, 7010, 7011, 7031, 7034]);

interface VirtualFile {
  path: string;
  text: string;
  /** Lines added before the block's code. */
  prefixLines: number;
}

/** Files parsed by earlier checks in this process, by path and language version. */
const parsedFiles = new Map<string, ts.SourceFile>();

/** Options of {@link checkBlocks}. */
export interface CheckOptions {
  /** The repository root (where tsconfig.json is). */
  root?: string;
  /** Declarations of the placeholders the examples use without defining them (a module with `declare global`). */
  prelude: string;
  /** The name shown in messages. */
  fileName?: string;
}

/** Type-checks the TypeScript blocks (those not marked `skip`) in one program; one report per block. */
export function checkBlocks(blocks: readonly CodeBlock[], options: CheckOptions): BlockReport[] {
  const root = options.root ?? defaultRoot;
  const fileName = options.fileName ?? 'README.md';
  const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  });
  if (config === undefined) throw new Error('tsconfig.json could not be read');
  const compilerOptions: ts.CompilerOptions = { ...config.options, noEmit: true };

  // The names synopses may use without importing them: every export of the package entries, then of rxjs.
  const imports = new Map<string, string>();
  const entries = packageEntries(root);
  const rxjsTypes = ts.resolveModuleName('rxjs', join(root, 'index.ts'), compilerOptions, ts.sys)
    .resolvedModule?.resolvedFileName;
  const modules = [...entries.map((e) => [e.specifier, e.file] as const)];
  if (rxjsTypes !== undefined) modules.push(['rxjs', rxjsTypes]);
  for (const [specifier, file] of modules) {
    for (const name of exportedNames(file)) if (!imports.has(name)) imports.set(name, specifier);
  }

  const dir = join(root, '.readme-blocks');
  const preludePath = join(dir, 'prelude.ts');
  const files: VirtualFile[] = [];
  const kinds: ('example' | 'synopsis')[] = [];
  const checked = blocks.filter((b) => typescriptLanguages.has(b.lang) && !b.markers.has('skip'));
  checked.forEach((block, i) => {
    const path = join(dir, `block-${i}-line-${block.line}.ts`);
    if (isSynopsis(block.code)) {
      const source = ts.createSourceFile(path, block.code, ts.ScriptTarget.ES2022, false);
      const declared = new Set(declaredNames(source));
      const bySpecifier = new Map<string, string[]>();
      for (const name of [...referencedTypeNames(source)].sort()) {
        const from = imports.get(name);
        if (from === undefined || declared.has(name)) continue;
        bySpecifier.set(from, [...(bySpecifier.get(from) ?? []), name]);
      }
      const importLine = [...bySpecifier]
        .map(([from, names]) => `import type { ${names.join(', ')} } from '${from}';`)
        .join(' ');
      // One added line: the imports, and an ambient namespace that lets signatures go without bodies.
      files.push({
        path,
        text: `${importLine} declare namespace Synopsis {\n${block.code}\n}\n`,
        prefixLines: 1,
      });
      kinds.push('synopsis');
    } else {
      files.push({ path, text: `${block.code}\nexport {};\n`, prefixLines: 0 });
      kinds.push('example');
    }
  });

  const virtual = new Map<string, string>([
    [preludePath, options.prelude],
    ...files.map((f) => [f.path, f.text] as const),
  ]);
  const host = ts.createCompilerHost(compilerOptions, true);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (path, languageVersion, onError, shouldCreate) => {
    const text = virtual.get(resolve(path));
    if (text !== undefined) return ts.createSourceFile(path, text, languageVersion, true);
    // Libraries are parsed once per process: a second check (the self-tests) reuses them.
    if (!path.includes('/node_modules/')) return getSourceFile(path, languageVersion, onError, shouldCreate);
    const key = `${path}\u0000${JSON.stringify(languageVersion)}`;
    const cached = parsedFiles.get(key);
    if (cached !== undefined) return cached;
    const parsed = getSourceFile(path, languageVersion, onError, shouldCreate);
    if (parsed !== undefined) parsedFiles.set(key, parsed);
    return parsed;
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (path) => virtual.has(resolve(path)) || fileExists(path);
  const readFile = host.readFile.bind(host);
  host.readFile = (path) => virtual.get(resolve(path)) ?? readFile(path);

  const program = ts.createProgram({ rootNames: [...virtual.keys()], options: compilerOptions, host });
  const checker = program.getTypeChecker();
  const preludeFile = program.getSourceFile(preludePath);
  const allExports = new Set(entries.flatMap((e) => exportedNames(e.file)));

  const format = (d: ts.Diagnostic, file: VirtualFile, block: CodeBlock): string => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (d.file === undefined || d.start === undefined) return `${fileName}:${block.line}: ${message}`;
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    if (d.file.fileName !== file.path) return `${fileName}:${block.line}: (in ${d.file.fileName}) ${message}`;
    return `${fileName}:${block.line + line - file.prefixLines}: ${message} (TS${d.code})`;
  };

  const preludeProblems = preludeFile
    ? [...program.getSyntacticDiagnostics(preludeFile), ...program.getSemanticDiagnostics(preludeFile)].map(
        (d) => `prelude: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
      )
    : ['prelude: not compiled'];

  return checked.map((block, i) => {
    const file = files[i] as VirtualFile;
    const kind = kinds[i] ?? 'example';
    const source = program.getSourceFile(file.path);
    if (source === undefined)
      return { block, kind, problems: ['not compiled'], usesPlaceholders: false, imports: [] };
    const diagnostics = [
      ...program.getSyntacticDiagnostics(source),
      ...program.getSemanticDiagnostics(source),
    ].filter((d) => !(kind === 'synopsis' && implicitAny.has(d.code)));
    const problems = [...preludeProblems, ...diagnostics.map((d) => format(d, file, block))];
    if (kind === 'synopsis') {
      // A synopsis documents the package's API: every name it declares must be an export.
      const inner = ts.createSourceFile('block.ts', block.code, ts.ScriptTarget.ES2022, false);
      for (const name of declaredNames(inner)) {
        if (!allExports.has(name))
          problems.push(`${fileName}:${block.line}: \`${name}\` is not exported by the package`);
      }
    }
    let usesPlaceholders = false;
    const visit = (node: ts.Node): void => {
      if (ts.isIdentifier(node)) {
        const declarations = checker.getSymbolAtLocation(node)?.declarations ?? [];
        if (declarations.some((d) => d.getSourceFile() === preludeFile)) usesPlaceholders = true;
      }
      if (!usesPlaceholders) ts.forEachChild(node, visit);
    };
    visit(source);
    const importsOf = source.statements.flatMap((s) =>
      ts.isImportDeclaration(s) && ts.isStringLiteral(s.moduleSpecifier) ? [s.moduleSpecifier.text] : [],
    );
    return { block, kind, problems, usesPlaceholders, imports: importsOf };
  });
}

/** Modules an example may import and still run offline, with nothing but this repository. */
export function runsOffline(report: BlockReport): boolean {
  return (
    report.kind === 'example' &&
    !report.usesPlaceholders &&
    report.imports.every(
      (m) =>
        m === 'cleanturn' ||
        m.startsWith('cleanturn/') ||
        m === 'rxjs' ||
        m.startsWith('rxjs/') ||
        m.startsWith('node:'),
    )
  );
}

/** Options of {@link runBlock}. */
export interface RunOptions {
  /** The repository root. */
  root?: string;
  /** How long the block may run, in milliseconds. Default 20 000. */
  timeout?: number;
  /** Variables added to the child's environment (a server's address, a key). */
  env?: Readonly<Record<string, string>>;
}

/** A block that threw or exited with an error: its exit code (`null` when a timeout killed it) and what it printed. */
export class BlockRunError extends Error {
  constructor(
    message: string,
    readonly exitCode: number | null,
    readonly stdout: string,
    readonly stderr: string,
  ) {
    super(message);
    this.name = 'BlockRunError';
  }
}

/**
 * Runs a block as an ES module in a child Node.js process (with tsx), `cleanturn` and `cleanturn/*` mapped to
 * the sources. Resolves with what it printed; rejects with a {@link BlockRunError} if it throws or exits with an
 * error.
 */
export async function runBlock(block: CodeBlock, options: RunOptions = {}): Promise<string> {
  const { root = defaultRoot, timeout = 20_000, env } = options;
  const entries = new Map(packageEntries(root).map((e) => [e.specifier, e.file]));
  const source = ts.createSourceFile('block.ts', block.code, ts.ScriptTarget.ES2022, true);
  // Rewrite the package's specifiers to its source files, from the end so that positions stay valid.
  const literals: ts.StringLiteral[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      if (ts.isStringLiteral(node.moduleSpecifier)) literals.push(node.moduleSpecifier);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [first] = node.arguments;
      if (first !== undefined && ts.isStringLiteral(first)) literals.push(first);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  let code = block.code;
  for (const literal of literals.sort((a, b) => b.getStart() - a.getStart())) {
    const target = entries.get(literal.text);
    if (target === undefined) continue;
    code = `${code.slice(0, literal.getStart())}${JSON.stringify(target)}${code.slice(literal.getEnd())}`;
  }
  // Inside node_modules (ignored by git and Biome) so that bare imports such as 'rxjs' resolve as in the repo.
  const cache = join(root, 'node_modules/.cache');
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, 'readme-block-'));
  const file = join(dir, `line-${block.line}.mts`);
  writeFileSync(file, `${code}\nexport {};\n`);
  try {
    return await new Promise<string>((resolvePromise, reject) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', file],
        { cwd: root, timeout, encoding: 'utf8', env: { ...process.env, ...env } },
        (error, stdout, stderr) => {
          if (error === null) resolvePromise(stdout);
          else
            reject(
              new BlockRunError(
                `block at line ${block.line} failed (${error.message.split('\n')[0]}):\n${stderr}${stdout}`,
                typeof error.code === 'number' ? error.code : null,
                stdout,
                stderr,
              ),
            );
        },
      );
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
