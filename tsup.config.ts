import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', testing: 'src/testing/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  platform: 'neutral',
  // rxjs is a peer dependency: a bundled second copy breaks TestScheduler and instanceof checks.
  external: [/^rxjs($|\/)/, /^@noble\/hashes($|\/)/, 'fast-json-stable-stringify'],
  treeshake: true,
});
