import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const src = (path: string) => fileURLToPath(new URL(`../../src/${path}`, import.meta.url));

// The page imports cleanturn by its package names, as a user's app does; here they resolve to the sources
// (the same entries as in vitest.config.ts).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  resolve: {
    alias: [
      { find: /^cleanturn\/testing$/, replacement: src('testing/index.ts') },
      { find: /^cleanturn\/providers$/, replacement: src('providers/index.ts') },
      { find: /^cleanturn\/transport$/, replacement: src('transport/index.ts') },
      { find: /^cleanturn\/renderers$/, replacement: src('renderers/index.ts') },
      { find: /^cleanturn\/acp$/, replacement: src('acp/index.ts') },
      { find: /^cleanturn\/effects\/sqlite$/, replacement: src('effects/sqlite/index.ts') },
      { find: /^cleanturn\/effects\/redis$/, replacement: src('effects/redis/index.ts') },
      { find: /^cleanturn\/effects$/, replacement: src('effects/index.ts') },
      { find: /^cleanturn$/, replacement: src('index.ts') },
    ],
  },
  build: { target: 'es2022', sourcemap: true },
});
