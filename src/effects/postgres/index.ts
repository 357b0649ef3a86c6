/**
 * The PostgreSQL effect ledger, for many processes and machines. Give it your `pg.Pool` (the optional peer
 * dependency `pg`); importing `cleanturn/effects` alone never loads it. Its errors are `EffectError`s of
 * `cleanturn/effects`.
 *
 * @module
 */
export type { PostgresEffectLedgerOptions } from './PostgresEffectLedger.js';
export { PostgresEffectLedger } from './PostgresEffectLedger.js';
