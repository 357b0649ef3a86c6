// Builds OpenAI Chat Completions SSE transcripts for transport tests, and remembers where each event lies in
// the bytes so that a test can cut the stream at a named point.

export interface TranscriptCall {
  id: string;
  name: string;
  /** The JSON argument text, sent in `fragments` pieces. */
  args: string;
  fragments?: number;
}

export interface TranscriptPart {
  text?: string;
  call?: TranscriptCall;
}

export interface Transcript {
  body: Buffer;
  /** Byte offset right after each SSE event, with a label. */
  marks: { label: string; end: number }[];
  /** The byte offset right after the first event whose label starts with `label`. */
  after(label: string): number;
  /** The byte offset right before the first event whose label starts with `label`. */
  before(label: string): number;
}

const base = {
  id: 'chatcmpl-test',
  object: 'chat.completion.chunk',
  created: 1760000000,
  model: 'gpt-4o-2024-08-06',
};

function chunk(delta: Record<string, unknown>, finishReason: string | null = null): string {
  return JSON.stringify({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  });
}

/**
 * A whole attempt: the parts in order, then the finish chunk, an optional usage chunk and `[DONE]`.
 * Text parts are sent as given (one event each); calls as a start fragment plus `fragments` argument pieces.
 */
export function chatTranscript(
  parts: TranscriptPart[],
  options: { finish?: 'stop' | 'tool_calls'; usage?: { prompt: number; completion: number } } = {},
): Transcript {
  const events: { label: string; data: string }[] = [
    { label: 'role', data: chunk({ role: 'assistant', content: '' }) },
  ];
  let index = 0;
  for (const part of parts) {
    if (part.text !== undefined)
      events.push({ label: `text:${part.text}`, data: chunk({ content: part.text }) });
    if (part.call !== undefined) {
      const { id, name, args, fragments = 3 } = part.call;
      const i = index++;
      events.push({
        label: `call-start:${id}`,
        data: chunk({ tool_calls: [{ index: i, id, type: 'function', function: { name, arguments: '' } }] }),
      });
      const size = Math.ceil(args.length / fragments);
      for (let f = 0; f < fragments; f++) {
        const piece = args.slice(f * size, (f + 1) * size);
        const last = f === fragments - 1;
        events.push({
          label: last ? `call-end:${id}` : `call-args:${id}`,
          data: chunk({ tool_calls: [{ index: i, function: { arguments: piece } }] }),
        });
      }
    }
  }
  events.push({ label: 'finish', data: chunk({}, options.finish ?? (index > 0 ? 'tool_calls' : 'stop')) });
  if (options.usage) {
    events.push({
      label: 'usage',
      data: JSON.stringify({
        ...base,
        choices: [],
        usage: {
          prompt_tokens: options.usage.prompt,
          completion_tokens: options.usage.completion,
          total_tokens: options.usage.prompt + options.usage.completion,
        },
      }),
    });
  }
  events.push({ label: 'done', data: '[DONE]' });

  const pieces: Buffer[] = [];
  const marks: Transcript['marks'] = [];
  let offset = 0;
  for (const event of events) {
    const bytes = Buffer.from(`data: ${event.data}\n\n`, 'utf8');
    pieces.push(bytes);
    offset += bytes.length;
    marks.push({ label: event.label, end: offset });
  }
  const find = (label: string) => {
    const i = marks.findIndex((m) => m.label.startsWith(label));
    if (i < 0) throw new Error(`no event labelled ${label}`);
    return i;
  };
  return {
    body: Buffer.concat(pieces),
    marks,
    after: (label) => (marks[find(label)] as { end: number }).end,
    before: (label) => {
      const i = find(label);
      return i === 0 ? 0 : (marks[i - 1] as { end: number }).end;
    },
  };
}
