// Types of decodeWith: a decoder writes ProviderEvents only, a finish only through finish(), and the operator
// takes any source (each value is checked at runtime) and emits ProviderEvents.
import type { ProviderEvent } from 'cleanturn';
import { type Decoder, type DecoderSink, decodeWith, openaiChat } from 'cleanturn/providers';
import type { Observable, OperatorFunction } from 'rxjs';
import { expectTypeOf, test } from 'vitest';
import { type DecodeResult, type DecoderFactory, decodeAll } from '../../src/providers/decodeWith.js';
import type { FinishEvent } from '../../src/types.js';

type Line = { text?: string };

test('the operator takes any source and emits provider events; the decoder reads its own payload type', () => {
  const operator = decodeWith<Line>({ name: 'lines' }, (sink) => ({
    next: (line) => line.text !== undefined && sink.event({ type: 'text', text: line.text }),
  }));
  expectTypeOf(operator).toEqualTypeOf<OperatorFunction<unknown, ProviderEvent>>();
  expectTypeOf(openaiChat()).toEqualTypeOf<OperatorFunction<unknown, ProviderEvent>>();
  expectTypeOf<ReturnType<typeof operator>>().toEqualTypeOf<Observable<ProviderEvent>>();
  // The decoder class's payload type is inferred from its `next`.
  class LineDecoder implements Decoder<Line> {
    constructor(private readonly sink: DecoderSink) {}
    next(line: Line): void {
      if (line.text !== undefined) this.sink.event({ type: 'text', text: line.text });
    }
  }
  expectTypeOf(decodeWith({ name: 'lines' }, (sink) => new LineDecoder(sink))).toEqualTypeOf<
    OperatorFunction<unknown, ProviderEvent>
  >();
  // Without a payload type, a decoder reads an object of unknown fields.
  decodeWith({ name: 'lines' }, (sink) => ({
    next(payload) {
      expectTypeOf(payload).toEqualTypeOf<Record<string, unknown>>();
      if (typeof payload.text === 'string') sink.event({ type: 'text', text: payload.text });
    },
  }));
});

test('a decoder writes provider events and finishes only', () => {
  expectTypeOf<DecoderSink['event']>().parameter(0).toEqualTypeOf<ProviderEvent>();
  expectTypeOf<DecoderSink['finish']>().parameter(0).toEqualTypeOf<FinishEvent>();
  const bad: DecoderFactory<Line> = (sink) => ({
    next() {
      // @ts-expect-error: not a provider event
      sink.event({ type: 'chunk', text: 'x' });
      // @ts-expect-error: a finish goes through finish(), which takes a finish only
      sink.finish({ type: 'text', text: 'x' });
    },
  });
  expectTypeOf(bad).returns.toEqualTypeOf<Decoder<Line>>();
  // @ts-expect-error: a decoder must read payloads
  const missing: Decoder<Line> = { end() {} };
  void missing;
});

test('decodeAll takes the same factory and gives events and an optional error', () => {
  const lines: DecoderFactory<Line> = () => ({ next() {} });
  expectTypeOf(decodeAll({ name: 'lines' }, lines, [{ text: 'a' }, '[DONE]'])).toEqualTypeOf<DecodeResult>();
  // @ts-expect-error: payloads of another format
  decodeAll({ name: 'lines' }, lines, [{ text: 1 }]);
});
