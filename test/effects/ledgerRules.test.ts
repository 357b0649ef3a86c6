// The effect ledger's rules, one transition per row: decide(record, now, operation) → { answer, write }.

import { UsageError } from 'cleanturn';
import { describe, expect, it } from 'vitest';
import { checkDuration, decide, isSettled, type StoredRecord } from '../../src/effects/ledgerRules.js';
import type { SerializedError } from '../../src/effects/types.js';

const NOW = 1_000_000;
const RETENTION = 10_000;
const LEASE = 500;
const declined: SerializedError = {
  name: 'CardDeclinedError',
  message: 'card declined',
  retryable: false,
  code: 'x',
};

const claimedBy = (token: string, leaseUntil: number, expiresAt = leaseUntil + RETENTION): StoredRecord => ({
  status: 'claimed',
  token,
  leaseUntil,
  payload: undefined,
  expiresAt,
});
const completedBy = (token: string, payload: string | undefined, expiresAt = NOW + 1): StoredRecord => ({
  status: 'completed',
  token,
  leaseUntil: 0,
  payload,
  expiresAt,
});
const failedBy = (token: string, payload: string | undefined, expiresAt = NOW + 1): StoredRecord => ({
  status: 'failed',
  token,
  leaseUntil: 0,
  payload,
  expiresAt,
});

/** Records, by the situation they stand for at NOW. */
const absent = undefined;
const live = claimedBy('A', NOW + 1); // lease ends 1 ms from now
const leaseEndsNow = claimedBy('A', NOW); // a lease that ends at `now` has ended
const leaseEnded = claimedBy('A', NOW - 1);
const claimGone = claimedBy('A', NOW - RETENTION - 1, NOW); // past lease plus retention: absent
const completed = completedBy('A', '{"ok":1}');
const completedNoResult = completedBy('A', undefined);
const failed = failedBy('A', JSON.stringify(declined));
const failedNoPayload = failedBy('A', undefined);
const settledGone = completedBy('A', '{"ok":1}', NOW); // expiresAt === now: forgotten

const claim = { type: 'claim', token: 'B', leaseMs: LEASE, retentionMs: RETENTION } as const;
const newClaim = { type: 'put', record: claimedBy('B', NOW + LEASE) };
const none = { type: 'none' };

describe('decide: claim', () => {
  it.each([
    ['absent', absent, { status: 'claimed', token: 'B', reclaimed: false }, newClaim],
    ['a claim past its retention', claimGone, { status: 'claimed', token: 'B', reclaimed: false }, newClaim],
    [
      'a settled record past its retention',
      settledGone,
      { status: 'claimed', token: 'B', reclaimed: false },
      newClaim,
    ],
    ['a live lease', live, { status: 'in-progress', until: NOW + 1 }, none],
    ['a lease that ends now', leaseEndsNow, { status: 'claimed', token: 'B', reclaimed: true }, newClaim],
    ['an ended lease', leaseEnded, { status: 'claimed', token: 'B', reclaimed: true }, newClaim],
    ['completed', completed, { status: 'completed', result: { ok: 1 } }, none],
    ['completed without a result', completedNoResult, { status: 'completed', result: undefined }, none],
    ['failed', failed, { status: 'failed', error: declined }, none],
    [
      'failed without a payload',
      failedNoPayload,
      {
        status: 'failed',
        error: { name: 'Error', message: 'the recorded error could not be read', retryable: false },
      },
      none,
    ],
  ])('on %s', (_, record, answer, write) => {
    expect(decide(record, NOW, claim)).toEqual({ answer, write });
  });
});

describe('decide: complete and fail', () => {
  const complete = (token: string) =>
    ({ type: 'complete', token, payload: '{"r":2}', retentionMs: RETENTION }) as const;
  const fail = (token: string) => ({ type: 'fail', token, error: declined, retentionMs: RETENTION }) as const;
  const completedWrite = (token: string) => ({
    type: 'put',
    record: completedBy(token, '{"r":2}', NOW + RETENTION),
  });
  const failedWrite = (token: string) => ({
    type: 'put',
    record: failedBy(token, JSON.stringify(declined), NOW + RETENTION),
  });
  it.each([
    ['absent', absent, 'A', 'done'],
    ['gone past retention', claimGone, 'B', 'done'],
    ['the caller’s live claim', live, 'A', 'done'],
    ['the caller’s ended lease, not taken over', leaseEnded, 'A', 'done'],
    ['the caller’s own settled record', completed, 'A', 'done'],
    ['another holder’s live claim', live, 'B', 'lease-lost'],
    ['another holder’s ended lease', leaseEnded, 'B', 'lease-lost'],
    ['another holder’s completed record', completed, 'B', 'lease-lost'],
    ['another holder’s failed record', failed, 'B', 'lease-lost'],
  ])('on %s (token %s) → %s', (_, record, token, answer) => {
    expect(decide(record, NOW, complete(token))).toEqual({
      answer,
      write: answer === 'done' ? completedWrite(token) : none,
    });
    expect(decide(record, NOW, fail(token))).toEqual({
      answer,
      write: answer === 'done' ? failedWrite(token) : none,
    });
  });

  it('stores no payload for a result of undefined', () => {
    expect(
      decide(live, NOW, { type: 'complete', token: 'A', payload: undefined, retentionMs: RETENTION }).write,
    ).toEqual({ type: 'put', record: completedBy('A', undefined, NOW + RETENTION) });
  });
});

