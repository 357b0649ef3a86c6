// The README's refund example, run as users run it: three processes, the first killed with SIGKILL.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { root } from './processes.js';

let child: ChildProcess | undefined;
afterEach(async () => {
  if (child !== undefined && child.exitCode === null && child.signalCode === null) {
    const closed = new Promise((resolve) => child?.once('close', resolve));
    child.kill('SIGKILL');
    await closed;
  }
});

it('examples/refund-exactly-once.ts: one refund through a crash', { timeout: 60_000 }, async () => {
  const example = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'examples/refund-exactly-once.ts')],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child = example;
  example.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  example.stderr.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => example.once('close', resolve));
  expect(code, out).toBe(0);
  const lines = out.split('\n').map((line) => line.trim());
  expect(lines).toContain('(process ended: SIGKILL)');
  expect(lines.filter((l) => l.startsWith('payment API: refunded'))).toHaveLength(1);
  expect(lines.filter((l) => l.startsWith('payment API: already refunded'))).toHaveLength(1);
  expect(lines.filter((l) => l.startsWith('tool-result: issue_refund executed'))).toHaveLength(1);
  expect(lines.filter((l) => l.startsWith('tool-result: issue_refund replayed'))).toHaveLength(1);
  expect(lines).toContain('Refunds held by the payment API: 1');
});
