// Reading SSE transcripts in tests, with the same well-kept parser the transport uses.
import { readFileSync } from 'node:fs';
import { createParser, type EventSourceMessage } from 'eventsource-parser';

/** The SSE events of a transcript, in order (comments dropped). */
export function parseSse(text: string): EventSourceMessage[] {
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => events.push(event) });
  parser.feed(text);
  parser.reset({ consume: true });
  return events;
}

/** The parsed JSON `data` payloads of a transcript file; `[DONE]` sentinels are skipped. */
export function readSseJson(path: string): unknown[] {
  return parseSse(readFileSync(path, 'utf8'))
    .filter((event) => event.data !== '[DONE]')
    .map((event) => JSON.parse(event.data) as unknown);
}
