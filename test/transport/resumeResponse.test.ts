// resumeResponse on its own: the standard operator checks (each connection is the next subscription of the
// source), the callbacks that throw, cancel on unsubscribe, what the official SDK's calls return, and its options.
import { UsageError } from 'cleanturn';
import { openaiResponses } from 'cleanturn/providers';
import { finish, text, usage } from 'cleanturn/testing';
import { openaiBackground, resumeResponse, streamTurn } from 'cleanturn/transport';
import {
  catchError,
  concat,
  EMPTY,
  lastValueFrom,
  type Observable,
  of,
  take,
  throwError,
  toArray,
} from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { resumeError } from '../../src/transport/errors.js';
import type { ResumeResponseOptions } from '../../src/transport/resumeResponse.js';
import { nothing, standardChecks } from '../support/standardChecks.js';

const newScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/** resumeResponse with create and retrieve both reading the next subscription of `connection`. */
const resuming =
  (options: Partial<ResumeResponseOptions> = {}) =>
  (connection: Observable<unknown>) =>
    resumeResponse({
      create: () => connection,
      retrieve: () => connection,
      adapter: openaiResponses(),
      delay: 0,
      ...options,
    });

const id = 'resp_1';
const created = { type: 'response.created', sequence_number: 0, response: { id, status: 'in_progress' } };
const delta = (sequence: number, fragment: string) => ({
  type: 'response.output_text.delta',
  sequence_number: sequence,
  delta: fragment,
});
const resumable = { type: 'resumable', responseId: id };
const completed = (sequence: number) => ({
  type: 'response.completed',
  sequence_number: sequence,
  response: { id, status: 'completed', usage: { input_tokens: 142, output_tokens: 31 } },
});

// Without a response id the stream cannot be resumed: resumeResponse is its adapter, and passes errors through.
standardChecks<unknown>({
  name: 'resumeResponse',
  make: () => resuming(),
  values: {
    a: { type: 'response.output_text.delta', sequence_number: 0, delta: 'Checking' },
    b: { type: 'response.in_progress', sequence_number: 1 },
    c: { type: 'response.output_text.delta', sequence_number: 2, delta: ' order ORD-7781.' },
  },
  expected: { a: text('Checking'), b: nothing, c: text(' order ORD-7781.') },
  throwing: [
    {
      callback: 'create',
      make: (fail) => resuming({ create: fail }),
      source: '-a-b-c-|',
      expected: '#',
      sourceSubs: [],
    },
  ],
});

