import { assembleToolCalls, CleanturnError, isRetryable, type ProviderEvent, TurnError } from 'cleanturn';
import { at, call, delta, finish, reset, retrying, text, usage } from 'cleanturn/testing';
import { concat, EMPTY, from, type Observable, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';

const newScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/** What a synchronous source piped through the operator produced. */
interface Outcome {
  values: unknown[];
  error?: unknown;
  completed: boolean;
}

/** Pipes `events` (then `tail`, if given) synchronously through assembleToolCalls. */
function assemble(events: readonly { type: string }[], tail: Observable<never> = EMPTY): Outcome {
  const outcome: Outcome = { values: [], completed: false };
  concat(from(events), tail)
    .pipe(assembleToolCalls())
    .subscribe({
      next: (value) => outcome.values.push(value),
      error: (error) => {
        outcome.error = error;
      },
      complete: () => {
        outcome.completed = true;
      },
    });
  return outcome;
}

describe('assembleToolCalls', () => {
  it('joins interleaved fragments of parallel calls and emits each call when its arguments close', () => {
    // biome-ignore format: an aligned value table
    const values = {
      a: delta(0, '{"order_id":', { id: 'c1', name: 'lookup_order' }),
      b: delta(1, '{"query":',    { id: 'c2', name: 'search_faq' }),
      c: delta(0, '"ORD-7781"}'),
      d: delta(1, '"refunds"}'),
      t: text('Let me check.'),
      f: finish('tool-calls'),
    };
    // biome-ignore format: an aligned value table
    const expectedValues = {
      A: call('c1', 'lookup_order', { order_id: 'ORD-7781' }),
      B: call('c2', 'search_faq',   { query: 'refunds' }),
      t: values.t,
      f: values.f,
    };
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -a-b-c-d-t-f-|', values);
      const sourceSubs = '  ^------------!';
      const expected = '    -----A-B-t-f-|';

      expectObservable(source.pipe(assembleToolCalls())).toBe(expected, expectedValues);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('orders calls by their first fragment, not by index', () => {
    const out = assemble([
      delta(1, '{}', { id: 'c2', name: 'second' }),
      delta(0, '{}', { id: 'c1', name: 'first' }),
      finish(),
    ]);
    expect(out.values).toEqual([call('c2', 'second', {}), call('c1', 'first', {}), finish()]);
  });

  it('takes arguments that arrive whole in the first fragment', () => {
    const out = assemble([
      delta(0, '{"order_id":"ORD-7781","amount":"full"}', { id: 'c1', name: 'issue_refund' }),
      finish('tool-calls'),
    ]);
    expect(out.values).toEqual([
      call('c1', 'issue_refund', { order_id: 'ORD-7781', amount: 'full' }),
      finish('tool-calls'),
    ]);
    expect(out.completed).toBe(true);
  });

  it('joins many small fragments, including empty ones, in arrival order', () => {
    const json = JSON.stringify({ note: 'späte Lieferung 📦', items: [1, 2, 3] });
    const pieces = [...json].map((ch) => delta(0, ch));
    const out = assemble([delta(0, '', { id: 'c1', name: 'note' }), ...pieces, delta(0, ''), finish()]);
    expect(out.values).toEqual([call('c1', 'note', JSON.parse(json)), finish()]);
  });

  it('reads empty arguments as {}', () => {
    const out = assemble([
      delta(0, '', { id: 'c1', name: 'list_orders' }),
      delta(1, '  \n', { id: 'c2', name: 'whoami' }),
      finish(),
    ]);
    expect(out.values).toEqual([call('c1', 'list_orders', {}), call('c2', 'whoami', {}), finish()]);
  });

  it('keeps non-object JSON arguments as parsed', () => {
    const out = assemble([delta(0, '[1,"two",null]', { id: 'c1', name: 'f' }), finish()]);
    expect(out.values).toEqual([call('c1', 'f', [1, 'two', null]), finish()]);
  });

  it('starts a new call when a fragment brings a new id at an index that already has a call', () => {
    const out = assemble([
      delta(0, '{"order_id":"ORD-1"}', { id: 'c1', name: 'lookup_order' }),
      delta(0, '{"order_id":', { id: 'c2', name: 'issue_refund' }),
      delta(0, '"ORD-1"}'),
      finish('tool-calls'),
    ]);
    expect(out.values).toEqual([
      call('c1', 'lookup_order', { order_id: 'ORD-1' }),
      call('c2', 'issue_refund', { order_id: 'ORD-1' }),
      finish('tool-calls'),
    ]);
  });

  it('continues the call when a later fragment repeats its id', () => {
    const out = assemble([
      delta(0, '{"a":', { id: 'c1', name: 'f' }),
      delta(0, '1}', { id: 'c1' }),
      finish(),
    ]);
    expect(out.values).toEqual([call('c1', 'f', { a: 1 }), finish()]);
  });

  it('takes id and name from the first fragment that carries them', () => {
    const out = assemble([
      delta(0, '{"a":'),
      delta(0, '1', { name: 'f' }),
      delta(0, '}', { id: 'c9', name: 'ignored' }),
      finish(),
    ]);
    expect(out.values).toEqual([call('c9', 'f', { a: 1 }), finish()]);
  });

  it('starts over after a finish: the same index in the next batch is a new call', () => {
    const out = assemble([
      delta(0, '{"q":1}', { name: 'first' }),
      finish('tool-calls'),
      delta(0, '{"q":2}', { name: 'second' }),
      finish('stop'),
    ]);
    expect(out.values).toEqual([
      call('index-0', 'first', { q: 1 }),
      finish('tool-calls'),
      call('index-0', 'second', { q: 2 }),
      finish('stop'),
    ]);
  });

  for (const [what, boundary] of [
    ['a retry', retrying('connection reset')],
    ['a reset', reset(2, 'connection reset')],
  ] as const) {
    it(`discards the open fragments at ${what}`, () => {
      const out = assemble([
        delta(0, '{"order_id":"ORD-', { id: 'c1', name: 'issue_refund' }),
        boundary,
        // Attempt 2 streams the call again at the same index, without an id.
        delta(0, '{"order_id":"ORD-7781"}', { name: 'issue_refund' }),
        finish('tool-calls'),
      ]);
      expect(out.error).toBeUndefined();
      expect(out.values).toEqual([
        boundary,
        call('index-0', 'issue_refund', { order_id: 'ORD-7781' }),
        finish('tool-calls'),
      ]);
    });
  }

  it('emits no incomplete call when the source completes without a finish', () => {
    const out = assemble([
      text('Refunding'),
      delta(0, '{"order_id":"ORD-7781"', { id: 'c1', name: 'issue_refund' }),
    ]);
    expect(out).toEqual({ values: [text('Refunding')], completed: true });
  });

  it('emits no incomplete call when the source errors without a finish', () => {
    const cut = new Error('socket closed');
    const out = assemble(
      [delta(0, '{"order_id":"ORD-', { id: 'c1', name: 'issue_refund' })],
      throwError(() => cut),
    );
    expect(out).toEqual({ values: [], error: cut, completed: false });
  });

  it('emits a call whose arguments closed even if its attempt never finishes (holding it is bufferUntilFinish’s job)', () => {
    const out = assemble([
      delta(0, '{"order_id":"ORD-7781"}', { id: 'c1', name: 'issue_refund' }),
      text('Refunding'),
    ]);
    expect(out).toEqual({
      values: [call('c1', 'issue_refund', { order_id: 'ORD-7781' }), text('Refunding')],
      completed: true,
    });
  });

  it('sees through braces and escaped quotes inside strings when deciding that arguments closed', () => {
    const args = { note: 'a } and a " and a \\ and {[', n: [1, { m: '}' }] };
    const json = JSON.stringify(args);
    const pieces = [...json].map((ch, i) => delta(0, ch, i === 0 ? { id: 'c1', name: 'note' } : undefined));
    const out = assemble([...pieces.slice(0, -1), text('not yet'), ...pieces.slice(-1), text('after')]);
    expect(out.values).toEqual([text('not yet'), call('c1', 'note', args), text('after')]);
  });

  it('errors when non-whitespace text follows arguments that already closed', () => {
    const out = assemble([
      delta(0, '{"a":1}', { id: 'c1', name: 'f' }),
      delta(0, '  '),
      delta(0, '{"b":2}'),
      finish(),
    ]);
    expect(out.values).toEqual([call('c1', 'f', { a: 1 })]);
    expect(out.error).toBeInstanceOf(TurnError);
    expect(out.error).toMatchObject({ code: 'tool-call-invalid-json', argsText: '{"a":1}{"b":2}' });
  });

  it('errors with a retryable tool-call TurnError for arguments that are not valid JSON', () => {
    const out = assemble([
      delta(0, '{}', { id: 'c0', name: 'fine' }),
      delta(1, '{"order_id":"ORD-', { id: 'c1', name: 'issue_refund' }),
      delta(1, '77'),
      finish('length'),
    ]);
    expect(out.values).toEqual([call('c0', 'fine', {})]);
    expect(out.completed).toBe(false);
    const error = out.error as TurnError;
    expect(error).toBeInstanceOf(TurnError);
    expect(error).toBeInstanceOf(CleanturnError);
    expect(error).toMatchObject({
      name: 'TurnError',
      code: 'tool-call-invalid-json',
      index: 1,
      id: 'c1',
      toolName: 'issue_refund',
      argsText: '{"order_id":"ORD-77',
      retryable: true,
    });
    expect(error.cause).toBeInstanceOf(SyntaxError);
    expect(error.message).toContain('issue_refund');
    expect(isRetryable(error)).toBe(true);
  });

  it('errors with problem missing-name for a call that never named its tool', () => {
    const out = assemble([delta(2, '{"a":1}', { id: 'c3' }), finish()]);
    expect(out.values).toEqual([]);
    expect(out.error).toBeInstanceOf(TurnError);
    expect(out.error).toMatchObject({
      code: 'tool-call-missing-name',
      index: 2,
      id: 'c3',
      toolName: undefined,
      argsText: '{"a":1}',
      retryable: true,
    });
  });

  it('unsubscribes the source when it errors at the finish', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const values = { a: delta(0, '{', { id: 'c1', name: 'f' }), f: finish(), t: text('never seen') };
      const source = cold(' -a-f-t-|', values);
      const sourceSubs = '  ^--!';
      const expected = '    ---#';

      expectObservable(source.pipe(assembleToolCalls())).toBe(
        expected,
        undefined,
        expect.objectContaining({ name: 'TurnError', code: 'tool-call-invalid-json', argsText: '{' }),
      );
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('names a call without an id index-<n>', () => {
    const out = assemble([delta(3, '{}', { name: 'whoami' }), finish()]);
    expect(out.values).toEqual([call('index-3', 'whoami', {}), finish()]);
  });

  it("carries the first fragment's other fields (such as attempt) over to the call", () => {
    const out = assemble([
      at(2, delta(0, '{"a":', { id: 'c1', name: 'f' })),
      at(3, delta(0, '1}')),
      at(2, finish()),
    ]);
    expect(out.values).toEqual([at(2, call('c1', 'f', { a: 1 })), at(2, finish())]);
  });

  it('passes whole tool-call events and everything else through at once', () => {
    // biome-ignore format: an aligned value table
    const values: Record<string, ProviderEvent> = {
      k: call('c7', 'issue_refund', { order_id: 'ORD-7781' }),
      t: text('Refund started.'),
      u: usage(120, 30),
      r: retrying('connection reset'),
      f: finish(),
    };
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -t-k-u-r-t-f-|', values);
      const sourceSubs = '  ^------------!';
      const expected = '    -t-k-u-r-t-f-|';

      expectObservable(source.pipe(assembleToolCalls())).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('never mutates the fragments it reads', () => {
    const first = at(1, delta(0, '{"a":', { id: 'c1', name: 'f' }));
    const frozen = structuredClone(first);
    assemble([first, at(1, delta(0, '1}')), at(1, finish())]);
    expect(first).toEqual(frozen);
  });
});
