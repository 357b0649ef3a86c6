// An input that is not a payload is named by what it is in the error's message: `null` is null, not an object.
import { ProviderError } from 'cleanturn/providers';
import { describe, expect, it } from 'vitest';
import { decodeAll } from '../../src/providers/decodeWith.js';

const lines = { name: 'lines', endMarker: '[DONE]' };
const ignore = () => ({ next() {} });

describe('decodeWith: an input that is not a payload', () => {
  // biome-ignore format: a table
  const inputs: [string, unknown, string][] = [
    ['null',           null,              'got null'],
    ['an array',       [{ text: 'Ref' }], 'got an array'],
    ['a number',       42,                'got number'],
    ['another string', 'data: Refund',    'got string'],
  ];
  it.each(inputs)('%s is named as it is', (_what, input, got) => {
    const { error } = decodeAll(lines, ignore, [input as never]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ code: 'not-a-payload', operator: 'lines' });
    expect((error as Error).message).toContain(`expected a parsed payload (an object) or '[DONE]', ${got};`);
  });
});
