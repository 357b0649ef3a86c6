// The one classification table: code words first (most specific first), then the HTTP status, then the default.

import { describe, expect, it } from 'vitest';
import { isRetryableStatus, isRetryableUpstream, upstreamErrorCodes } from '../src/upstreamErrors.js';

describe('isRetryableUpstream', () => {
  it.each([
    [{ codes: ['insufficient_quota'], status: 429 }, false],
    [{ codes: ['UNAVAILABLE'], status: 503 }, true],
    [{ codes: ['unavailable'] }, true],
    [{ codes: [undefined, 'server_error'] }, true],
    [{ codes: ['some_vendor_code', 'overloaded_error'] }, true],
    [{ codes: ['invalid_image_url'] }, false],
    [{ codes: ['image_generation_user_error'] }, false],
    [{ codes: ['model_not_found'] }, false],
    [{ codes: ['content_policy_violation'] }, false],
    [{ codes: ['OUT_OF_RANGE'] }, false],
    [{ codes: ['UNIMPLEMENTED'] }, false],
    [{ codes: ['CANCELLED'], status: 499 }, true],
    [{ codes: ['unheard_of'], status: 404 }, false],
    [{ codes: [42, null, {}], status: 502 }, true],
    [{ status: 200 }, true],
    [{ status: 200, otherwise: false }, false],
    [{ status: 302, otherwise: false }, false],
    [{}, true],
    [{ otherwise: false }, false],
  ])('%j → %s', (facts, retryable) => {
    expect(isRetryableUpstream(facts)).toBe(retryable);
  });

  it('one rule for HTTP statuses: 408, 409, 429 and 5xx', () => {
    const retryable = [];
    for (let status = 100; status < 700; status++) if (isRetryableStatus(status)) retryable.push(status);
    expect(retryable).toEqual([408, 409, 429, ...Array.from({ length: 100 }, (_, i) => 500 + i)]);
  });

  it('the table is lower-case and answers both ways', () => {
    for (const code of upstreamErrorCodes.keys()) expect(code).toBe(code.toLowerCase());
    expect(new Set(upstreamErrorCodes.values())).toEqual(new Set([true, false]));
  });

  it('a code named like an Object.prototype member is just an unknown code', () => {
    expect(isRetryableUpstream({ codes: ['constructor', '__proto__', 'toString'], status: 400 })).toBe(false);
    expect(isRetryableUpstream({ codes: ['constructor'] })).toBe(true);
  });
});
