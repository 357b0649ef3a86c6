// Draws one marble case as an SVG picture, from the same spec data the tests run: source timeline(s), the
// operator in a box, the result timeline, and a legend of what each letter stands for. Pure and
// deterministic (no fonts are measured, no dates, no randomness), so committed pictures can be compared exactly.

import { defer, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { MarbleCase, MarbleSpec } from '../src/testing/marbles.js';
import { type MarbleEvent, type ParsedSubscription, parseMarbles, parseSubscription } from './marbleParse.js';
import { type LegendEntry, legendEntries, renderCaseText } from './marbleText.js';

/** Where the picture of case `index` of spec `name` lives, relative to the repository root. */
export function marbleSvgPath(name: string, index: number): string {
  return `docs/marbles/${name}-${index}.svg`;
}

// ---------------------------------------------------------------------------------------------------------
// What each event looks like

/** The kinds of event the pictures tell apart by colour. */
export type MarbleCategory =
  | 'text'
  | 'reasoning'
  | 'tool-call-delta'
  | 'tool-call'
  | 'tool-result'
  | 'usage'
  | 'finish'
  | 'retry'
  | 'reset'
  | 'state'
  | 'other';

interface MarbleStyle {
  fill: string;
  stroke: string;
  /** The colour of the letter. */
  ink: string;
  dashed?: boolean;
}

// Okabe–Ito colours: distinguishable with the common kinds of colour blindness.
const styles: Readonly<Record<MarbleCategory, MarbleStyle>> = {
  text: { fill: '#0072B2', stroke: '#005a8c', ink: '#ffffff' },
  reasoning: { fill: '#ffffff', stroke: '#0072B2', ink: '#005a8c', dashed: true },
  'tool-call-delta': { fill: '#F0E442', stroke: '#b8ad1a', ink: '#1f2328' },
  'tool-call': { fill: '#E69F00', stroke: '#a87400', ink: '#1f2328' },
  'tool-result': { fill: '#56B4E9', stroke: '#2f86b8', ink: '#1f2328' },
  usage: { fill: '#c8c8c8', stroke: '#8c959f', ink: '#1f2328' },
  finish: { fill: '#009E73', stroke: '#00724f', ink: '#ffffff' },
  retry: { fill: '#ffffff', stroke: '#D55E00', ink: '#b34d00', dashed: true },
  reset: { fill: '#D55E00', stroke: '#a34700', ink: '#ffffff' },
  state: { fill: '#CC79A7', stroke: '#9e4f7c', ink: '#ffffff' },
  other: { fill: '#ffffff', stroke: '#57606a', ink: '#1f2328' },
};

const eventTypes: Readonly<Record<string, MarbleCategory>> = {
  text: 'text',
  reasoning: 'reasoning',
  'tool-call-delta': 'tool-call-delta',
  'tool-call': 'tool-call',
  'tool-result': 'tool-result',
  usage: 'usage',
  finish: 'finish',
  retry: 'retry',
  reset: 'reset',
};

/** The colour class of an event: by its `type`; a turn state (from `accumulateTurn`) by its shape. */
export function categorize(value: unknown): MarbleCategory {
  if (typeof value !== 'object' || value === null) return 'other';
  const e = value as Record<string, unknown>;
  if (typeof e.type === 'string') return eventTypes[e.type] ?? 'other';
  if ('text' in e && 'attempts' in e) return 'state';
  return 'other';
}

/** The effect key an event carries, if any: shown as a badge with its first characters. */
function effectKeyOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const key = (value as Record<string, unknown>).effectKey;
  return typeof key === 'string' ? key : undefined;
}

// ---------------------------------------------------------------------------------------------------------
// The model: rows of events on one time axis

/** An event placed on the shared time axis. */
interface Placed extends MarbleEvent {
  value: unknown;
  /** Never happens: it comes after the subscription ended. */
  faded: boolean;
}

