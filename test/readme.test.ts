import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { loadSpecs, renderReadme } from '../scripts/readme.js';

it('README diagrams are the current renderings of marbles/ (run npm run docs:readme)', async () => {
  const readme = readFileSync('README.md', 'utf8');
  expect(renderReadme(readme, await loadSpecs())).toBe(readme);
});

it('README opens with the two set-up commands', () => {
  const readme = readFileSync('README.md', 'utf8');
  const firstBlock = readme.slice(
    readme.indexOf('```sh'),
    readme.indexOf('```', readme.indexOf('```sh') + 5),
  );
  expect(firstBlock).toContain('npm ci && npm run demo');
  expect(firstBlock).toContain('npm test');
});
