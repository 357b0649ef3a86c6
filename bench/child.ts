// Runs a bench module in a child Node process with extra flags (--expose-gc, --cpu-prof) and reads the JSON
// result it prints on its last line.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The line prefix a child prints its result after. */
export const RESULT = 'BENCH-RESULT ';

/** Runs `bench/<script>` under tsx with `flags`, and returns the parsed result. */
export function runChild<T>(script: string, flags: string[], args: string[] = []): Promise<T> {
  const file = fileURLToPath(new URL(script, import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...flags, '--import', 'tsx', file, ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text: string) => {
      out += text;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith(RESULT));
      if (code !== 0 || line === undefined) {
        reject(new Error(`${script} exited with ${code}:\n${out.slice(-2000)}`));
        return;
      }
      resolve(JSON.parse(line.slice(RESULT.length)) as T);
    });
  });
}

/** Prints a child's result for its parent. */
export function report(result: unknown): void {
  process.stdout.write(`${RESULT}${JSON.stringify(result)}\n`);
}