/** One timeline of the picture. */
interface Row {
  label: string;
  /** The frame the line starts in (its subscription), or `Infinity` if it was never subscribed. */
  start: number;
  /** Where the diagram stops counting: the frame after its last character. */
  end: number;
  /** An unsubscription before the diagram ends, or `Infinity`. */
  cut: number;
  /** Whether the cut comes before the events of its frame (a consumer's unsubscribe) or after them. */
  cutBefore: boolean;
  events: Placed[];
}

const asList = (x: string | readonly string[]): readonly string[] => (typeof x === 'string' ? [x] : x);

/** Runs the case in a `TestScheduler` to find when each source diagram was subscribed, as the tests see it. */
function measureSubscriptions(c: MarbleCase): ParsedSubscription[] | undefined {
  const diagrams = asList(c.source);
  try {
    const scheduler = new TestScheduler(() => undefined);
    const logs: { subscribedFrame: number; unsubscribedFrame: number }[][] = [];
    scheduler.run(({ cold, expectObservable }) => {
      const sources = diagrams.map((d) => cold(d, c.values as Record<string, unknown> | undefined, c.error));
      let next = 0;
      const source: Observable<unknown> =
        sources.length === 1
          ? (sources[0] as Observable<unknown>)
          : defer(() => sources[Math.min(next++, sources.length - 1)] as Observable<unknown>);
      expectObservable((source as Observable<never>).pipe(c.operator()), c.unsubscribe);
      for (const s of sources) logs.push(s.subscriptions);
    });
    return logs.map((log) => ({
      subscribed: log[0]?.subscribedFrame ?? Infinity,
      unsubscribed: log[0]?.unsubscribedFrame ?? Infinity,
    }));
  } catch {
    return undefined;
  }
}

/**
 * When each source diagram is subscribed and unsubscribed: from the spec's `subscriptions` if it has them,
 * else measured by running the case, else (an operator that throws) one after the other as each ends.
 */
function sourceSubscriptions(c: MarbleCase): ParsedSubscription[] {
  const diagrams = asList(c.source);
  if (c.subscriptions !== undefined) {
    const subs = asList(c.subscriptions);
    return diagrams.map((_, i) => parseSubscription(subs[i]));
  }
  const measured = measureSubscriptions(c);
  if (measured !== undefined) return measured;
  let start = 0;
  return diagrams.map((d) => {
    const terminal = parseMarbles(d).events.find((e) => e.kind !== 'next');
    const sub = { subscribed: start, unsubscribed: Infinity };
    start = terminal === undefined ? Infinity : start + terminal.frame;
    return sub;
  });
}

function eventValue(
  e: MarbleEvent,
  values: Readonly<Record<string, unknown>> | undefined,
  error: unknown,
): unknown {
  if (e.kind === 'error') return error ?? 'error';
  if (e.kind === 'complete') return undefined;
  return values !== undefined && e.symbol in values ? values[e.symbol] : e.symbol;
}

function makeRow(
  label: string,
  diagram: string,
  sub: ParsedSubscription,
  values: Readonly<Record<string, unknown>> | undefined,
  error: unknown,
  consumerCut: number,
): Row {
  const parsed = parseMarbles(diagram);
  const start = sub.subscribed;
  const offset = start === Infinity ? 0 : start;
  const terminal = parsed.events.find((e) => e.kind !== 'next');
  const ends = terminal === undefined ? Infinity : offset + terminal.frame;
  const cut = sub.unsubscribed < ends ? sub.unsubscribed : Infinity;
  // A consumer's unsubscribe runs before the events of its frame; one caused by the operator (the result
  // ended) runs after the event that caused it.
  const cutBefore = cut !== Infinity && cut === consumerCut;
  const events = parsed.events.map((e) => {
    const frame = offset + e.frame;
    const faded = start === Infinity || frame > cut || (frame === cut && cutBefore);
    return { ...e, frame, value: eventValue(e, values, error), faded };
  });
  return { label, start, end: offset + parsed.frames, cut, cutBefore, events };
}

