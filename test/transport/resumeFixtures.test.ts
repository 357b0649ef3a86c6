// resumeResponse over the recorded OpenAI Responses streams (test/fixtures/openai-responses), served by a real
// server on 127.0.0.1 and read with fromSSE: it checks every event's sequence_number, and a stream whose numbers run
// from 0 without a hole reads exactly as through the adapter alone. The one recording whose numbers skip (and
// repeat) fails with a gap: resumeResponse, unlike the adapter, cannot trust a stream with a hole.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openaiResponses } from 'cleanturn/providers';
import { fromSSE, resumeResponse, sseJson } from 'cleanturn/transport';
import { EMPTY, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { OpenAIResponsesEvent } from '../../src/providers/openaiResponses.js';
import { resumeError } from '../../src/transport/errors.js';
import { startServer, type TestServer } from '../support/httpServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';

const dir = join(import.meta.dirname, '../fixtures/openai-responses');
const names = readdirSync(dir).filter((name) => name.endsWith('.sse'));

let server: TestServer | undefined;
expectNoLeftoverHandles(async () => {
  await server?.close();
  server = undefined;
});

/** Every event of a stream, then how it ended. */
async function outcome(stream: Observable<unknown>): Promise<{ events: unknown[]; error: unknown }> {
  const events: unknown[] = [];
  const error = await new Promise<unknown>((resolve) => {
    stream.subscribe({ next: (e) => events.push(e), error: resolve, complete: () => resolve(undefined) });
  });
  return { events, error };
}

describe('resumeResponse over every recorded Responses stream', () => {
  it('has the recordings', () => {
    expect(names.length).toBeGreaterThan(20);
  });

  it.each(names)('%s', async (name) => {
    const body = readFileSync(join(dir, name));
    server = await startServer([{ body, chunkSize: 97 }]);
    const url = `${server.url}/v1/responses`;
    const request = () => url;
    const alone = await outcome(fromSSE(request).pipe(sseJson<OpenAIResponsesEvent>(), openaiResponses()));
    const resumed = await outcome(
      resumeResponse({
        create: () => fromSSE(request).pipe(sseJson()),
        retrieve: () => EMPTY,
        adapter: openaiResponses(),
        // A recording that stops before its end (truncated.sse) is not resumed: it ends as the adapter ends it.
        maxResumes: 0,
      }),
    );
    if (name === 'sequence-gaps-and-replay.sse') {
      expect(resumed.error).toEqual(
        resumeError('gap', 'resp_7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a', 0, { next: 2, resumed: false }),
      );
      expect(resumed.events).toEqual([{ type: 'resumable', responseId: expect.stringMatching(/^resp_/) }]);
      // The adapter alone reads it (it drops the replays and lets the holes pass).
      expect(alone.error).toBeUndefined();
      return;
    }
    // The same events, after one `resumable` with the first event that names the response.
    const resumable = resumed.events.filter((e) => (e as { type?: unknown }).type === 'resumable');
    expect(resumable).toEqual([{ type: 'resumable', responseId: expect.stringMatching(/^resp_/) }]);
    expect(resumed.events[0]).toEqual(resumable[0]);
    expect({ ...resumed, events: resumed.events.slice(1) }).toEqual(alone);
    // Each recording yields something: events, or the error it was recorded for.
    expect(alone.events.length > 0 || alone.error !== undefined).toBe(true);
  });
});
