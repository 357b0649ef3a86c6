import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    providers: 'src/providers/index.ts',
    transport: 'src/transport/index.ts',
    'transport-redis': 'src/transport/redis/index.ts',
    effects: 'src/effects/index.ts',
    'effects-sqlite': 'src/effects/sqlite/index.ts',
    'effects-redis': 'src/effects/redis/index.ts',
    'effects-postgres': 'src/effects/postgres/index.ts',
    renderers: 'src/renderers/index.ts',
    acp: 'src/acp/index.ts',
    testing: 'src/testing/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  platform: 'neutral',
  // Dependencies stay imports: rxjs is a peer (a bundled second copy breaks TestScheduler and instanceof checks),
  // and the heavy optional peers load only from their own entry points.
  external: [
    // Sub-entries import the core through the package name: one copy of its classes per module format.
    /^cleanturn($|\/)/,
    /^rxjs($|\/)/,
    /^@noble\/hashes($|\/)/,
    'eventsource-parser',
    'better-sqlite3',
    'ioredis',
    'pg',
    /^@agentclientprotocol\/sdk($|\/)/,
    /^node:/,
  ],
  treeshake: true,
});
