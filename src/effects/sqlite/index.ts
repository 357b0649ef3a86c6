/**
 * The SQLite effect ledger, for one machine. Needs the optional peer dependency `better-sqlite3`; importing
 * `cleanturn/effects` alone never loads it. Its errors are `EffectError`s of `cleanturn/effects`.
 *
 * @module
 */
export type { SqliteEffectLedgerOptions } from './SqliteEffectLedger.js';
export { SqliteEffectLedger } from './SqliteEffectLedger.js';
