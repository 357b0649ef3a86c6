/**
 * The PostgreSQL effect ledger, for many processes and machines. Give it your `pg.Pool` (the optional peer
 * dependency `pg`); importing `cleanturn/effects` alone never loads it.
 *
 * @module
 */
export type { PostgresLedgerOperation } from './errors.js';
export { PostgresLedgerError, PostgresLedgerUsageError, PostgresOutcomeUnknownError } from './errors.js';
export type { PostgresEffectLedgerOptions, PostgresQueryable } from './PostgresEffectLedger.js';
export { PostgresEffectLedger } from './PostgresEffectLedger.js';
