// docs/guides/nestjs.md shows the NestJS example's code. Its blocks cannot be compiled on their own (Nest's legacy
// decorators, imports of the example's other files), so each one is marked with the file it comes from
// (`<!-- example:PATH -->`, then `<!-- skip -->` for test/readme-code.test.ts) and must be a verbatim excerpt of it:
// the files are type-checked by examples/nest/tsconfig.json and run by nest.e2e.test.ts.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { extractBlocks } from '../../scripts/readmeCode.js';

const guide = 'docs/guides/nestjs.md';
const markdown = readFileSync(guide, 'utf8');
const blocks = extractBlocks(markdown);

/** Each `<!-- example:PATH -->` of the guide with the block that follows it. */
const excerpts = markdown.split('\n').flatMap((line, i) => {
  const path = /^<!-- example:(\S+) -->$/.exec(line.trim())?.[1];
  if (path === undefined) return [];
  const block = blocks.find((b) => b.line > i + 1);
  return block === undefined ? [] : [{ path, line: i + 1, block }];
});

describe(`${guide}: the example's code`, () => {
  it('shows the service, the controller, the module and the app', () => {
    expect(excerpts.map((e) => e.path)).toEqual([
      'examples/nest/turns.service.ts',
      'examples/nest/turns.controller.ts',
      'examples/nest/turns.module.ts',
      'examples/nest/main.ts',
    ]);
  });

  it.each(excerpts.map((e) => [`${guide}:${e.line} ${e.path}`, e] as const))(
    '%s: the block is a verbatim excerpt of the file, kept from the readme code check',
    (_, { path, block }) => {
      expect(block.lang).toBe('ts');
      expect(block.markers.has('skip')).toBe(true);
      expect(block.code.trim().length).toBeGreaterThan(0);
      expect(readFileSync(path, 'utf8')).toContain(block.code);
    },
  );
});
