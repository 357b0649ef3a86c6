import { readFileSync } from 'node:fs';
import { TestScheduler } from 'rxjs/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { diffDocs, renderDocs } from '../scripts/docs.js';
import { parseMarbles, parseSubscription } from '../scripts/marbleParse.js';
import { escapeXml, renderCaseSvg } from '../scripts/marbleSvg.js';
import { loadSpecs } from '../scripts/readme.js';
import type { MarbleCase, MarbleSpec } from '../src/testing/marbles.js';

// The pictures (docs/marbles/*.svg) and pages (docs/operators/*.md) are generated from marbles/ by
// `npm run docs`; these tests render them again in memory and compare with what is committed.

let specs: Map<string, MarbleSpec>;
let files: Map<string, string>;
beforeAll(async () => {
  specs = await loadSpecs();
  files = renderDocs(specs);
});

const list = (x: string | readonly string[]): readonly string[] => (typeof x === 'string' ? [x] : x);

describe('committed docs', () => {
  it('are the current renderings of marbles/ (run npm run docs)', () => {
    const diff = diffDocs(files);
    const problems = [
      ...diff.stale.map((p) => `stale: ${p}`),
      ...diff.missing.map((p) => `missing: ${p}`),
      ...diff.orphans.map((p) => `orphan (no spec generates it): ${p}`),
    ];
    expect(problems, 'run npm run docs').toEqual([]);
  });

  it('have a picture for every case and a page for every spec', () => {
    for (const spec of specs.values()) {
      spec.cases.forEach((_, i) => {
        expect(files.has(`docs/marbles/${spec.name}-${i}.svg`)).toBe(true);
      });
      expect(files.get(`docs/operators/${spec.name}.md`)).toContain(`](../marbles/${spec.name}-0.svg)`);
    }
  });

  it('include every picture README.md shows', () => {
    const pictures = [
      ...readFileSync('README.md', 'utf8').matchAll(/\]\((docs\/marbles\/[^)]+\.svg)\)/g),
    ].map((m) => m[1]);
    expect(pictures.length).toBeGreaterThan(0);
    for (const path of pictures) expect(files.has(path ?? ''), path).toBe(true);
  });

  it('report stale, missing and orphaned files', () => {
    const [name, first] = [...specs][0] as [string, MarbleSpec];
    const renamed = new Map(files);
    renamed.set('docs/marbles/noSuchSpec-0.svg', '<svg/>');
    for (const path of [...renamed.keys()])
      if (path.startsWith(`docs/marbles/${name}-`)) renamed.delete(path);
    renamed.set(`docs/operators/${name}.md`, 'edited by hand\n');
    const diff = diffDocs(renamed);
    expect(diff.missing).toContain('docs/marbles/noSuchSpec-0.svg');
    expect(diff.orphans).toContain(`docs/marbles/${name}-0.svg`);
    expect(diff.orphans).toHaveLength(first.cases.length);
    expect(diff.stale).toContain(`docs/operators/${name}.md`);
  });

  it('render the same bytes every time', () => {
    expect(renderDocs(specs)).toEqual(files);
  });
});

describe('the marble parser of the pictures', () => {
  /** What `TestScheduler` makes of a diagram in run mode, with each event's letter as its value. */
  const reference = (diagram: string) => {
    let messages: { frame: number; kind: string; symbol: string }[] = [];
    new TestScheduler(() => undefined).run(() => {
      messages = TestScheduler.parseMarbles(diagram, undefined, '#', false, true).map((m) => ({
        frame: m.frame,
        kind: m.notification.kind === 'N' ? 'next' : m.notification.kind === 'E' ? 'error' : 'complete',
        symbol:
          m.notification.kind === 'N'
            ? String(m.notification.value)
            : m.notification.kind === 'E'
              ? '#'
              : '|',
      }));
    });
    return messages;
  };
  const subscriptionReference = (diagram: string) => {
    let log = { subscribedFrame: 0, unsubscribedFrame: 0 };
    new TestScheduler(() => undefined).run(() => {
      log = TestScheduler.parseMarblesAsSubscriptions(diagram, true);
    });
    return { subscribed: log.subscribedFrame, unsubscribed: log.unsubscribedFrame };
  };
  const ours = (diagram: string) =>
    parseMarbles(diagram).events.map(({ frame, kind, symbol }) => ({ frame, kind, symbol }));

  const tricky = [
    '(ab|)',
    '--(a|)',
    '-a-(bc)-#',
    '  -a-b-|',
    '-a 10ms b-|',
    '---',
    '',
    'a 1s -|',
    '(ab)(cd)',
  ];
  it.each(tricky)('reads %j as TestScheduler does', (diagram) => {
    expect(ours(diagram)).toEqual(reference(diagram));
  });

  it('reads every diagram of marbles/ as TestScheduler does', () => {
    const diagrams = [...specs.values()].flatMap((s) =>
      s.cases.flatMap((c) => [...list(c.source), c.expected]),
    );
    expect(diagrams.length).toBeGreaterThan(20);
    for (const d of diagrams) expect(ours(d), d).toEqual(reference(d));
  });

  it('reads subscription diagrams as TestScheduler does', () => {
    const diagrams = [
      '^--!',
      '---!',
      '--^--(!)',
      '^ 10ms !',
      ...[...specs.values()].flatMap((s) =>
        s.cases.flatMap((c: MarbleCase) => [
          ...list(c.subscriptions ?? []),
          ...(c.unsubscribe ? [c.unsubscribe] : []),
        ]),
      ),
    ];
    for (const d of diagrams) expect(parseSubscription(d), d).toEqual(subscriptionReference(d));
    expect(parseSubscription(undefined)).toEqual({ subscribed: Infinity, unsubscribed: Infinity });
  });

  it('counts a group in the frame of its "(" and lets every character take a frame', () => {
    expect(parseMarbles('-(ab|)-c')).toEqual({
      events: [
        { frame: 1, kind: 'next', symbol: 'a', slot: 0 },
        { frame: 1, kind: 'next', symbol: 'b', slot: 1 },
        { frame: 1, kind: 'complete', symbol: '|', slot: 2 },
        { frame: 7, kind: 'next', symbol: 'c', slot: 0 },
      ],
      frames: 8,
    });
  });
});

