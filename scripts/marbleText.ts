// Renders marble specs as text diagrams with a legend: the same source as the tests run.
import type { MarbleCase, MarbleSpec } from 'cleanturn/testing';

/** A short human description of one event of a diagram. */
export function describeValue(value: unknown): string {
  if (value instanceof Error) return `error: ${value.name}${value.message ? ` (${value.message})` : ''}`;
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  const e = value as Record<string, unknown>;
  const attempt = typeof e.attempt === 'number' ? `, attempt ${e.attempt}` : '';
  switch (e.type) {
    case 'text':
      return `text ${JSON.stringify(e.text)}${attempt}`;
    case 'tool-call':
      return `tool-call ${e.id} ${e.name}(${JSON.stringify(e.args)})${attempt}${typeof e.effectKey === 'string' ? `, key ${e.effectKey}` : ''}`;
    case 'tool-call-delta':
      return `tool-call-delta #${e.index}${e.id ? ` ${e.id}` : ''}${e.name ? ` ${e.name}` : ''} ${JSON.stringify(e.argsDelta)}${attempt}`;
    case 'usage':
      return `usage in ${e.inputTokens ?? '?'} / out ${e.outputTokens ?? '?'}${attempt}`;
    case 'finish':
      return `finish ${e.reason}${attempt}`;
    case 'retry':
      return `retry ${JSON.stringify(e.reason)}${attempt}`;
    case 'reset':
      return `reset to attempt ${e.attempt} (${e.reason})`;
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

function legend(
  diagram: string,
  values: Readonly<Record<string, unknown>> | undefined,
  error: unknown,
): string[] {
  const lines: string[] = [];
  const seen = new Set<string>();
  for (const ch of diagram) {
    if (seen.has(ch)) continue;
    seen.add(ch);
    if (ch === '#' && error !== undefined) lines.push(`  # = ${describeValue(error)}`);
    else if (values && ch in values) lines.push(`  ${ch} = ${describeValue(values[ch])}`);
  }
  return lines;
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

/** The first case of a spec (its headline picture), as a fenced text block with its title. */
export function renderSpecText(spec: MarbleSpec, which = 0): string {
  const c = spec.cases[which];
  if (c === undefined) throw new Error(`${spec.name} has no case ${which}`);
  return `${c.title}:\n\n\`\`\`text\n${renderCaseText(c)}\n\`\`\``;
}
