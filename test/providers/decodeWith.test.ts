// decodeWith and decodeAll: the rules every adapter shares, checked on a small format of lines, with and without RxJS.
import { CleanturnError, type FinishReason, type ProviderEvent } from 'cleanturn';
import { decodeWith, ProviderError } from 'cleanturn/providers';
import { finish, text } from 'cleanturn/testing';
import { from, Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { type DecoderFactory, decodeAll } from '../../src/providers/decodeWith.js';
import { providerPayloadError, upstreamProviderError } from '../../src/providers/errors.js';
import { collect } from '../support/collect.js';
import { nothing, standardChecks } from '../support/standardChecks.js';

type Line = { text?: string; finish?: FinishReason; fail?: string; end?: boolean };

const options = { name: 'lines', endMarker: '[DONE]' };
/** The decoder of the line format; `opened` counts the decoders made, `sdk` reads an SDK-like error. */
let opened = 0;
const lines: DecoderFactory<Line> = (sink) => {
  opened++;
  return {
    next(line) {
      if (line.fail !== undefined) {
        throw upstreamProviderError('gemini', line.fail, { retryable: true, payload: line });
      }
      if (typeof line.text === 'string') sink.event(text(line.text));
      if (line.finish !== undefined) sink.finish(finish(line.finish));
      if (line.end === true) sink.end();
    },
    error(error) {
      return error instanceof Error && 'status' in error
        ? upstreamProviderError('gemini', error.message, {
            retryable: false,
            status: 400,
            payload: error,
            cause: error,
          })
        : undefined;
    },
  };
};
const adapt = (inputs: readonly (Line | string)[]) => collect(from(inputs).pipe(decodeWith(options, lines)));

describe('decodeWith', () => {
  it('reads every chunk of a stream that reports a finish on each, and emits the last finish once', () => {
    const inputs: Line[] = [
      { text: 'a', finish: 'stop' },
      { text: 'b', finish: 'stop' },
      { text: 'c', finish: 'length' },
    ];
    expect(adapt(inputs)).toEqual({
      values: [text('a'), text('b'), text('c'), finish('length')],
      completed: true,
    });
  });

  it('the end marker, or the decoder saying the format ended, releases the finish; later payloads are ignored', () => {
    expect(
      adapt([{ text: 'a', finish: 'stop' }, '[DONE]', { text: 'late', finish: 'length' }]).values,
    ).toEqual([text('a'), finish('stop')]);
    expect(adapt([{ finish: 'stop', end: true }, { text: 'late' }]).values).toEqual([finish('stop')]);
    expect(adapt([{ text: 'a', finish: 'stop' }, '[DONE]'])).toEqual({
      values: [text('a'), finish('stop')],
      completed: true,
    });
  });

  it('a source error after the end completes; before it, it fails the attempt and the finish is dropped', () => {
    const erroring = (inputs: (Line | string)[]) =>
      collect(
        new Observable<Line | string>((s) => {
          for (const input of inputs) s.next(input);
          s.error(new TypeError('terminated'));
        }).pipe(decodeWith(options, lines)),
      );
    expect(erroring([{ text: 'a', finish: 'stop' }, '[DONE]'])).toEqual({
      values: [text('a'), finish('stop')],
      completed: true,
    });
    const cut = erroring([{ text: 'a', finish: 'stop' }]);
    expect(cut.values).toEqual([text('a')]);
    expect(cut.error).toBeInstanceOf(TypeError);
  });

  it("an error payload after a provisional finish is an error; the decoder's typed error passes as it is", () => {
    const result = adapt([{ text: 'a', finish: 'stop' }, { fail: 'CANCELLED' }, { text: 'never' }]);
    expect(result.values).toEqual([text('a')]);
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({ code: 'upstream' });
  });

  it("source errors that are not cleanturn's go to the decoder's error(); cleanturn's pass as they are", () => {
    const sdkError = Object.assign(new Error('got status: 400'), { status: 400 });
    const read = (error: unknown) =>
      collect(new Observable<Line>((s) => s.error(error)).pipe(decodeWith(options, lines))).error;
    expect(read(sdkError)).toMatchObject({ retryable: false, status: 400, cause: sdkError });
    const own = new CleanturnError('mine', 'mine', { retryable: true });
    expect(read(own)).toBe(own);
    const plain = new TypeError('terminated');
    expect(read(plain)).toBe(plain);
  });

  it('what is not a payload is a ProviderError naming the operator, with the input kept', () => {
    for (const input of ['{"text":"a"}', [], 7, null, true]) {
      const result = adapt([{ text: 'a' }, input as Line]);
      expect(result.error).toBeInstanceOf(ProviderError);
      expect(result.error).toMatchObject({ code: 'not-a-payload', operator: 'lines', retryable: false });
      expect((result.error as ProviderError).payload).toBe(input);
      expect((result.error as Error).message).toMatch(/^lines: expected a parsed payload/);
    }
  });

  it('a decoder that throws in end() fails the stream; one decoder per subscription', () => {
    const strict: DecoderFactory<Line> = (sink) => ({
      next: (line) => line.text !== undefined && sink.event(text(line.text)),
      end() {
        throw providerPayloadError('lines', 'unknown-reference', 'a block never closed', {
          payload: null,
        });
      },
    });
    const result = collect(from([{ text: 'a' }]).pipe(decodeWith(options, strict)));
    expect(result.values).toEqual([text('a')]);
    expect(result.error).toMatchObject({ code: 'unknown-reference', retryable: true });
    const before = opened;
    const operator = decodeWith(options, lines);
    collect(from([{ text: 'a' }]).pipe(operator));
    collect(from([{ text: 'b' }]).pipe(operator));
    expect(opened - before).toBe(2);
  });
});

describe('decodeWith: the end marker, told to the decoder', () => {
  /** A format whose end marker means the attempt finished, whether or not a line reported a finish. */
  const markerFinishes: DecoderFactory<Line> = (sink) => {
    let reported = false;
    return {
      next(line) {
        if (typeof line.text === 'string') sink.event(text(line.text));
        if (line.finish !== undefined) {
          reported = true;
          sink.finish(finish(line.finish));
        }
      },
      atEndMarker() {
        if (!reported) sink.finish(finish('stop'));
      },
    };
  };
  const run = (inputs: (Line | string)[]) => collect(from(inputs).pipe(decodeWith(options, markerFinishes)));

  it('a finish the decoder gives at the end marker goes out with the end, and nothing after it', () => {
    expect(run([{ text: 'a' }, '[DONE]', { text: 'late' }])).toEqual({
      values: [text('a'), finish('stop')],
      completed: true,
    });
    expect(run([{ text: 'a', finish: 'length' }, '[DONE]']).values).toEqual([text('a'), finish('length')]);
  });

  it('without the end marker the decoder is not told: a source that just completes has no finish', () => {
    expect(run([{ text: 'a' }])).toEqual({ values: [text('a')], completed: true });
    expect(decodeAll(options, markerFinishes, [{ text: 'a' }, '[DONE]']).events).toEqual([
      text('a'),
      finish('stop'),
    ]);
  });

  it('what the decoder throws at the end marker fails the stream', () => {
    const failing: DecoderFactory<Line> = (sink) => ({
      next: (line) => line.text !== undefined && sink.event(text(line.text)),
      atEndMarker() {
        throw providerPayloadError('lines', 'invalid-field', 'the stream ended inside a call', {
          payload: null,
        });
      },
    });
    const result = collect(from([{ text: 'a' }, '[DONE]']).pipe(decodeWith(options, failing)));
    expect(result.values).toEqual([text('a')]);
    expect(result.error).toBeInstanceOf(ProviderError);
  });
});

describe('decodeAll: a decoder without RxJS', () => {
  it('gives what the operator would emit and the error it would end with', () => {
    const payloads: (Line | string)[] = [
      { text: 'a', finish: 'stop' },
      { text: 'b', finish: 'stop' },
    ];
    const events: ProviderEvent[] = [text('a'), text('b'), finish('stop')];
    expect(decodeAll(options, lines, payloads)).toEqual({ events });
    expect(collect(from(payloads).pipe(decodeWith(options, lines))).values).toEqual(events);
    expect(decodeAll(options, lines, payloads, { error: new TypeError('terminated') })).toEqual({
      events: [text('a'), text('b')],
      error: new TypeError('terminated'),
    });
    expect(
      decodeAll(options, lines, [...payloads, '[DONE]'], { error: new TypeError('terminated') }),
    ).toEqual({
      events,
    });
    expect(decodeAll(options, lines, [{ fail: 'x' }, { text: 'never' }]).error).toBeInstanceOf(ProviderError);
  });
});

standardChecks<Line | string>({
  name: 'decodeWith',
  make: () => decodeWith(options, lines),
  values: { a: { text: 'Hi' }, b: { finish: 'stop' }, c: '[DONE]' },
  expected: { a: text('Hi'), b: nothing, c: finish('stop') },
  throwing: [
    {
      callback: 'the decoder',
      make: (fail) => decodeWith<Line>(options, () => ({ next: () => fail() })),
    },
  ],
});
