// A finished turn is kept, whatever the connection does after the finish. OpenAI sends `finish_reason` and
// `[DONE]` (no usage chunk without `include_usage`); some servers and proxies then reset the connection or leave it
// open. The finish is known at `[DONE]`: neither a reset nor silence afterwards may abort or retry the attempt.
import { openaiChat } from 'cleanturn/providers';
import { fromSSE, sseJson, streamTurn } from 'cleanturn/transport';
import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { chatTranscript } from '../support/chatTranscript.js';
import { type ScriptedResponse, startServer, type TestServer } from '../support/httpServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { collectTurn } from './collectTurn.js';

const text = 'Your refund for ORD-7781 has started.';
// No usage chunk: the finish chunk, then `[DONE]`.
const noUsage = chatTranscript([{ text }]);
const withUsage = chatTranscript([{ text }], { usage: { prompt: 12, completion: 9 } });

let server: TestServer | undefined;
expectNoLeftoverHandles(async () => {
  await server?.close();
  server = undefined;
});

/** One turn against `first` (then a whole second attempt, which must not be asked for); two attempts at most. */
async function turnAgainst(first: ScriptedResponse, stallTimeout: number) {
  server = await startServer([first, { body: noUsage.body }]);
  const started = performance.now();
  const turn = await collectTurn(server.url, { retry: 1, stallTimeout });
  return { turn, elapsed: performance.now() - started };
}

describe('after the finish, the connection cannot fail the turn', () => {
  it('finish_reason and [DONE], then the socket is reset: the turn completes in one attempt', async () => {
    const { turn } = await turnAgainst({ body: noUsage.body, destroyAfter: noUsage.body.length }, 5_000);
    expect(turn.error).toBeUndefined();
    expect(turn.text).toBe(text);
    expect(turn.resets).toEqual([]);
    expect(server?.requests).toHaveLength(1);
    expect(turn.report?.outcome).toBe('completed');
    expect(turn.report?.attempts.map((a) => a.outcome)).toEqual(['completed']);
  });

  it('finish_reason and [DONE], then the connection stays open: the turn completes at once', async () => {
    // The stall timeout is long: the turn must end at [DONE], not when the silence after it becomes a stall.
    const { turn, elapsed } = await turnAgainst(
      { body: noUsage.body, stallAfter: noUsage.body.length },
      30_000,
    );
    expect(turn.error).toBeUndefined();
    expect(turn.text).toBe(text);
    expect(server?.requests).toHaveLength(1);
    expect(turn.report?.attempts.map((a) => a.outcome)).toEqual(['completed']);
    expect(elapsed).toBeLessThan(10_000); // a bound with a wide margin: the stall would take 30 s
    // The open connection was closed by the client when the attempt ended.
    for (let i = 0; i < 200 && server?.aborted === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(server?.aborted).toBe(1);
  });

  it('finish_reason and [DONE], then silence with a short stall timeout: no stall, no retry', async () => {
    const { turn } = await turnAgainst({ body: noUsage.body, stallAfter: noUsage.body.length }, 200);
    expect(turn.error).toBeUndefined();
    expect(server?.requests).toHaveLength(1);
  });

  it('the usage chunk, then silence without [DONE]: the released finish ends the attempt', async () => {
    const cut = withUsage.after('usage'); // everything but [DONE]
    const { turn, elapsed } = await turnAgainst({ body: withUsage.body, stallAfter: cut }, 30_000);
    expect(turn.error).toBeUndefined();
    expect(turn.text).toBe(text);
    expect(turn.report?.attempts[0]?.usage).toEqual({ inputTokens: 12, outputTokens: 9 });
    expect(server?.requests).toHaveLength(1);
    expect(elapsed).toBeLessThan(10_000);
  });

  it('the usage chunk, then a reset without [DONE]: completed, not retried', async () => {
    const { turn } = await turnAgainst(
      { body: withUsage.body, destroyAfter: withUsage.after('usage') },
      5_000,
    );
    expect(turn.error).toBeUndefined();
    expect(server?.requests).toHaveLength(1);
  });

  it('finish_reason, then a reset before [DONE] (the finish is not known to be final): retried', async () => {
    const { turn } = await turnAgainst({ body: noUsage.body, destroyAfter: noUsage.after('finish') }, 5_000);
    expect(turn.error).toBeUndefined();
    expect(turn.resets.map((r) => r.attempt)).toEqual([2]);
    expect(server?.requests).toHaveLength(2);
  });

  it('composed by hand: fromSSE → sseJson → openaiChat ends at [DONE] and closes the open request', async () => {
    server = await startServer([{ body: noUsage.body, stallAfter: noUsage.body.length }]);
    const url = server.url;
    const events = await lastValueFrom(
      fromSSE(() => url, { stallTimeout: 30_000 }).pipe(sseJson(), openaiChat(), toArray()),
    );
    expect(events.at(-1)).toMatchObject({ type: 'finish', reason: 'stop' });
    for (let i = 0; i < 200 && server?.aborted === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(server?.aborted).toBe(1);
  });

  it('streamTurn with the default stall timeout: a hang after [DONE] does not hold the turn', async () => {
    server = await startServer([{ body: noUsage.body, stallAfter: noUsage.body.length }]);
    const url = server.url;
    const events = await lastValueFrom(
      streamTurn({
        turnId: 'turn-1',
        adapter: openaiChat(),
        request: ({ signal }) => ({ url, init: { method: 'POST', signal } }),
      }).pipe(toArray()),
    );
    expect(events.at(-1)).toMatchObject({ type: 'finish', reason: 'stop', attempt: 1 });
  });
});