describe('resumeResponse', () => {
  it('fails with what retrieve throws, at the cut it was to resume', () => {
    const thrown = new Error('no client');
    newScheduler().run(({ cold, expectObservable }) => {
      const first = cold('-c-a-#', { c: created, a: delta(1, 'Checking') }, new Error('connection reset'));
      const result = resumeResponse({
        create: () => first,
        retrieve: () => {
          throw thrown;
        },
        adapter: openaiResponses(),
      });
      expectObservable(result).toBe(
        '-N-A-(R#)',
        { N: resumable, A: text('Checking'), R: { type: 'resume', after: 1, reason: 'connection reset' } },
        thrown,
      );
    });
  });

  it('cancels the response when unsubscribed before its end, once; not after its end', async () => {
    const cancelled: string[] = [];
    newScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-c-a-b-|', { c: created, a: delta(1, 'Checking'), b: completed(2) });
      const cancel = ({ id: response }: { id: string }) => cancelled.push(response);
      expectObservable(resuming({ cancel })(source), '----!').toBe('-N-A', {
        N: resumable,
        A: text('Checking'),
      });
    });
    expect(cancelled).toEqual([id]);

    cancelled.length = 0;
    newScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-c-a-b-|', { c: created, a: delta(1, 'Checking'), b: completed(2) });
      const cancel = ({ id: response }: { id: string }) => cancelled.push(response);
      expectObservable(resuming({ cancel })(source)).toBe('-N-A-(UF|)', {
        N: resumable,
        A: text('Checking'),
        U: usage(142, 31),
        F: { ...finish('stop', 'completed'), responseId: id },
      });
    });
    expect(cancelled).toEqual([]);
  });

  it('cancels a response it gives up on, and ignores a cancel that throws or rejects', () => {
    const calls: string[] = [];
    newScheduler().run(({ cold, expectObservable }) => {
      const first = cold('-c-a-#', { c: created, a: delta(1, 'Checking') }, new Error('connection reset'));
      const gap = cold('-b|', { b: delta(5, ' late') });
      let connection = 0;
      const result = resumeResponse({
        create: () => first,
        retrieve: () => (connection++ === 0 ? gap : first),
        cancel: ({ id: response }) => {
          calls.push(response);
          throw new Error('cancel failed');
        },
        adapter: openaiResponses(),
      });
      expectObservable(result).toBe(
        '-N-A-R#',
        { N: resumable, A: text('Checking'), R: { type: 'resume', after: 1, reason: 'connection reset' } },
        resumeError('gap', id, 1, { next: 5 }),
      );
    });
    expect(calls).toEqual([id]);
  });

  it('a resumed connection whose events carry no sequence_number is unverifiable: the attempt fails, retryable', () => {
    const cancelled: string[] = [];
    newScheduler().run(({ cold, expectObservable }) => {
      const first = cold('-c-a-#', { c: created, a: delta(1, 'Checking') }, new Error('connection reset'));
      // A proxy that re-serialises the events, from the start: the first one would be read twice.
      const { sequence_number: _, ...again } = delta(1, 'Checking');
      const replayed = cold('-a-b|', { a: again, b: delta(2, ' order.') });
      let connection = 0;
      const result = resumeResponse({
        create: () => first,
        retrieve: () => (connection++ === 0 ? replayed : first),
        cancel: ({ id: response }) => cancelled.push(response),
        adapter: openaiResponses(),
      });
      const error = resumeError('unverifiable', id, 1);
      expect(error).toMatchObject({ code: 'resume-unverifiable', resumed: true, retryable: true, after: 1 });
      expectObservable(result).toBe(
        '-N-A-R#',
        { N: resumable, A: text('Checking'), R: { type: 'resume', after: 1, reason: 'connection reset' } },
        error,
      );
    });
    expect(cancelled).toEqual([id]);
  });

  it('the create stream that skips a sequence number is a gap: the attempt fails, retryable', () => {
    const cancelled: string[] = [];
    newScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-c-a-b-d|', {
        c: created,
        a: delta(1, 'Checking'),
        b: delta(3, ' ORD-7781.'),
        d: completed(4),
      });
      const cancel = ({ id: response }: { id: string }) => cancelled.push(response);
      const error = resumeError('gap', id, 1, { next: 3, resumed: false });
      expect(error).toMatchObject({ code: 'resume-gap', resumed: false, retryable: true });
      expect(error.message).toBe(
        `cannot trust the stream of response ${id} after event 1: events 2 to 2 are missing`,
      );
      expectObservable(resuming({ cancel })(source)).toBe(
        '-N-A-#',
        { N: resumable, A: text('Checking') },
        error,
      );
    });
    expect(cancelled).toEqual([id]);
  });

  it('a create stream that starts after 0 lost its first events: a gap before any id is known', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a-|', { a: delta(2, 'Checking') });
      expectObservable(resuming()(source)).toBe(
        '-#',
        undefined,
        resumeError('gap', '', -1, { next: 2, resumed: false }),
      );
    });
  });

  it('a create stream without sequence numbers is unverifiable and not retryable: a new attempt would meet it again', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const { sequence_number: _, ...unnumbered } = created;
      const source = cold('-c-a-|', { c: unnumbered, a: delta(1, 'Checking') });
      const error = resumeError('unverifiable', id, -1, { resumed: false });
      expect(error).toMatchObject({ code: 'resume-unverifiable', resumed: false, retryable: false });
      expectObservable(resuming()(source)).toBe('-#', undefined, error);
    });
  });

  it("an error event needs no sequence number: it ends the attempt with the adapter's error", async () => {
    const upstream = { type: 'error', code: 'server_error', message: 'upstream connect error' };
    for (const connections of [
      [of(upstream)],
      [
        concat(
          of(created, delta(1, 'Checking')),
          throwError(() => new Error('connection reset')),
        ),
        of(upstream),
      ],
    ]) {
      const error = await lastValueFrom(
        resumeResponse({
          create: () => connections[0] as Observable<unknown>,
          retrieve: () => connections[1] as Observable<unknown>,
          adapter: openaiResponses(),
          delay: 0,
        }),
      ).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'ProviderError', upstreamCode: 'server_error', retryable: true });
    }
  });

  it("reads the official SDK's calls: a promise of an async iterable stream", async () => {
    let cut = true;
    async function* stream(events: unknown[], breakAfter?: number) {
      for (const [i, event] of events.entries()) {
        if (i === breakAfter) throw Object.assign(new Error('terminated'), { name: 'APIConnectionError' });
        yield event;
      }
    }
    const all = [created, delta(1, 'Checking order '), delta(2, 'ORD-7781.'), completed(3)];
    const seen: { id: string; after: number }[] = [];
    const events = await lastValueFrom(
      resumeResponse({
        create: async () => stream(all, 2),
        retrieve: async ({ id: response, after }) => {
          seen.push({ id: response, after });
          cut = false;
          // A server that replays from the start: the replays are dropped.
          return stream(all);
        },
        adapter: openaiResponses(),
      }).pipe(toArray()),
    );
    expect(cut).toBe(false);
    expect(seen).toEqual([{ id, after: 1 }]);
    expect(events).toEqual([
      resumable,
      text('Checking order '),
      { type: 'resume', after: 1, reason: 'terminated' },
      text('ORD-7781.'),
      usage(142, 31),
      { ...finish('stop', 'completed'), responseId: id },
    ]);
  });

  it('aborts the signal of the live connection when unsubscribed', async () => {
    const signals: AbortSignal[] = [];
    const result = resumeResponse({
      create: async function* ({ signal }: { signal: AbortSignal }) {
        signals.push(signal);
        yield created;
        yield delta(1, 'Checking');
        await new Promise(() => {});
      } as unknown as ResumeResponseOptions['create'],
      retrieve: () => [],
      adapter: openaiResponses(),
    });
    await lastValueFrom(result.pipe(take(1)));
    expect(signals).toHaveLength(1);
    expect(signals[0]?.aborted).toBe(true);
  });

  it('resumes a synchronous source many times without growing the stack', () => {
    const n = 3_000;
    const all = [created, ...Array.from({ length: n }, (_, i) => delta(i + 1, 'x')), completed(n + 1)];
    const cut = new Error('connection reset');
    // Every connection delivers one new event, then is cut; all of it synchronously.
    const from = (after: number) =>
      concat(of(...all.slice(after + 1, after + 2)), after + 2 < all.length ? throwError(() => cut) : EMPTY);
    const events: unknown[] = [];
    let error: unknown;
    let completed_ = false;
    resumeResponse({
      create: () => from(-1),
      retrieve: ({ after }) => from(after),
      adapter: openaiResponses(),
      maxResumes: 1,
    }).subscribe({
      next: (e) => events.push(e),
      error: (e: unknown) => {
        error = e;
      },
      complete: () => {
        completed_ = true;
      },
    });
    expect(error).toBeUndefined();
    expect(completed_).toBe(true);
    expect(events.filter((e) => (e as { type: string }).type === 'text')).toHaveLength(n);
  });

  it('cancels the response after an in-stream error event: it does not prove the response stopped', () => {
    const cancelled: string[] = [];
    newScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-c-e-|', {
        c: created,
        e: { type: 'error', sequence_number: 1, code: 'server_error', message: 'The server had an error.' },
      });
      const cancel = ({ id: response }: { id: string }) => cancelled.push(response);
      expectObservable(resuming({ cancel })(source).pipe(catchError(() => of('failed')))).toBe('-N-(f|)', {
        N: resumable,
        f: 'failed',
      });
    });
    expect(cancelled).toEqual([id]);
  });

  it('a 409 of a resume may pass: it counts as a failed resume, not as an expired response', async () => {
    let retrieves = 0;
    const conflict = Object.assign(new Error('HTTP 409'), { status: 409, retryable: true });
    const result = await lastValueFrom(
      resumeResponse({
        create: () =>
          concat(
            of(created, delta(1, 'Checking')),
            throwError(() => new Error('connection reset')),
          ),
        retrieve: () =>
          retrieves++ === 0 ? throwError(() => conflict) : of(delta(2, ' order.'), completed(3)),
        adapter: openaiResponses(),
        delay: 0,
      }).pipe(toArray()),
    );
    expect(retrieves).toBe(2);
    expect(result.filter((e) => e.type === 'text')).toEqual([text('Checking'), text(' order.')]);
  });

  it('resumeFrom: no create; the response is read from its start, and again from its start after a cut before any event', async () => {
    const asked: { id: string; after: number; cursor?: string }[] = [];
    let creates = 0;
    const result = await lastValueFrom(
      resumeResponse({
        create: () => {
          creates++;
          return EMPTY;
        },
        retrieve: ({ id: response, after, cursor }) => {
          asked.push(cursor === undefined ? { id: response, after } : { id: response, after, cursor });
          return asked.length === 1
            ? throwError(() => new Error('connection reset'))
            : of(created, delta(1, 'Checking'), delta(2, ' order.'), completed(3));
        },
        adapter: openaiResponses(),
        delay: 0,
        resumeFrom: { responseId: id, delivered: [{ ...text('Checking'), attempt: 1 }] },
      }).pipe(toArray()),
    );
    expect(creates).toBe(0);
    expect(asked).toEqual([
      { id, after: -1 },
      { id, after: -1 },
    ]);
    expect(result).toEqual([
      { type: 'resume', after: -1, reason: 'connection reset' },
      resumable,
      text('Checking'),
      text(' order.'),
      usage(142, 31),
      { ...finish('stop', 'completed'), responseId: id },
    ]);
  });

  it('resumeFrom: a response the server no longer has fails as not-found, for an ordinary retry', async () => {
    const gone = Object.assign(new Error('HTTP 404'), { status: 404, retryable: false });
    const error = await lastValueFrom(
      resumeResponse({
        create: () => EMPTY,
        retrieve: () => throwError(() => gone),
        adapter: openaiResponses(),
        resumeFrom: { responseId: id, delivered: [] },
      }),
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({
      name: 'TransportError',
      code: 'resume-not-found',
      responseId: id,
      retryable: true,
    });
  });

  it('resumeFrom: a response that finishes before it gave again all that was delivered is another generation', async () => {
    const error = await lastValueFrom(
      resumeResponse({
        create: () => EMPTY,
        retrieve: () => of(created, delta(1, 'Checking'), completed(2)),
        adapter: openaiResponses(),
        resumeFrom: {
          responseId: id,
          delivered: [
            { ...text('Checking'), attempt: 1 },
            { ...text(' order.'), attempt: 1 },
          ],
        },
      }),
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'TransportError', code: 'resume-diverged', retryable: true });
    expect((error as Error).message).toBe(
      `cannot resume response ${id} after event 2: read again from its start, it differs from what was delivered at fragment 2`,
    );
  });

  it('refuses a maxResumes or delay that is not a count or a duration', () => {
    const base = { create: () => [], retrieve: () => [], adapter: openaiResponses() };
    expect(() => resumeResponse({ ...base, maxResumes: -1 })).toThrow(UsageError);
    expect(() => resumeResponse({ ...base, maxResumes: 1.5 })).toThrow(UsageError);
    expect(() => resumeResponse({ ...base, delay: Number.NaN })).toThrow(UsageError);
    expect(() => resumeResponse({ ...base, delay: -1 })).toThrow(UsageError);
  });
});

