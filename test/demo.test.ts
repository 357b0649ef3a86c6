import { execFileSync } from 'node:child_process';
import { expect, it } from 'vitest';

// The demo is the README's first command: it must keep telling the truth about the three policies and cleanTurn,
// each column showing the rule of the scenario that the policy before it fails.

const clean = 'Checking order ORD-7781. The book arrived damaged, so I have started a full refund.';
const glued = `Checking order ORD-7781. Refunding the dam${clean}`;

it('plays the three rules through four policies: four different outcomes', () => {
  const out = execFileSync(process.execPath, ['examples/demo.mjs'], { encoding: 'utf8' });

  const reads = section(out, 'what the user reads').map((cell) => JSON.parse(cell));
  expect(reads).toEqual([glued, clean, clean, clean]);

  expect(section(out, 'the outcome')).toEqual([
    'reads 2 attempts glued together; 2 refunds',
    'reads the last attempt only; 2 refunds',
    'reads the last attempt only; 2 refunds',
    'reads the last attempt only; 1 refund',
  ]);

  const refunds = section(out, 'refunds the payment service made');
  expect(refunds[0]).toBe('c1 → refund re_1 c7 → refund re_2');
  expect(refunds[1]).toBe('c1 → refund re_1 c7 → refund re_2');
  // Late execution has no memory of what ran: the restart refunds again.
  expect(refunds[2]).toMatch(/^c7 → refund re_1 .*crash.* restart: c11 → refund re_2$/);
  // cleanTurn's ledger still holds the crashed run's claim; the handler runs again with the same key, and the
  // payment service, idempotent on it, refunds nothing new.
  expect(refunds[3]).toMatch(/^c7 → refund re_1 .*crash.* restart: .*claim.* c11 → already refunded re_1/);

  const keys = [...out.matchAll(/effectKey\('turn-42', c(?:1|7|11)\) += ([0-9a-f]{16})/g)].map((m) => m[1]);
  expect(keys).toHaveLength(3);
  expect(new Set(keys).size).toBe(1);
});

/** The cells of one section of the demo's table, one string per column (its wrapped lines joined). */
function section(out: string, label: string): string[] {
  const lines = out.split('\n');
  const start = lines.indexOf(label);
  expect(start, `section "${label}"`).toBeGreaterThanOrEqual(0);
  const columns: string[][] = [[], [], [], []];
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith('  ') || line.includes('─┼─')) break;
    line.split('│').forEach((cell, i) => {
      if (cell.trim() !== '') columns[i]?.push(cell.trim());
    });
  }
  return columns.map((cells) => cells.join(' '));
}