describe('the SVG pictures', () => {
  const awkward: MarbleSpec = {
    name: 'awkward',
    summary: 'Text that XML must escape.',
    cases: [
      {
        title: 'a <title> & "quotes" \u0007',
        source: '-a-b-|',
        values: { a: { type: 'text', text: '</text><script>&amp;' }, b: 'plain' },
        label: "op({ when: (x) => x < 1 && x > 0, name: 'it' })",
        operator: () => (source) => source,
        expected: '-a-b-|',
        expectedValues: { a: { type: 'text', text: '</text><script>&amp;' }, b: 'plain' },
      },
    ],
  };

  /** A small check of well-formedness: tags nest, and text holds no raw `<` or stray `&`. */
  const wellFormed = (svg: string): void => {
    const stack: string[] = [];
    for (const token of svg.match(/<[^>]*>|[^<]+/g) ?? []) {
      if (token.startsWith('</')) expect(stack.pop(), token).toBe(token.slice(2, -1));
      else if (token.startsWith('<')) {
        expect(token, 'attribute values are quoted and escaped').toMatch(
          /^<[\w:-]+(\s+[\w:-]+="[^"<]*")*\s*\/?>$/,
        );
        if (!token.endsWith('/>')) stack.push(token.slice(1).split(/[\s>]/)[0] ?? '');
      } else expect(token).not.toMatch(/&(?!(amp|lt|gt|quot|apos);)/);
    }
    expect(stack).toEqual([]);
  };

  it('escape titles, labels and values', () => {
    const svg = renderCaseSvg(awkward, 0);
    wellFormed(svg);
    expect(svg).toContain('a &lt;title&gt; &amp; &quot;quotes&quot; \uFFFD');
    expect(svg).toContain('op({ when: (x) =&gt; x &lt; 1 &amp;&amp; x &gt; 0, name: &apos;it&apos; })');
    expect(svg).not.toContain('<script>');
    expect(escapeXml('a\u0000b')).toBe('a\uFFFDb');
  });

  it('are well-formed for every case of marbles/', () => {
    for (const [path, content] of files) if (path.endsWith('.svg')) wellFormed(content);
  });

  it('put source and result events of the same frame at the same x', () => {
    const svg = renderCaseSvg(
      {
        name: 'aligned',
        summary: '',
        cases: [
          {
            title: 'a retried source',
            source: ['-a-#', '--b-|'],
            label: 'retry(1)',
            operator: () => (source) => source,
            expected: '-a---b-|',
            subscriptions: ['^--!', '---^---!'],
          },
        ],
      },
      0,
    );
    const xs = (letter: string) =>
      [...svg.matchAll(new RegExp(`<text x="([\\d.]+)" y="[\\d.]+"[^>]*>${letter}</text>`, 'g'))].map(
        (m) => m[1],
      );
    // Source 2 starts at frame 3, so its b (frame 2 of its diagram) is at frame 5, as in the result.
    expect(new Set(xs('b')).size).toBe(1);
    expect(xs('b').length).toBeGreaterThanOrEqual(2);
    expect(new Set(xs('a')).size).toBe(1);
  });
});
