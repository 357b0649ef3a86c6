/**
 * The SQLite effect ledger, for one machine. Needs the optional peer dependency `better-sqlite3`; importing
 * `cleanturn/effects` alone never loads it.
 *
 * @module
 */
export type { SqliteLedgerOperation } from './errors.js';
export { LedgerBusyError, LedgerClosedError, LedgerReadOnlyError } from './errors.js';
export type { SqliteEffectLedgerOptions } from './SqliteEffectLedger.js';
export { SqliteEffectLedger } from './SqliteEffectLedger.js';
