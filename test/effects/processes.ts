// Running test fixtures as real child processes (TypeScript through tsx, which honours the tsconfig paths, so
// `cleanturn` resolves to the sources as in the tests).
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

export const root = join(import.meta.dirname, '..', '..');

/** How a child process ended and what it wrote. */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A child process running a fixture, and the promise of its exit. */
export interface Child {
  process: ChildProcess;
  exit: Promise<Exit>;
  /** Resolves with the first stdout line that satisfies `test`. */
  line(test: (line: string) => boolean): Promise<string>;
}

/** The children started by this module that have not ended yet. */
const live = new Set<Child>();

/** Kills (SIGKILL) every fixture process still running and waits for them: call it in `afterEach`. */
export async function stopFixtures(): Promise<void> {
  const children = [...live];
  for (const c of children) c.process.kill('SIGKILL');
  await Promise.all(children.map((c) => c.exit.catch(() => undefined)));
}

/** Starts `node --import tsx test/effects/fixtures/<fixture> ...args`. */
export function startFixture(fixture: string, args: string[], env: Record<string, string> = {}): Child {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'test/effects/fixtures', fixture), ...args],
    {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  // The unfinished last line of stdout, and the callers waiting for a line.
  let partial = '';
  const waiting: { test: (line: string) => boolean; resolve: (line: string) => void }[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      for (const w of waiting.filter((w) => w.test(line))) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exit = new Promise<Exit>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  const line = (test: (line: string) => boolean) =>
    new Promise<string>((resolve, reject) => {
      const found = stdout.split('\n').find(test);
      if (found !== undefined) return resolve(found);
      waiting.push({ test, resolve });
      exit.then(
        (e) => reject(new Error(`process ended (${e.code ?? e.signal}) before the line: ${e.stderr}`)),
        reject,
      );
    });
  const started: Child = { process: child, exit, line };
  live.add(started);
  exit.finally(() => live.delete(started)).catch(() => undefined);
  return started;
}

/** Runs a fixture to its end. */
export function runFixture(fixture: string, args: string[], env: Record<string, string> = {}): Promise<Exit> {
  return startFixture(fixture, args, env).exit;
}

/** The JSON lines of a process's output. */
export function jsonLines<T>(stdout: string): T[] {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as T);
}
