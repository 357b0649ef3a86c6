// Errors that cannot be read: a `message` getter that throws, a Proxy whose every trap throws, a revoked Proxy. Every
// place that reads a foreign error (describeError, isRetryable, retryAsEvents' reason, the adapters' error mapping,
// streamTurn's retry decision, the turn report) reads it without throwing: the stream keeps the error it was given,
// and the turn goes on as it would for any other error.
import { isRetryable, retryAsEvents, type TurnError } from 'cleanturn';
import {
  aiSdkParts,
  anthropicMessages,
  geminiContent,
  geminiInteractions,
  openaiChat,
  openaiResponses,
  ProviderError,
} from 'cleanturn/providers';
import { streamTurn, type TurnReport } from 'cleanturn/transport';
import { concat, defer, from, lastValueFrom, type OperatorFunction, of, throwError, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { describeError } from '../src/internal/describeError.js';
import { expectTurnError } from './support/errors.js';

const trap = (): never => {
  throw new Error('a trap of the proxy');
};

/** An Error whose `message` (and, with `name`, its `name`) getter throws. */
function unreadableMessage(options: { name?: boolean; retryable?: boolean } = {}): Error {
  const error = new Error('never read');
  Object.defineProperty(error, 'message', {
    get() {
      throw new Error('the message getter');
    },
  });
  if (options.name)
    Object.defineProperty(error, 'name', {
      get() {
        throw new Error('the name getter');
      },
    });
  if (options.retryable !== undefined) Object.assign(error, { retryable: options.retryable });
  return error;
}

/** A Proxy whose every trap throws: reading a field, `instanceof`, `in`, listing its keys. */
function trapProxy(): object {
  return new Proxy(new Error('never read'), {
    get: trap,
    getPrototypeOf: trap,
    has: trap,
    ownKeys: trap,
    getOwnPropertyDescriptor: trap,
  });
}

/** A revoked Proxy: every operation on it throws a TypeError. */
function revokedProxy(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

/** An object whose conversions all throw: toJSON, toString, Symbol.toPrimitive. */
function unprintable(): object {
  return {
    toJSON: trap,
    toString: trap,
    [Symbol.toPrimitive]: trap,
  };
}

// biome-ignore format: a table
const hostile: [string, () => unknown][] = [
  ['an Error whose message getter throws',          () => unreadableMessage()],
  ['an Error whose message and name getters throw', () => unreadableMessage({ name: true })],
  ['a Proxy whose every trap throws',               trapProxy],
  ['a revoked Proxy',                               revokedProxy],
  ['an object whose conversions throw',             unprintable],
];

describe('describeError and isRetryable never throw', () => {
  it.each(hostile)('%s', (_what, make) => {
    const error = make();
    const line = describeError(error);
    expect(typeof line).toBe('string');
    expect(line).not.toBe('');
    expect(isRetryable(error)).toBe(true);
  });

  it('an Error whose message cannot be read is described by its name', () => {
    const error = unreadableMessage();
    error.name = 'UpstreamError';
    expect(describeError(error)).toBe('UpstreamError');
  });
});

describe('retryAsEvents reads the reason of an unreadable error without throwing', () => {
  it.each(hostile)('%s: a retry event, then the next attempt', async (_what, make) => {
    const error = make();
    let attempt = 0;
    const source = defer(() => (++attempt === 1 ? throwError(() => error) : of('Refund started.')));
    const events = await lastValueFrom(source.pipe(retryAsEvents({ count: 2 }), toArray()));
    // Compared field by field: a deep comparison would read the hostile error itself.
    expect(events).toHaveLength(2);
    const [retry, value] = events as [{ type: string; reason: unknown; error: unknown }, string];
    expect([retry.type, typeof retry.reason, retry.error === error, value]).toEqual([
      'retry',
      'string',
      true,
      'Refund started.',
    ]);
  });

  it('past the cap, retries-exhausted TurnError carries the unreadable errors, and its message reads', async () => {
    const error = trapProxy();
    const caught = await lastValueFrom(throwError(() => error).pipe(retryAsEvents({ count: 1 }))).catch(
      (thrown: unknown) => thrown,
    );
    expectTurnError(caught, 'retries-exhausted');
    expect((caught as TurnError).attempts?.map((a) => a.error === error)).toEqual([true, true]);
    expect((caught as Error).message).toMatch(/^gave up after 2 attempt\(s\)/);
  });
});

describe('the adapters map an unreadable source error without throwing', () => {
  // biome-ignore format: a table
  const adapters: [string, () => OperatorFunction<never, unknown>][] = [
    ['openaiChat',        () => openaiChat() as never],
    ['openaiResponses',   () => openaiResponses() as never],
    ['anthropicMessages', () => anthropicMessages() as never],
    ['geminiContent',     () => geminiContent() as never],
    ['geminiInteractions', () => geminiInteractions() as never],
    ['aiSdkParts',        () => aiSdkParts() as never],
  ];
  for (const [name, adapter] of adapters) {
    it.each(hostile)(`${name}: %s`, async (_what, make) => {
      const error = make();
      // Wrapped: a Proxy returned from a promise callback would be read as a thenable.
      const { caught } = await lastValueFrom(throwError(() => error).pipe(adapter(), toArray())).then(
        () => ({ caught: undefined as unknown }),
        (thrown: unknown) => ({ caught: thrown }),
      );
      // Either the error as it is, or the adapter's reading of it: never what a getter or a trap threw.
      expect(caught === error || caught instanceof ProviderError).toBe(true);
    });
  }

  it("an SDK-style error with a body whose message getter throws becomes a ProviderError with the body's code", async () => {
    const error = Object.assign(unreadableMessage(), { status: 503, error: { type: 'server_error' } });
    const caught = await lastValueFrom(throwError(() => error).pipe(openaiChat(), toArray())).catch(
      (thrown: unknown) => thrown,
    );
    expect(caught).toBeInstanceOf(ProviderError);
    expect(caught).toMatchObject({
      code: 'upstream',
      upstreamCode: 'server_error',
      status: 503,
      retryable: true,
      cause: error,
    });
  });

  it('a payload of the wrong shape whose conversions throw is still an invalid-field ProviderError', async () => {
    const payload = { ...unprintable(), choices: 'Refund' };
    const caught = await lastValueFrom(from([payload as never]).pipe(openaiChat(), toArray())).catch(
      (thrown: unknown) => thrown,
    );
    expect(caught).toBeInstanceOf(ProviderError);
    expect(caught).toMatchObject({ code: 'invalid-field', field: 'choices', payload });
  });
});

describe('streamTurn and its report read an unreadable error without throwing', () => {
  it('a request factory that throws a Proxy: retried as any error, and the report gives each reason', async () => {
    const error = trapProxy();
    let report: TurnReport | undefined;
    const caught = await lastValueFrom(
      streamTurn({
        turnId: 'turn-42',
        retry: 2,
        backoff: false,
        adapter: openaiChat(),
        request: () => {
          throw error;
        },
        onReport: (r) => {
          report = r;
        },
      }),
    ).catch((thrown: unknown) => thrown);
    expectTurnError(caught, 'retries-exhausted');
    expect((caught as TurnError).failures).toBe(3);
    expect(report?.outcome).toBe('failed');
    expect(report?.attempts.map((a) => typeof a.reason)).toEqual(['string', 'string', 'string']);
  });

  it('a final error whose message getter throws ends the turn as it is, and the report has its reason', async () => {
    const error = unreadableMessage({ retryable: false });
    error.name = 'NoProviderLeft';
    let report: TurnReport | undefined;
    const caught = await lastValueFrom(
      concat(
        streamTurn({
          turnId: 'turn-42',
          plan: () => {
            throw error;
          },
          onReport: (r) => {
            report = r;
          },
        }),
      ),
    ).catch((thrown: unknown) => thrown);
    expect(caught).toBe(error);
    expect(report).toMatchObject({
      outcome: 'failed',
      attempts: [{ outcome: 'failed', reason: 'NoProviderLeft' }],
    });
  });
});
