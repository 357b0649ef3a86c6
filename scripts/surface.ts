// The public surface: every name (value or type) that each entry point of package.json "exports" declares, read from
// the built type declarations (dist/*.d.ts) with the TypeScript checker, as a user's editor sees them. Run after
// `npm run build`:
//
//   tsx scripts/surface.ts            prints each entry point's counts and the total
//   tsx scripts/surface.ts --list     prints every name too
//   tsx scripts/surface.ts --max=120  fails when the total is above 120
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import ts from 'typescript';

interface ExportTarget {
  import?: { types?: string };
}

const root = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const list = args.includes('--list');
const maxArg = args.find((arg) => arg.startsWith('--max='));
const max = maxArg === undefined ? undefined : Number(maxArg.slice('--max='.length));

const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as {
  exports: Record<string, ExportTarget | string>;
};
const entries = Object.entries(pkg.exports).flatMap(([entry, target]) => {
  const types = typeof target === 'string' ? undefined : target.import?.types;
  return types === undefined ? [] : [{ entry, file: resolve(root, types) }];
});

const program = ts.createProgram(
  entries.map((e) => e.file),
  {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    skipLibCheck: true,
    noEmit: true,
  },
);
const checker = program.getTypeChecker();

/** Whether an export is a value (a function, a class, a constant) rather than a type only. */
function isValue(symbol: ts.Symbol): boolean {
  const declaration = symbol.declarations?.[0];
  if (declaration !== undefined && ts.isExportSpecifier(declaration)) {
    if (declaration.isTypeOnly || declaration.parent.parent.isTypeOnly) return false;
  }
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  return (target.flags & ts.SymbolFlags.Value) !== 0;
}

let values = 0;
let types = 0;
for (const { entry, file } of entries) {
  const source = program.getSourceFile(file);
  const module = source === undefined ? undefined : checker.getSymbolAtLocation(source);
  if (module === undefined) throw new Error(`${file} is missing: run npm run build first`);
  const names = checker.getExportsOfModule(module);
  const entryValues = names.filter(isValue).map((s) => s.name);
  const entryTypes = names.filter((s) => !isValue(s)).map((s) => s.name);
  values += entryValues.length;
  types += entryTypes.length;
  const name = entry === '.' ? 'cleanturn' : `cleanturn${entry.slice(1)}`;
  console.log(
    `${name.padEnd(28)} ${String(entryValues.length).padStart(3)} values ${String(entryTypes.length).padStart(3)} types`,
  );
  if (list) {
    console.log(`  values: ${entryValues.sort().join(', ')}`);
    console.log(`  types:  ${entryTypes.sort().join(', ')}`);
  }
}
const total = values + types;
console.log(
  `public names: ${total} (${values} values, ${types} types)${max === undefined ? '' : `, at most ${max}`}`,
);
if (max !== undefined && total > max) process.exitCode = 1;
