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

/** Runner processes for a kill test: each one killed with SIGKILL, one at a time, and replaced by a new one. */
export class RunnerPool {
  readonly runners: Runner[] = [];
  #born = 0;
  #killing = false;

  /**
   * @param prefix The start of the runners' names (`R` names them `R0`, `R1`…).
   * @param settleMs How long after a replacement listens the next kill may come.
   */
  constructor(
    private readonly prefix: string,
    private readonly env: Record<string, string>,
    private readonly onLine: (line: Line) => void,
    private readonly settleMs: number,
    private readonly random: () => number,
  ) {}

  /** Starts `count` runners; resolves once they all listen. */
  async start(count: number): Promise<void> {
    this.runners.push(...(await Promise.all(Array.from({ length: count }, () => this.#spawn()))));
  }

  /** Whether a kill is under way (its replacement is not listening yet, or has just started). */
  get killing(): boolean {
    return this.#killing;
  }

  /**
   * Kills the live runner `name` and starts another in its place (a restarted instance), when no kill is under way
   * and another runner is alive: whether it did.
   */
  kill(name: string): boolean {
    const runner = this.runners.find((r) => r.name === name && r.alive);
    if (this.#killing || runner === undefined || this.runners.filter((r) => r.alive).length < 2) return false;
    this.#killing = true;
    runner.alive = false;
    runner.child.kill('SIGKILL');
    void runner.exited
      .then(() => this.#spawn())
      .then((fresh) => {
        this.runners.push(fresh);
        setTimeout(() => {
          this.#killing = false;
        }, this.settleMs);
      });
    return true;
  }

  /** A live runner, at random; the newest when none is alive. */
  live(): Runner | undefined {
    const alive = this.runners.filter((r) => r.alive);
    return alive[Math.floor(this.random() * alive.length)] ?? this.runners[this.runners.length - 1];
  }

  /** Kills every runner and waits for them to exit. */
  async stop(): Promise<void> {
    for (const runner of this.runners) runner.child.kill('SIGKILL');
    await Promise.all(this.runners.map((runner) => runner.exited));
  }

  #spawn(): Promise<Runner> {
    return startRunner(`${this.prefix}${this.#born++}`, this.env, this.onLine);
  }
}
