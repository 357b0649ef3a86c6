// Starts runner processes for the kill tests (test/support/runServerProcess.ts, run with `node --import tsx`) and
// reads the JSON lines they print.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');

export interface Runner {
  name: string;
  url: string;
  child: ChildProcess;
  exited: Promise<void>;
  alive: boolean;
}

export type Line = Record<string, unknown> & { name: string };

/** Starts a runner process; resolves once it listens. Each of its stdout lines goes to `onLine`. */
export function startRunner(
  name: string,
  env: Record<string, string>,
  onLine: (line: Line) => void,
): Promise<Runner> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'test/support/runServerProcess.ts')], {
    cwd: root,
    env: { ...process.env, ...env, NAME: name },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let partial = '';
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.stdout.on('data', (c: Buffer) => {
      const parts = (partial + c.toString()).split('\n');
      partial = parts.pop() ?? '';
      for (const part of parts) {
        if (!part.startsWith('{')) continue;
        const line = JSON.parse(part) as Line;
        if (typeof line.listening === 'number')
          resolve({ name, url: `http://127.0.0.1:${line.listening}`, child, exited, alive: true });
        else onLine(line);
      }
    });
    child.once('error', reject);
    void exited.then(() => reject(new Error(`runner ${name} exited before it listened: ${stderr}`)));
  });
}
