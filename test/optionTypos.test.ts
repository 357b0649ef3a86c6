// Options of the wrong shape are refused when the operator is made, not silently ignored: a misspelt check, an
// array of options, a Map of timers, a jitter that does not exist.
import { backoff, requireUsable, UsageError } from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import { streamTurn } from 'cleanturn/transport';
import { describe, expect, it } from 'vitest';

describe('misspelt or misshapen options', () => {
  it('requireUsable: a key it does not have, or an array', () => {
    expect(() => requireUsable({ emtpy: false } as never)).toThrow(UsageError);
    expect(() => requireUsable({ emtpy: false } as never)).toThrow(/^requireUsable: options has no "emtpy"/);
    expect(() => requireUsable([] as never)).toThrow(/^requireUsable: options must be an object of checks/);
  });

  it('streamTurn: usable with a misspelt check', () => {
    expect(() =>
      streamTurn({
        turnId: 't',
        adapter: openaiChat(),
        request: () => 'http://127.0.0.1:9/',
        usable: { emtpy: false } as never,
      }),
    ).toThrow(/^streamTurn: usable\.options has no "emtpy"/);
  });

  it('streamTurn: timeout that is not a plain object', () => {
    for (const timeout of [new Map([['totalMs', 5]]), new Date()])
      expect(() =>
        streamTurn({
          turnId: 't',
          adapter: openaiChat(),
          request: () => 'http://127.0.0.1:9/',
          timeout: timeout as never,
        }),
      ).toThrow(/^streamTurn: timeout must be an object/);
  });

  it('backoff: a jitter that does not exist', () => {
    expect(() => backoff({ jitter: 'bogus' as never })).toThrow(/jitter must be 'full', 'equal' or 'none'/);
  });
});
