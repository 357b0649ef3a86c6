// The record of tests skipped for a missing system package (test/support/requirements.ts), and the global setup
// that prints one line per skipped suite at the end of a run (test/setup/skips.ts), in a real vitest run.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  CHROMIUM,
  collectSkips,
  POSTGRES,
  REDIS,
  readSkipRecords,
  SKIPS_DIR_ENV,
  skippedWithout,
  skipSummary,
} from './support/requirements.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const folders: string[] = [];
const folder = () => {
  const dir = mkdtempSync(join(tmpdir(), 'cleanturn-skips-test-'));
  folders.push(dir);
  return dir;
};
afterEach(() => {
  vi.restoreAllMocks();
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('skipSummary', () => {
  it('gives one line per suite, sorted by name, counting distinct files', () => {
    expect(
      skipSummary([
        { ...REDIS, file: 'test/transport/turnLog.test.ts' },
        { ...POSTGRES, file: 'test/effects/postgres.test.ts' },
        { ...REDIS, file: 'test/effects/redisTimeouts.test.ts' },
        { ...REDIS, file: 'test/transport/turnLog.test.ts' },
        { ...CHROMIUM, file: 'test/browser/demo.test.ts' },
      ]),
    ).toEqual([
      'skipped: PostgreSQL ledger tests (1 file): apt-get install postgresql',
      'skipped: Redis ledger and turn-log tests (2 files): apt-get install redis-server',
      'skipped: browser demo test (1 file): apt-get install chromium fonts-liberation',
    ]);
  });

  it('gives nothing when nothing was skipped', () => {
    expect(skipSummary([])).toEqual([]);
  });
});

describe('skippedWithout', () => {
  it('writes one record per call, naming the test file being run', () => {
    const dir = folder();
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    skippedWithout(REDIS, 'redis-server not found', dir);
    skippedWithout(REDIS, 'redis-server not found', dir);
    expect(readdirSync(dir)).toHaveLength(2);
    expect(readSkipRecords(dir)).toEqual([
      { ...REDIS, file: 'test/requirements.test.ts' },
      { ...REDIS, file: 'test/requirements.test.ts' },
    ]);
    expect(warn).not.toHaveBeenCalled();
  });

  it('without a folder of records, prints its one line at once', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    skippedWithout(POSTGRES, 'PostgreSQL not found', '');
    expect(warn.mock.calls).toEqual([
      ['test/requirements.test.ts: skipping the PostgreSQL ledger tests: PostgreSQL not found'],
    ]);
  });

  it('reads no records from a folder that is gone', () => {
    expect(readSkipRecords(join(folder(), 'gone'))).toEqual([]);
  });
});

describe('collectSkips', () => {
  it('names a new folder in the environment, then prints the summary, removes the folder and restores the variable', () => {
    const before = process.env[SKIPS_DIR_ENV];
    const lines: string[] = [];
    const finish = collectSkips((line) => lines.push(line));
    const dir = process.env[SKIPS_DIR_ENV];
    try {
      expect(dir).toBeDefined();
      expect(dir).not.toBe(before);
      skippedWithout(CHROMIUM, '/usr/bin/chromium not found');
      expect(lines).toEqual([]);
    } finally {
      finish();
    }
    expect(lines).toEqual(['skipped: browser demo test (1 file): apt-get install chromium fonts-liberation']);
    expect(existsSync(dir as string)).toBe(false);
    expect(process.env[SKIPS_DIR_ENV]).toBe(before);
  });
});

describe('a vitest run with the skips global setup', () => {
  it('ends with one line per skipped suite, after the summary, counting the files that skipped it', async () => {
    const dir = folder();
    const requirements = JSON.stringify(join(root, 'test/support/requirements.ts'));
    const guard = (suite: string) =>
      `import { ${suite}, skippedWithout } from ${requirements};\n` +
      `const missing = true;\n` +
      `skippedWithout(${suite}, 'not installed');\n` +
      `describe.skipIf(missing)('needs it', () => { it('runs', () => {}); });\n` +
      `it('runs without it', () => {});\n`;
    writeFileSync(join(dir, 'a.test.ts'), guard('REDIS'));
    writeFileSync(join(dir, 'b.test.ts'), guard('REDIS'));
    writeFileSync(join(dir, 'c.test.ts'), guard('POSTGRES'));
    writeFileSync(join(dir, 'd.test.ts'), `it('needs nothing', () => {});\n`);
    writeFileSync(
      join(dir, 'vitest.config.mjs'),
      `export default { test: { include: ['*.test.ts'], globals: true, globalSetup: [${JSON.stringify(
        join(root, 'test/setup/skips.ts'),
      )}] } };\n`,
    );
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', CI: '' };
    delete env[SKIPS_DIR_ENV];
    delete env.VITEST;
    delete env.VITEST_WORKER_ID;
    delete env.VITEST_POOL_ID;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        join(root, 'node_modules/vitest/vitest.mjs'),
        'run',
        '--root',
        dir,
        '--config',
        join(dir, 'vitest.config.mjs'),
      ],
      { cwd: dir, env, encoding: 'utf8', timeout: 60_000 },
    );
    const lines = stdout.trimEnd().split('\n');
    expect(lines.slice(-2)).toEqual([
      'skipped: PostgreSQL ledger tests (1 file): apt-get install postgresql',
      'skipped: Redis ledger and turn-log tests (2 files): apt-get install redis-server',
    ]);
    expect(stdout).toMatch(/Test Files\s+4 passed/);
    expect(stdout.indexOf('Test Files')).toBeLessThan(stdout.indexOf('skipped: PostgreSQL'));
    expect(stdout).not.toContain('skipping the');
  }, 60_000);
});
