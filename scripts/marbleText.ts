// Renders marble specs as text diagrams with a legend: the same source as the tests run.
import type { MarbleCase, MarbleSpec } from '../src/testing/marbles.js';

/** A short human description of one event of a diagram; an event of a run's step says which. */
export function describeValue(value: unknown): string {
  const described = describeEvent(value);
  if (typeof value !== 'object' || value === null || value instanceof Error) return described;
  const { type, step } = value as { type?: unknown; step?: unknown };
  return typeof step === 'number' && type !== 'step-end' ? `${described}, step ${step}` : described;
}

/** An error's class and, for one of ours, its code: `TurnError missing-finish`, `TypeError`. */
function errorLabel(error: Error): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? `${error.name} ${code}` : error.name;
}

/** {@link describeValue} without the step. */
function describeEvent(value: unknown): string {
  if (value instanceof Error)
    return `error: ${errorLabel(value)}${value.message ? ` (${value.message})` : ''}`;
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  const e = value as Record<string, unknown>;
  const angular = describeHttpClientValue(e);
  if (angular !== undefined) return angular;
  const attempt = typeof e.attempt === 'number' ? `, attempt ${e.attempt}` : '';
  switch (e.type) {
    case 'text':
      return `text ${JSON.stringify(e.text)}${attempt}`;
    case 'reasoning':
      return `reasoning ${JSON.stringify(e.text)}${attempt}`;
    case 'tool-call':
      // A provider's own part may share the name (the AI SDK's tool-call part): show it as it is.
      if (typeof e.id !== 'string' || typeof e.name !== 'string') return JSON.stringify(value);
      return `tool-call ${e.id} ${e.name}(${JSON.stringify(e.args)})${attempt}${typeof e.effectKey === 'string' ? `, key ${e.effectKey}` : ''}`;
    case 'tool-call-delta':
      return `tool-call-delta #${e.index}${e.id ? ` ${e.id}` : ''}${e.name ? ` ${e.name}` : ''} ${JSON.stringify(e.argsDelta)}${attempt}`;
    case 'usage': {
      const cached = typeof e.cachedInputTokens === 'number' ? ` (${e.cachedInputTokens} cached)` : '';
      const reasoning = typeof e.reasoningTokens === 'number' ? ` (${e.reasoningTokens} reasoning)` : '';
      return `usage in ${e.inputTokens ?? '?'}${cached} / out ${e.outputTokens ?? '?'}${reasoning}${attempt}`;
    }
    case 'finish': {
      if (typeof e.reason !== 'string') return JSON.stringify(value);
      const paused = e.paused === true ? ' (paused)' : '';
      const id = typeof e.responseId === 'string' ? `, response ${e.responseId}` : '';
      return `finish ${e.reason}${paused}${attempt}${id}${describeOutput(e.output)}`;
    }
    case 'retry':
      return `retry ${JSON.stringify(e.reason)}${attempt}${describeFacts(e)}`;
    case 'reset':
      return `reset to attempt ${e.attempt} (${e.reason})${describeFacts(e)}`;
    case 'tool-result': {
      const call = (e.call ?? {}) as Record<string, unknown>;
      const error = (e.error ?? {}) as Record<string, unknown>;
      const outcome =
        'result' in e && e.result !== undefined
          ? ` → ${JSON.stringify(e.result)}`
          : 'error' in e
            ? ` → ${error.name}: ${error.message}`
            : '';
      return `tool-result ${e.outcome} ${call.id} ${call.name}${outcome}, key ${e.effectKey}`;
    }
    case 'step-end': {
      const calls = Array.isArray(e.results) ? `, ${e.results.length} result(s)` : '';
      return `step-end ${e.step}: next ${e.next}${calls}${typeof e.end === 'string' ? `, run ends (${e.end})` : ''}`;
    }
    default:
      if ('text' in e && 'attempts' in e) {
        const attempts = (e.attempts as { attempt: number; outcome: string }[]).map(
          (a) => `#${a.attempt} ${a.outcome}`,
        );
        return `state: attempt ${e.attempt}, text ${JSON.stringify(e.text)}, ${(e.toolCalls as unknown[]).length} call(s), ${attempts.join(', ')}`;
      }
      return JSON.stringify(value);
  }
}

/** The wait and the count of a retry or reset, when it carries them: `, in 3 ms (retry 1 of 2)`. */
function describeFacts(e: Record<string, unknown>): string {
  const wait = typeof e.delay === 'number' ? `, in ${e.delay} ms` : '';
  if (typeof e.retryCount !== 'number') return wait;
  const cap = typeof e.maxRetries === 'number' ? ` of ${e.maxRetries}` : '';
  return `${wait} (retry ${e.retryCount}${cap})`;
}

/**
 * A finish's provider output, short: its format and the kinds of its entries in order (`, output
 * anthropic-messages [thinking, text, tool_use]`); the full value is in the spec.
 */
