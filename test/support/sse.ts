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

/** The parsed JSON `data` payloads of a transcript; `[DONE]` sentinels are skipped. */
function ssePayloads(text: string): unknown[] {
  return parseSse(text)
    .filter((event) => event.data !== '[DONE]')
    .map((event) => JSON.parse(event.data) as unknown);
}

/** The parsed JSON `data` payloads of a transcript file; `[DONE]` sentinels are skipped. */
export function readSseJson(path: string): unknown[] {
  return ssePayloads(readFileSync(path, 'utf8'));
}

/**
 * The payloads of a fixture file: one JSON value a line (`.jsonl`), or the `data` payloads of an SSE transcript
 * (`[DONE]` sentinels skipped). A Gemini stream can end with a raw JSON error object that is not SSE (no `data:`
 * prefix, pretty-printed over several lines): like a careful transport, this parses what follows the last SSE event
 * as JSON when it starts with `{`, and appends it.
 */
export function readPayloads(path: string): unknown[] {
  const body = readFileSync(path, 'utf8');
  if (path.endsWith('.jsonl')) {
    return body
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as unknown);
  }
  const tail = body.search(/^\{/m);
  if (tail === -1) return ssePayloads(body);
  return [...ssePayloads(body.slice(0, tail)), JSON.parse(body.slice(tail)) as unknown];
}
