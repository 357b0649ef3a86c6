import { execFileSync } from 'node:child_process';
import { expect, it } from 'vitest';

// The demo is the README's first command: it must keep telling the truth about the three policies.

it('prints the three policies and cleanTurn side by side with their refunds and keys', () => {
  const out = execFileSync(process.execPath, ['examples/demo.mjs'], { encoding: 'utf8' });
  const refunds = out
    .split('\n')
    .find((line) => line.includes('× issue_refund'))
    ?.split('│')
    .map((cell) => cell.trim());
  expect(refunds).toEqual(['2 × issue_refund', '2 × issue_refund', '1 × issue_refund', '1 × issue_refund']);
  expect(out).toContain('Refunding the damChecking');
  const keys = [...out.matchAll(/effectKey\('turn-42', c[17]\) = ([0-9a-f]{16})/g)].map((m) => m[1]);
  expect(keys).toHaveLength(2);
  expect(keys[0]).toBe(keys[1]);
});
