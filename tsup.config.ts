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
    otel: 'src/otel/index.ts',
    angular: 'src/angular/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  platform: 'neutral',
  // The entry points share their common code (the core, the error classes, internal helpers) through shared chunks:
  // one copy of each module per format, whichever entry points a program loads. Dependencies stay imports: rxjs is a peer (a bundled second copy breaks TestScheduler and instanceof checks),
  // and the heavy optional peers load only from their own entry points.
  external: [
    /^rxjs($|\/)/,
    /^@noble\/hashes($|\/)/,
    'eventsource-parser',
    'better-sqlite3',
    'ioredis',
    'pg',
    /^@agentclientprotocol\/sdk($|\/)/,
    /^@opentelemetry\//,
    /^@angular\//,
    /^node:/,
  ],
  treeshake: true,
  // Shared chunks for CJS too, not only for ESM.
  splitting: true,
});
