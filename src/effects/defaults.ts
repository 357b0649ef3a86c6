// The ledgers' shared defaults. Dependency-free, so that the SQLite, Redis and PostgreSQL entries may bundle it.

/** How long a settled record is kept: 24 hours, as Stripe keeps idempotency keys. */
export const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;

/** How long a claim holds before another holder may take it over, when `executeTools` is not told. */
export const DEFAULT_LEASE_MS = 60_000;