/** The rows of a case: each source diagram on the time axis of the result, then the result. */
function rowsOf(c: MarbleCase): { sources: Row[]; result: Row } {
  const consumer = parseSubscription(c.unsubscribe);
  const diagrams = asList(c.source);
  const subs = sourceSubscriptions(c);
  const sources = diagrams.map((d, i) =>
    makeRow(
      diagrams.length > 1 ? `source ${i + 1}` : 'source',
      d,
      subs[i] ?? { subscribed: Infinity, unsubscribed: Infinity },
      c.values,
      c.error,
      consumer.unsubscribed,
    ),
  );
  const result = makeRow(
    'result',
    c.expected,
    {
      subscribed: consumer.subscribed === Infinity ? 0 : consumer.subscribed,
      unsubscribed: consumer.unsubscribed,
    },
    c.expectedValues,
    c.expectedError,
    consumer.unsubscribed,
  );
  return { sources, result };
}

// ---------------------------------------------------------------------------------------------------------
// Drawing

const font =
  "ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', 'DejaVu Sans Mono', monospace";
/** Width of a character of the monospace font, per pixel of font size (an estimate; no font is measured). */
const charWidth = 0.6;
const pad = 16;
/** Room for the row labels left of the timelines. */
const gutter = 72;
/** Horizontal pixels per frame. */
const frameWidth = 28;
const radius = 11;
/** Vertical distance between the events of a group, stacked under the line. */
const stackStep = 2 * radius + 8;
const boxHeight = 34;
const legendLine = 18;
const ink = '#1f2328';
const muted = '#57606a';
const errorRed = '#cf222e';

