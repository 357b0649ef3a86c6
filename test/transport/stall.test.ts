// fromSSE's stall timer is not re-armed per read (that cost more than the parsing): it fires once per
// timeout and re-sets itself for what remains after the latest bytes. These tests pin the behaviour: a
// stream that keeps talking never stalls, however long it lasts, even inside one long event; a silent one does.
import { setTimeout as sleep } from 'node:timers/promises';
import { fromSSE, TransportError } from 'cleanturn/transport';
import { lastValueFrom, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/httpServer.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const encoder = new TextEncoder();

/** A fetch whose body sends `pieces` events, one every `gapMs`, then stays silent (`hangAtEnd`) or ends. */
function pacedFetch(pieces: number, gapMs: number, hangAtEnd: boolean): typeof fetch {
  return async (_input, init) => {
    let sent = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === pieces) {
          if (!hangAtEnd) controller.close();
          return new Promise<void>(() => {}); // silence: never another piece
        }
        return new Promise<void>((resolve) => {
          timer = setTimeout(
            () => {
              controller.enqueue(encoder.encode(`data: ${sent++}\n\n`));
              resolve();
            },
            sent === 0 ? 0 : gapMs,
          );
        });
      },
      cancel() {
        clearTimeout(timer);
      },
    });
    init?.signal?.addEventListener('abort', () => clearTimeout(timer));
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  };
}

describe('fromSSE stall timeout', () => {
  it('does not stall a stream whose gaps are shorter than the timeout, however long it lasts', async () => {
    // 30 events 40 ms apart: about 1.2 s in all, twice the 600 ms timeout, with 15× margin on every gap.
    const messages = await lastValueFrom(
      fromSSE(() => 'https://stall.invalid/', { fetch: pacedFetch(30, 40, false), stallTimeout: 600 }).pipe(
        toArray(),
      ),
    );
    expect(messages.map((m) => m.data)).toEqual(Array.from({ length: 30 }, (_, i) => String(i)));
  });

  it('stalls a stream that goes silent after some events, with the events delivered first', async () => {
    const seen: string[] = [];
    const error = await new Promise((resolve) => {
      fromSSE(() => 'https://stall.invalid/', {
        fetch: pacedFetch(3, 10, true),
        stallTimeout: 600,
      }).subscribe({
        next: (m) => seen.push(m.data),
        error: resolve,
        complete: () => resolve('completed'),
      });
    });
    expect(seen).toEqual(['0', '1', '2']);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'stall' });
  });

  it('counts bytes, not only whole events: a 100 KB event that arrives slowly is no stall', async () => {
    // 100 pieces of 1 KB, 20 ms apart: 2 s for one event, twice the 1 s timeout, with 50× margin on every gap.
    const payload = 'p'.repeat(100 * 1024);
    const body = `data: ${payload}\n\n`;
    server = await startServer([
      {
        body: '',
        stream: async function* () {
          for (let offset = 0; offset < body.length; offset += 1024) {
            if (offset > 0) await sleep(20);
            yield body.slice(offset, offset + 1024);
          }
        },
      },
    ]);
    const url = server.url;
    const messages = await lastValueFrom(fromSSE(() => url, { stallTimeout: 1_000 }).pipe(toArray()));
    expect(messages.map((m) => m.data.length)).toEqual([payload.length]);
  });
});
