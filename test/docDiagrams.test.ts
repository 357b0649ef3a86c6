// The marble diagram in an operator's doc comment is the rendering of its spec's first case, so that every
// diagram a user reads in an editor's hover is one TestScheduler runs.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { renderDocDiagrams, staleDocDiagrams } from '../scripts/docDiagrams.js';
import { loadSpecs } from '../scripts/readme.js';
import type { MarbleSpec } from '../src/testing/marbles.js';

let specs: Map<string, MarbleSpec>;
beforeAll(async () => {
  specs = await loadSpecs();
});

describe('doc comment diagrams', () => {
  it('are the current renderings of marbles/ (run npm run docs)', async () => {
    expect((await staleDocDiagrams()).map((s) => s.file)).toEqual([]);
  });

  it('replace a hand-drawn diagram, and only the doc comment of the function the spec names', () => {
    const source = [
      '/**',
      ' * Tags attempts.',
      ' *',
      ' * ```text',
      ' * source:  -a-r-b-|',
      ' * result:  -A-R-B-|     drawn by hand',
      ' * ```',
      ' */',
      'export function tagAttempts() {}',
      '',
      '/**',
      ' * ```text',
      ' * left alone',
      ' * ```',
      ' */',
      'export function somethingElse() {}',
    ].join('\n');
    const next = renderDocDiagrams(source, specs);
    expect(next).not.toContain('drawn by hand');
    expect(next).toContain(' *           tagAttempts()');
    expect(next).toContain('docs/operators/tagAttempts.md');
    expect(next).toContain(' * left alone');
    expect(renderDocDiagrams(next, specs)).toBe(next);
  });

  it('cover every operator and policy with a spec whose doc comment draws one', () => {
    const policies = readFileSync('src/policies.ts', 'utf8');
    for (const name of ['naivePolicy', 'resetOnlyPolicy', 'lateExecutionPolicy']) {
      expect(policies).toContain(`Every case of \`marbles/${name}.marbles.ts\``);
    }
    const cleanTurn = readFileSync('src/cleanTurn.ts', 'utf8');
    expect(cleanTurn).toContain(`result:   ${specs.get('cleanTurn')?.cases[0]?.expected}`);
  });
});
