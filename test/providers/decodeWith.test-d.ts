// Types of decodeWith: a decoder writes ProviderEvents only, a finish only through finish(), and the operator
// reads the decoder's payloads (or the end marker) and emits ProviderEvents.
import type { ProviderEvent } from 'cleanturn';
import { type Decoder, type DecoderSink, decodeWith, openaiChat } from 'cleanturn/providers';
import type { Observable, OperatorFunction } from 'rxjs';
import { expectTypeOf, test } from 'vitest';
import { type DecodeResult, type DecoderFactory, decodeAll } from '../../src/providers/decodeWith.js';
import type { OpenAIChatInput } from '../../src/providers/openaiChat.js';
import type { FinishEvent } from '../../src/types.js';

type Line = { text?: string };

test('the operator reads payloads or the end marker and emits provider events', () => {
  const operator = decodeWith<Line>({ name: 'lines' }, (sink) => ({
    next: (line) => line.text !== undefined && sink.event({ type: 'text', text: line.text }),
  }));
  expectTypeOf(operator).toEqualTypeOf<OperatorFunction<Line | string, ProviderEvent>>();
  expectTypeOf(openaiChat()).toEqualTypeOf<OperatorFunction<OpenAIChatInput, ProviderEvent>>();
  expectTypeOf<ReturnType<typeof operator>>().toEqualTypeOf<Observable<ProviderEvent>>();
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
