// The one error class of effects and their ledgers: every case is an EffectError whose code names it, and
// instanceof holds for an error made by another copy of the package (its CommonJS build, a second version).
import { CleanturnError, isRetryable } from 'cleanturn';
import { EffectError } from 'cleanturn/effects';
import { describe, expect, it } from 'vitest';
import {
  effectInDoubtError,
  handlerTimeoutError,
  leaseLostError,
  missingEffectKeyError,
  unstorableResultError,
} from '../../src/effects/errors.js';
import { postgresLedgerError, postgresOutcomeUnknownError } from '../../src/effects/postgres/errors.js';
import {
  ledgerDataLostError,
  ledgerMemoryFullError,
  ledgerPersistenceError,
  ledgerTimeoutError,
} from '../../src/effects/redis/errors.js';
import { ledgerBusyError, ledgerClosedError, ledgerReadOnlyError } from '../../src/effects/sqlite/errors.js';
import { fromAnotherCopy } from '../support/errors.js';

describe('EffectError', () => {
  it.each([
    [leaseLostError('turn-1', 'k'), 'lease-lost', false, { scope: 'turn-1', key: 'k' }],
    [unstorableResultError('result.at', 'a Date'), 'unstorable-result', false, { path: 'result.at' }],
    [missingEffectKeyError('issue_refund'), 'missing-effect-key', false, { toolName: 'issue_refund' }],
    [
      handlerTimeoutError('issue_refund', 'k', 50),
      'handler-timeout',
      true,
      { toolName: 'issue_refund', effectKey: 'k', timeoutMs: 50 },
    ],
    [effectInDoubtError('turn-1', 'k'), 'in-doubt', false, { scope: 'turn-1', key: 'k' }],
    [ledgerBusyError('claim', 100), 'ledger-busy', true, { operation: 'claim', busyTimeoutMs: 100 }],
    [ledgerClosedError('complete'), 'ledger-closed', true, { operation: 'complete' }],
    [
      ledgerReadOnlyError('open', 'SQLITE_READONLY'),
      'ledger-read-only',
      false,
      { operation: 'open', driverCode: 'SQLITE_READONLY' },
    ],
    [ledgerTimeoutError('get', 200), 'ledger-timeout', true, { operation: 'get', timeoutMs: 200 }],
    [ledgerMemoryFullError('claim', 'OOM'), 'ledger-memory-full', true, { operation: 'claim' }],
    [
      ledgerDataLostError('p:marker', 'a', undefined),
      'ledger-data-lost',
      false,
      { markerKey: 'p:marker', expected: 'a', found: undefined },
    ],
    [
      ledgerPersistenceError(['appendonly is no']),
      'ledger-persistence',
      false,
      { problems: ['appendonly is no'] },
    ],
    [
      postgresLedgerError('get', Object.assign(new Error('gone'), { code: '42P01' })),
      'ledger-failed',
      false,
      { operation: 'get', driverCode: '42P01' },
    ],
    [
      postgresLedgerError(
        'renew',
        Object.assign(new Error('no answer'), { code: 'ETIMEDOUT', timeoutMs: 5 }),
      ),
      'ledger-timeout',
      true,
      { operation: 'renew', driverCode: 'ETIMEDOUT', timeoutMs: 5 },
    ],
    [
      postgresOutcomeUnknownError(
        'turn-1',
        'k',
        't',
        Object.assign(new Error('reset'), { code: 'ECONNRESET' }),
      ),
      'outcome-unknown',
      true,
      { operation: 'claim', driverCode: 'ECONNRESET', scope: 'turn-1', key: 'k', token: 't' },
    ],
  ] as const)('%s: code %s', (error, code, retryable, fields) => {
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toBeInstanceOf(CleanturnError);
    expect(error).toMatchObject({ name: 'EffectError', code, retryable, ...fields });
    expect(isRetryable(error)).toBe(retryable);
  });

  it('instanceof holds for an error made by another copy of the class', () => {
    const foreign = fromAnotherCopy(['CleanturnError', 'EffectError'], {
      message: 'effect k of turn-1: the lease was lost to another holder',
      code: 'lease-lost',
      retryable: false,
    });
    expect(foreign).toBeInstanceOf(EffectError);
    expect(foreign).toBeInstanceOf(CleanturnError);
    expect(new Error('plain')).not.toBeInstanceOf(EffectError);
    const other = fromAnotherCopy(['CleanturnError', 'TransportError']);
    expect(other).not.toBeInstanceOf(EffectError);
  });
});
