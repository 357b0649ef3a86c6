// Builds dist/ with tsup only when it is older than what it is built from, and prints one line either way:
//
//   node scripts/buildIfStale.mjs           (npm run demo runs it before the demo)
//   node scripts/buildIfStale.mjs --check   only the line; exits with 1 when dist/ is stale
//
// The inputs are every file and folder under src/ (a folder's time changes when a file in it is added, removed or
// renamed), tsup.config.ts, package.json and tsconfig.json; the outputs are the files that package.json names
// (`exports`, `main`, `module`, `types`). dist/ is stale when an output is missing, or when the newest input is
// newer than the oldest output. Any build counts, whoever ran it: `npm ci` (the `prepare` script), `npm run
// build`, the test suite's global setup. Exits with tsup's status when it builds.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The modification time of a path in ms, or undefined when it does not exist. */
function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

/** Every file and folder under `dir` (the folder itself included). */
function walk(dir) {
  const paths = [dir];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) paths.push(...walk(path));
    else paths.push(path);
  }
  return paths;
}

/** The files package.json points at, relative to the root: every string of `exports`, `main`, `module`, `types`. */
function outputs(pkg) {
  const found = new Set();
  const visit = (value) => {
    if (typeof value === 'string') {
      if (value !== './package.json') found.add(join(root, value));
    } else if (value !== null && typeof value === 'object') {
      for (const inner of Object.values(value)) visit(inner);
    }
  };
  visit([pkg.exports, pkg.main, pkg.module, pkg.types]);
  return [...found];
}

/** Why dist/ must be built, or undefined when it is up to date. */
function staleness() {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const inputs = [
    ...walk(join(root, 'src')),
    ...['tsup.config.ts', 'package.json', 'tsconfig.json'].map((name) => join(root, name)),
  ];
  let newest = { path: '', time: Number.NEGATIVE_INFINITY };
  for (const path of inputs) {
    const time = mtime(path);
    if (time !== undefined && time > newest.time) newest = { path, time };
  }
  let oldest = { path: '', time: Number.POSITIVE_INFINITY };
  for (const path of outputs(pkg)) {
    const time = mtime(path);
    if (time === undefined) return { reason: `${relative(root, path)} is missing` };
    if (time < oldest.time) oldest = { path, time };
  }
  if (oldest.path === '') return { reason: 'package.json names no built files' };
  if (newest.time > oldest.time) {
    return { reason: `${relative(root, newest.path)} is newer than ${relative(root, oldest.path)}` };
  }
  return undefined;
}

const stale = staleness();
if (stale === undefined) {
  console.log('dist/ is up to date with src/ and the build configuration: not rebuilt');
} else if (process.argv.includes('--check')) {
  console.log(`dist/ is stale (${stale.reason})`);
  process.exitCode = 1;
} else {
  console.log(`dist/ is stale (${stale.reason}): building with tsup`);
  const require = createRequire(join(root, 'package.json'));
  const tsupPackage = require.resolve('tsup/package.json');
  const { bin } = JSON.parse(readFileSync(tsupPackage, 'utf8'));
  const cli = join(dirname(tsupPackage), typeof bin === 'string' ? bin : bin.tsup);
  const result = spawnSync(process.execPath, [cli, '--silent'], { cwd: root, stdio: 'inherit' });
  if (result.error) throw result.error;
  process.exitCode = result.status ?? 1;
}