function describeOutput(output: unknown): string {
  if (typeof output !== 'object' || output === null) return '';
  const o = output as Record<string, unknown>;
  const list = Object.values(o).find(Array.isArray) as unknown[] | undefined;
  const kinds = (list ?? []).map((entry) => {
    if (typeof entry !== 'object' || entry === null) return typeof entry;
    const r = entry as Record<string, unknown>;
    if (typeof r.type === 'string') return r.type;
    const keys = Object.keys(r).filter((k) => k !== 'thoughtSignature' && k !== 'thought');
    const thought = r.thought === true ? 'thought ' : '';
    const signed = typeof r.thoughtSignature === 'string' ? ' (signed)' : '';
    return `${thought}${keys[0] ?? 'part'}${signed}`;
  });
  return `, output ${String(o.format)}${list === undefined ? '' : ` [${kinds.join(', ')}]`}`;
}

/**
 * An event of Angular's HttpClient (its `type` is a number of `HttpEventType`) or its `HttpErrorResponse`, by
 * Angular's names (the httpClientSSE spec); `undefined` for anything else.
 */
function describeHttpClientValue(e: Record<string, unknown>): string | undefined {
  const headers = e.headers === undefined ? '' : `, headers ${JSON.stringify(e.headers)}`;
  if (e.name === 'HttpErrorResponse') {
    const error =
      e.error instanceof Error ? `${e.error.name}: ${e.error.message}` : JSON.stringify(e.error ?? null);
    return `HttpErrorResponse ${e.status} ${e.statusText}, error ${error}${headers}`;
  }
  switch (typeof e.type === 'number' ? e.type : undefined) {
    case 0:
      return 'HttpSentEvent';
    case 2:
      return `HttpHeaderResponse ${e.status} ${e.statusText}${headers}`;
    case 3:
      return `HttpDownloadProgressEvent, partialText ${JSON.stringify(e.partialText)}`;
    case 4:
      return `HttpResponse ${e.status} ${e.statusText}${headers}, body ${JSON.stringify(e.body)}`;
    default:
      return undefined;
  }
}

/** What one symbol of a diagram stands for. */
export interface LegendEntry {
  /** The letter, or `#` for the error. */
  symbol: string;
  /** The event (or, for `#`, the error) it stands for. */
  value: unknown;
  /** `describeValue(value)`. */
  description: string;
}

/** The symbols of one diagram that stand for something, in order of first appearance. */
export function legendEntries(
  diagram: string,
  values: Readonly<Record<string, unknown>> | undefined,
  error: unknown,
): LegendEntry[] {
  const entries: LegendEntry[] = [];
  const seen = new Set<string>();
  for (const ch of diagram) {
    if (seen.has(ch)) continue;
    seen.add(ch);
    if (ch === '#' && error !== undefined)
      entries.push({ symbol: ch, value: error, description: describeValue(error) });
    else if (values && ch in values)
      entries.push({ symbol: ch, value: values[ch], description: describeValue(values[ch]) });
  }
  return entries;
}

function legend(
  diagram: string,
  values: Readonly<Record<string, unknown>> | undefined,
  error: unknown,
): string[] {
  return legendEntries(diagram, values, error).map((e) => `  ${e.symbol} = ${e.description}`);
}

/** One case as a text picture: source, operator, result, and what each letter stands for. */
export function renderCaseText(c: MarbleCase): string {
  const sources = typeof c.source === 'string' ? [c.source] : c.source;
  const lines: string[] = [];
  sources.forEach((s, i) => {
    lines.push(`${sources.length > 1 ? `source ${i + 1}:` : 'source:'}`.padEnd(10) + s);
  });
  lines.push(`${' '.repeat(10)}${c.label}`);
  lines.push(`${'result:'.padEnd(10)}${c.expected}`);
  if (c.unsubscribe) lines.push(`${'unsub:'.padEnd(10)}${c.unsubscribe}`);
  const where = [
    ...new Set([
      ...sources.flatMap((s) => legend(s, c.values, c.error)),
      ...legend(c.expected, c.expectedValues, c.expectedError),
    ]),
  ];
  if (where.length > 0) lines.push('', 'where', ...where);
  return lines.join('\n');
}

/** Escapes a text for the alt text of a Markdown image. */
function altText(text: string): string {
  return text.replace(/[\\[\]]/g, (c) => `\\${c}`);
}

/**
 * One case of a spec (by default the first, its headline picture) with its title: the SVG picture at `image`
 * (a path relative to the Markdown file), if given, above the text diagram in a fenced block.
 */
export function renderSpecText(spec: MarbleSpec, which = 0, image?: string): string {
  const c = spec.cases[which];
  if (c === undefined) throw new Error(`${spec.name} has no case ${which}`);
  const picture = image === undefined ? '' : `![${altText(c.title)}](${image})\n\n`;
  return `${c.title}:\n\n${picture}\`\`\`text\n${renderCaseText(c)}\n\`\`\``;
}
