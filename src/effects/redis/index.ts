/**
 * The Redis effect ledger, for many processes and machines. Needs the optional peer dependency `ioredis`;
 * importing `cleanturn/effects` alone never loads it.
 *
 * @module
 */
export type { RedisEffectLedgerOptions } from './RedisEffectLedger.js';
export { RedisEffectLedger } from './RedisEffectLedger.js';
