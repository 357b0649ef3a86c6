// Builds the package for the benchmarks: the project's own tsup config (same entries, same target, same
// externals), ESM only, without declarations, into a directory of its own. The benchmarks measure the code
// users run, not the sources as tsx transforms them (tsx adds a `__name` call to every named closure), and a
// test run that cleans `dist/` meanwhile cannot pull the package from under them.

import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as Core from 'cleanturn';
import type * as Providers from 'cleanturn/providers';
import type * as Transport from 'cleanturn/transport';
import type * as TransportRedis from 'cleanturn/transport/redis';
import { build, type Options } from 'tsup';
import config from '../tsup.config.js';

/** Where the benchmark build goes (inside node_modules: ignored by git, and bare imports such as rxjs resolve). */
export const outDir = fileURLToPath(new URL('../node_modules/.cache/cleanturn-bench/', import.meta.url));

/** The entries the benchmarks load. */
const entries = ['index', 'providers', 'transport', 'transport-redis'] as const;

/**
 * Builds the entries; the sub-entries import the core from the same build. `root` is the directory whose `src/`
 * is built (default: this checkout); point it at another checkout to measure a baseline.
 */
export async function buildPackage(root?: string): Promise<void> {
  const base = (Array.isArray(config) ? config[0] : config) as Options;
  const allEntries = base.entry as Record<string, string>;
  const entry = Object.fromEntries(
    entries.map((name) => [
      name,
      root === undefined ? (allEntries[name] as string) : join(root, allEntries[name] as string),
    ]),
  );
  await build({
    ...base,
    entry,
    format: ['esm'],
    dts: false,
    sourcemap: false,
    clean: true,
    silent: true,
    outDir,
    // The package name points at this build's core, not at dist/ (which a concurrent test run may be rebuilding).
    external: (base.external ?? []).filter((e) => String(e) !== String(/^cleanturn($|\/)/)),
    esbuildPlugins: [
      {
        name: 'cleanturn-self',
        setup(b) {
          b.onResolve({ filter: /^cleanturn$/ }, () => ({ path: './index.js', external: true }));
        },
      },
    ],
  });
}

/** The built package. */
export interface Package {
  core: typeof Core;
  providers: typeof Providers;
  transport: typeof Transport;
  transportRedis: typeof TransportRedis;
}

/** Builds the package (unless `build` is false: a child process loads its parent's build) and loads it. */
export async function loadPackage(options: { build?: boolean; root?: string } = {}): Promise<Package> {
  if (options.build !== false) await buildPackage(options.root);
  const load = (name: string) => import(new URL(`${name}.js`, `file://${outDir}`).href);
  return {
    core: (await load('index')) as typeof Core,
    providers: (await load('providers')) as typeof Providers,
    transport: (await load('transport')) as typeof Transport,
    transportRedis: (await load('transport-redis')) as typeof TransportRedis,
  };
}
