/**
 * The Redis effect ledger, for many processes and machines. Needs the optional peer dependency `ioredis`;
 * importing `cleanturn/effects` alone never loads it. Its errors are `EffectError`s of `cleanturn/effects`.
 *
 * @module
 */
export type { RedisEffectLedgerOptions } from './RedisEffectLedger.js';
export { RedisEffectLedger } from './RedisEffectLedger.js';
