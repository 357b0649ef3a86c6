// Tests that need a system package (redis-server, PostgreSQL, Chromium) and skip without it: each guard records
// "this suite, in this test file, needs that package" here, and the suite's global setup (test/setup/skips.ts)
// prints one line per skipped suite at the very end of the run, after vitest's summary. Test files run in worker
// processes, so a record is a small file in a folder that the global setup creates and names in
// CLEANTURN_SKIPS_DIR. Without that folder (a run that does not use the global setup) the guard prints its one
// line at once instead.
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { expect } from 'vitest';

/** The environment variable that names the folder of skip records. */
export const SKIPS_DIR_ENV = 'CLEANTURN_SKIPS_DIR';

/**
 * A group of tests and the system package they need.
 *
 * ## Example
 * ```ts
 * const redis: Requirement = { suite: 'Redis ledger and turn-log tests', install: 'apt-get install redis-server' };
 * ```
 */
export interface Requirement {
  /** What is skipped, in words: `Redis ledger and turn-log tests`. */
  suite: string;
  /** The command that installs what the suite needs: `apt-get install redis-server`. */
  install: string;
}

/** The Redis effect ledger's and the Redis turn log's tests: a real redis-server (test/effects/redisServer.ts). */
export const REDIS: Requirement = {
  suite: 'Redis ledger and turn-log tests',
  install: 'apt-get install redis-server',
};

/** The PostgreSQL effect ledger's tests: a real PostgreSQL cluster (test/effects/postgresServer.ts). */
export const POSTGRES: Requirement = {
  suite: 'PostgreSQL ledger tests',
  install: 'apt-get install postgresql',
};

/** The browser demo end to end (test/browser/demo.test.ts): Debian's Chromium, and fonts for its screenshots. */
export const CHROMIUM: Requirement = {
  suite: 'browser demo test',
  install: 'apt-get install chromium fonts-liberation',
};

/** One guard's record: a requirement that was missing while one test file was loaded. */
export interface SkipRecord extends Requirement {
  /** The test file that skipped, relative to the working directory (`''` when it is not known). */
  file: string;
}

/**
 * Records that the tests of `requirement` are skipped in the test file being loaded, because `reason` (one line:
 * what is missing). The record goes to the folder in CLEANTURN_SKIPS_DIR, summed up at the end of the run; without
 * that folder, `reason` is printed at once (console.warn).
 *
 * ## Example
 * ```ts
 * if (redisTests.skip) skippedWithout(REDIS, 'redis-server not found: install the Debian package redis-server');
 * ```
 */
export function skippedWithout(
  requirement: Requirement,
  reason: string,
  dir: string | undefined = process.env[SKIPS_DIR_ENV],
): void {
  const file = currentTestFile();
  if (dir === undefined || dir === '') {
    console.warn(`${file === '' ? '' : `${file}: `}skipping the ${requirement.suite}: ${reason}`);
    return;
  }
  const record: SkipRecord = { suite: requirement.suite, install: requirement.install, file };
  mkdirSync(dir, { recursive: true });
  // One file per record: workers write at the same time, and no two of them share a file.
  writeFileSync(join(dir, `${process.pid}-${randomUUID()}.json`), JSON.stringify(record));
}

/** The test file vitest is loading or running in this worker, relative to the working directory. */
function currentTestFile(): string {
  const path = expect.getState().testPath;
  return path === undefined ? '' : relative(process.cwd(), path);
}

/** Reads every record in `dir` (none when the folder is gone). */
export function readSkipRecords(dir: string): SkipRecord[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as SkipRecord);
}

/**
 * The summary lines, one per skipped suite in the order of its name: `skipped: <suite> (<n> files): <install>`,
 * where n counts the distinct test files that skipped it.
 *
 * ## Example
 * ```ts
 * skipSummary([{ suite: 'browser demo test', install: 'apt-get install chromium', file: 'test/browser/demo.test.ts' }]);
 * // ['skipped: browser demo test (1 file): apt-get install chromium']
 * ```
 */
export function skipSummary(records: readonly SkipRecord[]): string[] {
  const suites = new Map<string, { install: string; files: Set<string> }>();
  for (const { suite, install, file } of records) {
    const entry = suites.get(suite) ?? { install, files: new Set<string>() };
    entry.files.add(file);
    suites.set(suite, entry);
  }
  return [...suites.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([suite, { install, files }]) => {
      const n = files.size;
      return `skipped: ${suite} (${n} ${n === 1 ? 'file' : 'files'}): ${install}`;
    });
}

/**
 * Creates the folder of records and names it in CLEANTURN_SKIPS_DIR (for the workers started after this), and
 * returns the function that prints the summary lines and removes the folder.
 *
 * ## Example
 * ```ts
 * const finish = collectSkips();
 * // ... the test files run, their guards record what they skip ...
 * finish(); // skipped: Redis ledger and turn-log tests (13 files): apt-get install redis-server
 * ```
 */
export function collectSkips(print: (line: string) => void = (line) => console.log(line)): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'cleanturn-skips-'));
  const previous = process.env[SKIPS_DIR_ENV];
  process.env[SKIPS_DIR_ENV] = dir;
  return () => {
    const lines = skipSummary(readSkipRecords(dir));
    rmSync(dir, { recursive: true, force: true });
    if (previous === undefined) delete process.env[SKIPS_DIR_ENV];
    else process.env[SKIPS_DIR_ENV] = previous;
    for (const line of lines) print(line);
  };
}