describe('resume options are checked where they are given', () => {
  it('openaiBackground and streamTurn refuse a bad maxResumes or delay at once, not as a retry', () => {
    expect(() => openaiBackground({ maxResumes: -1 })).toThrow(UsageError);
    expect(() => openaiBackground({ delay: Number.NaN })).toThrow(UsageError);
    const resume = { retrieve: () => 'http://127.0.0.1/', maxResumes: 1.5 };
    expect(() =>
      streamTurn({ turnId: 't', adapter: openaiResponses(), request: () => 'http://127.0.0.1/', resume }),
    ).toThrow(UsageError);
  });

  it('streamTurn refuses a resumeFrom that is not { responseId, delivered }, or one without resume', () => {
    const base = { turnId: 't', adapter: openaiResponses(), request: () => 'http://127.0.0.1/' };
    const resume = openaiBackground();
    for (const resumeFrom of [{ responseId: '', delivered: [] }, { responseId: 'resp_1' }, 'resp_1'])
      expect(() => streamTurn({ ...base, resume, resumeFrom: resumeFrom as never })).toThrow(UsageError);
    expect(() => streamTurn({ ...base, resumeFrom: { responseId: 'resp_1', delivered: [] } })).toThrow(
      /resumeFrom needs resume/,
    );
  });

  it("a plan's bad resume options fail the turn at once, not after every retry", async () => {
    let attempts = 0;
    const error = await lastValueFrom(
      streamTurn({
        turnId: 't',
        retry: 2,
        backoff: false,
        plan: () => {
          attempts++;
          return {
            adapter: openaiResponses(),
            request: () => 'http://127.0.0.1:9/',
            resume: { retrieve: () => 'http://127.0.0.1:9/', maxResumes: -1 },
          };
        },
      }),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UsageError);
    expect(attempts).toBe(1);
  });
});