/** Escapes text for XML content and attribute values; drops characters XML 1.0 cannot hold. */
export function escapeXml(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '\uFFFD')
    .replace(/[&<>"']/g, (c) => `&${{ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": 'apos' }[c]};`);
}

/** A coordinate, written the same way every time. */
function n(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

function textWidth(text: string, size: number): number {
  return Math.ceil([...text].length * size * charWidth);
}

/** Breaks a line into lines of at most `width` characters: after spaces and commas where it can. */
function wrap(text: string, width: number): string[] {
  const length = (t: string) => [...t].length;
  const lines: string[] = [];
  let line = '';
  for (const token of text.match(/[^ ,]*(?:,|$| +)/g) ?? []) {
    let rest = token;
    if (length(line) + length(rest.trimEnd()) > width && line !== '') {
      lines.push(line.trimEnd());
      line = '';
    }
    while (length(rest.trimEnd()) > width) {
      lines.push([...rest].slice(0, width).join(''));
      rest = [...rest].slice(width).join('');
    }
    line += rest;
  }
  lines.push(line.trimEnd());
  return lines.filter((l, i) => l !== '' || i === 0);
}

/** An SVG element with attributes (escaped) and optional content (already SVG). */
function el(name: string, attributes: Record<string, string | number>, content?: string): string {
  const attrs = Object.entries(attributes)
    .map(([k, v]) => ` ${k}="${typeof v === 'number' ? n(v) : escapeXml(v)}"`)
    .join('');
  return content === undefined ? `<${name}${attrs}/>` : `<${name}${attrs}>${content}</${name}>`;
}

function text(
  x: number,
  y: number,
  content: string,
  attributes: Record<string, string | number> = {},
): string {
  return el('text', { x, y, ...attributes }, escapeXml(content));
}

/** A marble: a circle in the colour of its event, its letter inside, and an effect-key badge if it has one. */
function marble(x: number, y: number, symbol: string, value: unknown, r = radius, badge = true): string {
  const style = styles[categorize(value)];
  const parts = [
    el('circle', {
      cx: x,
      cy: y,
      r,
      fill: style.fill,
      stroke: style.stroke,
      'stroke-width': 1.5,
      ...(style.dashed ? { 'stroke-dasharray': '3 2' } : {}),
    }),
    text(x, y + r * 0.38, symbol, {
      'text-anchor': 'middle',
      'font-size': Math.round(r * 1.1),
      'font-weight': 'bold',
      fill: style.ink,
    }),
  ];
  const key = badge ? effectKeyOf(value) : undefined;
  if (key !== undefined) {
    const label = key.slice(0, 4);
    const w = textWidth(label, 8) + 6;
    parts.push(
      el('rect', { x: x - w / 2, y: y - r - 7, width: w, height: 10, rx: 3, fill: '#24292f' }),
      text(x, y - r, label, { 'text-anchor': 'middle', 'font-size': 8, fill: '#ffffff' }),
    );
  }
  return el('g', {}, parts.join(''));
}

function completion(x: number, y: number): string {
  return el('line', { x1: x, y1: y - radius, x2: x, y2: y + radius, stroke: ink, 'stroke-width': 2.5 });
}

function errorMark(x: number, y: number, size = 7): string {
  const stroke = { stroke: errorRed, 'stroke-width': 2.5, 'stroke-linecap': 'round' };
  return [
    el('line', { x1: x - size, y1: y - size, x2: x + size, y2: y + size, ...stroke }),
    el('line', { x1: x - size, y1: y + size, x2: x + size, y2: y - size, ...stroke }),
  ].join('');
}

/** The mark of an unsubscription: a break in the line. */
function cutMark(x: number, y: number): string {
  const stroke = { stroke: muted, 'stroke-width': 2 };
  return [
    el('rect', { x: x - 4, y: y - 8, width: 8, height: 16, fill: '#ffffff' }),
    el('line', { x1: x - 6, y1: y + 7, x2: x - 1, y2: y - 7, ...stroke }),
    el('line', { x1: x + 1, y1: y + 7, x2: x + 6, y2: y - 7, ...stroke }),
  ].join('');
}

/** How many events of a row share one frame at most. */
function depth(row: Row): number {
  let max = 1;
  for (const e of row.events) if (e.kind === 'next') max = Math.max(max, e.slot + 1);
  return max;
}

interface Axis {
  /** The x of the middle of a frame. */
  x: (frame: number) => number;
  /** The x where every line ends (its arrow tip). */
  end: number;
}

/** The x of a completion or error mark: in the middle of its frame, or just after a marble of the same frame. */
function terminalMarkX(row: Row, terminal: Placed, axis: Axis): number {
  const x = axis.x(terminal.frame);
  return row.events.some((e) => e.kind === 'next' && e.frame === terminal.frame) ? x + radius + 6 : x;
}

/** Draws one row with its line at `y`; returns the SVG. */
function drawRow(row: Row, y: number, axis: Axis): string {
  const parts: string[] = [text(pad, y + 4, row.label, { 'font-size': 11, fill: muted })];
  if (row.start === Infinity) {
    parts.push(
      el('line', {
        x1: axis.x(0) - frameWidth / 2,
        y1: y,
        x2: axis.end,
        y2: y,
        stroke: muted,
        'stroke-width': 1.5,
        'stroke-dasharray': '4 4',
        opacity: 0.35,
      }),
    );
  } else {
    const left = axis.x(row.start) - frameWidth / 2;
    const cutX =
      row.cut === Infinity ? undefined : axis.x(row.cut) + (row.cutBefore ? -frameWidth / 2 : frameWidth / 2);
    const terminal = row.events.find((e) => e.kind !== 'next' && !e.faded);
    const terminalX = terminal === undefined ? undefined : terminalMarkX(row, terminal, axis);
    const solidEnd = cutX ?? terminalX ?? axis.end - 6;
    parts.push(el('line', { x1: left, y1: y, x2: solidEnd, y2: y, stroke: ink, 'stroke-width': 1.5 }));
    // After a cut, the rest of the diagram is dashed and faded; after the end of the stream, time goes on in
    // a light line; otherwise the line runs on to the arrow.
    const tailColour = cutX === undefined && terminalX !== undefined ? '#c8ccd1' : ink;
    const arrow = el('path', {
      d: `M${n(axis.end - 9)} ${n(y - 5)}L${n(axis.end)} ${n(y)}L${n(axis.end - 9)} ${n(y + 5)}z`,
      fill: tailColour,
    });
    if (cutX === undefined && terminalX === undefined) parts.push(arrow);
    else {
      const tail = el('line', {
        x1: solidEnd,
        y1: y,
        x2: axis.end - 6,
        y2: y,
        stroke: tailColour,
        'stroke-width': 1.5,
        ...(cutX === undefined ? {} : { 'stroke-dasharray': '4 4' }),
      });
      parts.push(cutX === undefined ? tail + arrow : el('g', { opacity: 0.35 }, tail + arrow));
    }
  }
  // Groups: a thin stem from the line down to the last stacked event.
  const frames = new Map<number, Placed[]>();
  for (const e of row.events) frames.set(e.frame, [...(frames.get(e.frame) ?? []), e]);
  for (const [frame, events] of [...frames].sort((a, b) => a[0] - b[0])) {
    const values = events.filter((e) => e.kind === 'next');
    const x = axis.x(frame);
    const shapes: string[] = [];
    if (values.length > 1) {
      shapes.push(
        el('line', {
          x1: x,
          y1: y,
          x2: x,
          y2: y + (values.length - 1) * stackStep,
          stroke: muted,
          'stroke-width': 1.5,
        }),
      );
    }
    values.forEach((e, i) => {
      const cy = y + i * stackStep;
      const shape = marble(x, cy, e.symbol, e.value);
      // A faded marble keeps a white disc under it, so that the line does not show through.
      shapes.push(
        e.faded
          ? el('circle', { cx: x, cy, r: radius, fill: '#ffffff' }) + el('g', { opacity: 0.3 }, shape)
          : shape,
      );
    });
    for (const e of events) {
      if (e.kind === 'next') continue;
      const tx = terminalMarkX(row, e, axis);
      const shape = e.kind === 'complete' ? completion(tx, y) : errorMark(tx, y);
      shapes.push(e.faded ? el('g', { opacity: 0.3 }, shape) : shape);
    }
    parts.push(...shapes);
  }
  if (row.cut !== Infinity && row.start !== Infinity) {
    parts.push(cutMark(axis.x(row.cut) + (row.cutBefore ? -frameWidth / 2 : frameWidth / 2), y));
  }
  // One element per line, so that a change to a spec shows as a readable diff of its picture.
  return el('g', {}, `\n${parts.join('\n')}\n`);
}

/** The height a row takes, line and stacked groups included. */
function rowHeight(row: Row): number {
  return radius + 10 + radius + (depth(row) - 1) * stackStep + 12;
}

/** The line of a row sits this far below its top (room for effect-key badges). */
const lineOffset = radius + 10;

interface LegendGroup {
  heading: string;
  entries: LegendEntry[];
}

function legendGroups(c: MarbleCase): LegendGroup[] {
  const diagrams = asList(c.source);
  const seen = new Set<string>();
  const sourceEntries = diagrams
    .flatMap((d) => legendEntries(d, c.values, c.error))
    .filter((e) => {
      const id = `${e.symbol}\u0000${e.description}`;
      if (seen.has(id)) return false;
      seen.add(id);
      return true;
    });
  const groups: LegendGroup[] = [];
  if (sourceEntries.length > 0)
    groups.push({ heading: diagrams.length > 1 ? 'sources' : 'source', entries: sourceEntries });
  const resultEntries = legendEntries(c.expected, c.expectedValues, c.expectedError);
  if (resultEntries.length > 0) groups.push({ heading: 'result', entries: resultEntries });
  return groups;
}

/** Renders case `index` of `spec` as an SVG document. */
export function renderCaseSvg(spec: MarbleSpec, index: number): string {
  const c = spec.cases[index];
  if (c === undefined) throw new Error(`${spec.name} has no case ${index}`);
  const { sources, result } = rowsOf(c);
  const rows = [...sources, result];

  const frames = Math.max(1, ...rows.map((r) => r.end));
  const x0 = pad + gutter;
  const axis: Axis = {
    x: (frame) => x0 + frame * frameWidth + frameWidth / 2,
    end: x0 + (frames + 1) * frameWidth,
  };
  const labelWidth = textWidth(c.label, 13);
  const boxRight = Math.max(axis.end, x0 + labelWidth + 32);
  const contentRight = boxRight;

  const body: string[] = [];
  let y = pad;
  for (const row of sources) {
    body.push(drawRow(row, y + lineOffset, axis));
    y += rowHeight(row);
  }
  // The operator.
  body.push(
    el('rect', {
      x: x0 - 8,
      y,
      width: boxRight - x0 + 8,
      height: boxHeight,
      rx: 4,
      fill: '#f6f8fa',
      stroke: '#8c959f',
      'stroke-width': 1,
    }),
    text((x0 - 8 + boxRight) / 2, y + boxHeight / 2 + 4.5, c.label, {
      'text-anchor': 'middle',
      'font-size': 13,
      fill: ink,
    }),
  );
  y += boxHeight + 10;
  body.push(drawRow(result, y + lineOffset, axis));
  y += rowHeight(result);

  // The legend.
  const groups = legendGroups(c);
  const hasCut = rows.some((r) => r.cut !== Infinity && r.start !== Infinity);
  const textX = pad + 24;
  const wrapAt = Math.max(84, Math.floor((contentRight - textX) / (12 * charWidth)));
  let legendRight = 0;
  // The rule above the legend is drawn once the width is known.
  let ruleY: number | undefined;
  if (groups.length > 0 || hasCut) {
    ruleY = y + 4;
    y += 12;
  }
  for (const group of groups) {
    y += legendLine;
    body.push(text(pad, y - 5, group.heading, { 'font-size': 11, fill: muted }));
    for (const entry of group.entries) {
      const lines = wrap(entry.description, wrapAt);
      const cy = y + legendLine / 2;
      body.push(
        entry.symbol === '#'
          ? errorMark(pad + 9, cy, 6)
          : marble(pad + 9, cy, entry.symbol, entry.value, 8, false),
      );
      lines.forEach((line, i) => {
        body.push(text(textX, y + 13 + i * legendLine, line, { 'font-size': 12, fill: ink }));
        legendRight = Math.max(legendRight, textX + textWidth(line, 12));
      });
      y += lines.length * legendLine;
    }
  }
  if (hasCut) {
    y += legendLine;
    const cy = y - legendLine / 2 + 2;
    body.push(
      el('line', { x1: pad, y1: cy, x2: pad + 18, y2: cy, stroke: ink, 'stroke-width': 1.5 }),
      cutMark(pad + 9, cy),
    );
    const note = 'unsubscribed here: the faded part never happens';
    body.push(text(textX, y - 5, note, { 'font-size': 12, fill: ink }));
    legendRight = Math.max(legendRight, textX + textWidth(note, 12));
  }
  y += pad;

  const width = Math.max(contentRight, legendRight) + pad;
  const height = y;
  if (ruleY !== undefined) {
    body.push(
      el('line', { x1: pad, y1: ruleY, x2: width - pad, y2: ruleY, stroke: '#d0d7de', 'stroke-width': 1 }),
    );
  }
  return `${[
    `<svg xmlns="http://www.w3.org/2000/svg" width="${n(width)}" height="${n(height)}" viewBox="0 0 ${n(width)} ${n(height)}" role="img" font-family="${escapeXml(font)}">`,
    el('title', {}, escapeXml(`${spec.name}: ${c.title}`)),
    el('desc', {}, escapeXml(renderCaseText(c))),
    el('rect', {
      x: 0.5,
      y: 0.5,
      width: width - 1,
      height: height - 1,
      rx: 6,
      fill: '#ffffff',
      stroke: '#d0d7de',
    }),
    ...body,
    '</svg>',
  ].join('\n')}\n`;
}