describe('decide: release', () => {
  it.each([
    ['absent', absent, 'A', 'done', none],
    ['gone past retention', claimGone, 'A', 'done', none],
    ['the caller’s live claim', live, 'A', 'done', { type: 'delete' }],
    ['the caller’s ended lease, not taken over', leaseEnded, 'A', 'done', { type: 'delete' }],
    ['another holder’s claim', live, 'B', 'lease-lost', none],
    ['the caller’s completed record', completed, 'A', 'lease-lost', none],
    ['the caller’s failed record', failed, 'A', 'lease-lost', none],
  ])('on %s (token %s) → %s', (_, record, token, answer, write) => {
    expect(decide(record, NOW, { type: 'release', token })).toEqual({ answer, write });
  });
});

describe('decide: renew', () => {
  const renewed = { type: 'put', record: claimedBy('A', NOW + LEASE) };
  it.each([
    ['the caller’s live claim', live, 'A', true, renewed],
    ['the caller’s lease that ends now', leaseEndsNow, 'A', true, renewed],
    ['the caller’s ended lease, not taken over', leaseEnded, 'A', true, renewed],
    ['absent', absent, 'A', false, none],
    ['the caller’s claim past its retention', claimGone, 'A', false, none],
    ['another holder’s claim', live, 'B', false, none],
    ['another holder’s ended lease', leaseEnded, 'B', false, none],
    ['the caller’s completed record', completed, 'A', false, none],
    ['the caller’s failed record', failed, 'A', false, none],
  ])('on %s (token %s) → %s', (_, record, token, answer, write) => {
    expect(decide(record, NOW, { type: 'renew', token, leaseMs: LEASE, retentionMs: RETENTION })).toEqual({
      answer,
      write,
    });
  });
});

describe('decide: get', () => {
  it.each([
    ['absent', absent, undefined],
    ['a claim past its retention', claimGone, undefined],
    ['a settled record past its retention', settledGone, undefined],
    [
      'a live claim',
      live,
      { status: 'claimed', token: 'A', leaseUntil: NOW + 1, expiresAt: NOW + 1 + RETENTION },
    ],
    [
      'an ended lease (still the holder’s record)',
      leaseEnded,
      { status: 'claimed', token: 'A', leaseUntil: NOW - 1, expiresAt: NOW - 1 + RETENTION },
    ],
    ['completed', completed, { status: 'completed', token: 'A', result: { ok: 1 }, expiresAt: NOW + 1 }],
    [
      'completed without a result',
      completedNoResult,
      { status: 'completed', token: 'A', result: undefined, expiresAt: NOW + 1 },
    ],
    ['failed', failed, { status: 'failed', token: 'A', error: declined, expiresAt: NOW + 1 }],
  ])('on %s', (_, record, answer) => {
    expect(decide(record, NOW, { type: 'get' })).toEqual({ answer, write: none });
  });
});

describe('isSettled (what seen asks)', () => {
  it.each([
    ['absent', absent, false],
    ['a live claim', live, false],
    ['an ended lease', leaseEnded, false],
    ['completed', completed, true],
    ['failed', failed, true],
    ['settled past retention', settledGone, false],
  ])('%s → %s', (_, record, settled) => {
    expect(isSettled(record, NOW)).toBe(settled);
  });
});

describe('checkDuration', () => {
  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])('refuses %s', (value) => {
    expect(() => checkDuration('executeTools', 'leaseMs', value)).toThrow(UsageError);
    expect(() => checkDuration('executeTools', 'leaseMs', value)).toThrow(
      /^executeTools: leaseMs must be a finite number > 0, not /,
    );
  });
  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])('refuses %s even where 0 is allowed', (value) => {
    expect(() => checkDuration('SqliteEffectLedger', 'busyTimeoutMs', value, true)).toThrow(
      /^SqliteEffectLedger: busyTimeoutMs must be a finite number >= 0, not /,
    );
  });
  it('takes a positive duration, and 0 where allowed', () => {
    expect(checkDuration('executeTools', 'leaseMs', 0.5)).toBe(0.5);
    expect(checkDuration('SqliteEffectLedger', 'busyTimeoutMs', 0, true)).toBe(0);
  });
});
