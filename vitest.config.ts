import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests import through the package names, as users do; they run against the sources.
    alias: [
      { find: /^cleanturn\/testing$/, replacement: src('testing/index.ts') },
      { find: /^cleanturn\/providers$/, replacement: src('providers/index.ts') },
      { find: /^cleanturn\/transport$/, replacement: src('transport/index.ts') },
      { find: /^cleanturn\/transport\/redis$/, replacement: src('transport/redis/index.ts') },
      { find: /^cleanturn\/renderers$/, replacement: src('renderers/index.ts') },
      { find: /^cleanturn\/acp$/, replacement: src('acp/index.ts') },
      { find: /^cleanturn\/otel$/, replacement: src('otel/index.ts') },
      { find: /^cleanturn\/angular$/, replacement: src('angular/index.ts') },
      { find: /^cleanturn\/effects\/sqlite$/, replacement: src('effects/sqlite/index.ts') },
      { find: /^cleanturn\/effects\/redis$/, replacement: src('effects/redis/index.ts') },
      { find: /^cleanturn\/effects\/postgres$/, replacement: src('effects/postgres/index.ts') },
      { find: /^cleanturn\/effects$/, replacement: src('effects/index.ts') },
      { find: /^cleanturn$/, replacement: src('index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/setup/build.ts', 'test/setup/skips.ts'],
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
  },
});
