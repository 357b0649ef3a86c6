// The built package under TypeScript's legacy resolution (`moduleResolution: node`, with `module: commonjs`), which
// reads no "exports": a subpath such as `cleanturn/providers` resolves only through package.json "typesVersions".
// The package is packed from dist/ as npm ships it (the suite's global setup builds dist/, test/setup/build.ts),
// unpacked into a new project's node_modules beside the dependencies it names, and a file that imports every
// entry of package.json "exports" is compiled there with the repository's TypeScript.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportedEntries } from '../scripts/entryPoints.js';

const root = resolve(import.meta.dirname, '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
};
const entries = exportedEntries(root);

/** A user's legacy CommonJS project: the options that cannot see "exports". */
const legacyOptions: ts.CompilerOptions = {
  strict: true,
  module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10,
  target: ts.ScriptTarget.ES2022,
  esModuleInterop: true,
  noEmit: true,
  skipLibCheck: true,
  types: [],
};

let work: string;
let project: string;
let checkFile: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'cleanturn-types-versions-'));
  // The package as npm ships it ("files": dist/), without building again: dist/ is the global setup's build.
  const [packed] = JSON.parse(
    execFileSync(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', work], {
      cwd: root,
      encoding: 'utf8',
    }),
  ) as { filename: string }[];
  if (packed === undefined) throw new Error('npm pack packed nothing');
  project = join(work, 'project');
  const installed = join(project, 'node_modules', 'cleanturn');
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['-xzf', join(work, packed.filename), '-C', installed, '--strip-components=1']);
  // The dependencies and peers that the declarations import, linked from the repository's node_modules.
  const names = [
    ...Object.keys(pkg.dependencies ?? {}),
    ...Object.keys(pkg.peerDependencies ?? {}),
    '@types/node',
  ];
  for (const name of names) {
    const link = join(project, 'node_modules', name);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(join(root, 'node_modules', name), link, 'dir');
  }
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'legacy-project', version: '1.0.0', private: true }),
  );
  checkFile = join(project, 'check.ts');
  writeFileSync(
    checkFile,
    `${entries.map((entry, i) => `import * as entry${i} from '${entry}';`).join('\n')}\n` +
      `export const loaded = [${entries.map((_, i) => `entry${i}`).join(', ')}];\n`,
  );
}, 120_000);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe("moduleResolution: node (TypeScript's legacy resolution, module: commonjs)", {
  timeout: 60_000,
}, () => {
  it('reads the entry points from package.json "exports"', () => {
    expect(entries).toEqual(
      expect.arrayContaining(['cleanturn', 'cleanturn/providers', 'cleanturn/effects']),
    );
  });

  it('resolves every entry point to a declaration file in the installed dist/', () => {
    const resolved = entries.map((entry) => {
      const found = ts.resolveModuleName(entry, checkFile, legacyOptions, ts.sys).resolvedModule;
      const file = found === undefined ? undefined : relative(project, found.resolvedFileName);
      return [
        entry,
        file?.startsWith(join('node_modules', 'cleanturn', 'dist')) && found?.extension,
      ] as const;
    });
    expect(resolved).toEqual(entries.map((entry) => [entry, expect.stringMatching(/^\.d\.c?ts$/)]));
  });

  it('compiles a file that imports every entry point, each with its exports', () => {
    const program = ts.createProgram([checkFile], legacyOptions);
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
      const where =
        d.file === undefined || d.start === undefined
          ? ''
          : `${relative(project, d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}: `;
      return `${where}TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
    expect(diagnostics).toEqual([]);
    const checker = program.getTypeChecker();
    const source = program.getSourceFile(checkFile);
    if (source === undefined) throw new Error('check.ts is not in the program');
    const exportCounts = source.statements.filter(ts.isImportDeclaration).map((declaration) => {
      const symbol = checker.getSymbolAtLocation(declaration.moduleSpecifier);
      const entry = (declaration.moduleSpecifier as ts.StringLiteral).text;
      return [entry, symbol === undefined ? 0 : checker.getExportsOfModule(symbol).length] as const;
    });
    expect(exportCounts.map(([entry]) => entry)).toEqual(entries);
    for (const [entry, count] of exportCounts) expect(count, entry).toBeGreaterThan(0);
  });
});
