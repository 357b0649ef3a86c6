// turnTelemetry() with the real OpenTelemetry SDKs (in-memory exporters) over a real loopback turn: attempt 1
// (Anthropic) is cut mid-sentence and reset; attempt 2 (OpenAI Responses, background) is cut and resumed; its two
// calls go to executeTools, whose ledger already holds the refund from an earlier run.
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { turnTelemetry } from 'cleanturn/otel';
import { afterEach, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/httpServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { afterCut, beforeCut, cutAfter, email, pointsOf, sdk, startHelpDesk } from './harness.js';
import { emailKey, refundKey, runHelpDesk, turnId } from './run.js';

let server: TestServer | undefined;
let otel: ReturnType<typeof sdk> | undefined;
expectNoLeftoverHandles(async () => {
  await server?.close();
  server = undefined;
});
afterEach(async () => {
  await otel?.shutdown();
  otel = undefined;
});

/** The one finished span named `name`. */
function only(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  expect(found, name).toHaveLength(1);
  return found[0] as ReadableSpan;
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan) => span.spanContext().spanId;

/** Every attribute value of a span and of its events, as text. */
function valuesOf(span: ReadableSpan): string[] {
  const all = [span.attributes, ...span.events.map((e) => e.attributes ?? {})];
  return all.flatMap((attributes) => Object.values(attributes).map((v) => JSON.stringify(v)));
}

describe('turnTelemetry over a real turn: a reset, a resume, a replayed and an executed call', () => {
  it('traces the turn, its attempts, its resume and the one tool that ran, by the GenAI conventions', async () => {
    server = await startHelpDesk();
    otel = sdk();
    const telemetry = turnTelemetry({ tracer: otel.tracer, meter: otel.meter });
    const { events, results, ran } = await runHelpDesk(server, telemetry);

    // The turn itself went as without telemetry: a reset, a resume, the refund replayed, the e-mail sent.
    expect(events.map((e) => e.type)).toEqual([
      ...['usage', 'text', 'text', 'reset'],
      ...['resumable', 'text', 'resume', 'text', 'usage', 'tool-call-repeat', 'tool-call', 'finish'],
    ]);
    expect(results.map((r) => [r.call.name, r.outcome])).toEqual([
      ['issue_refund', 'replayed'],
      ['send_email', 'executed'],
    ]);
    expect(ran).toEqual({ refunds: [], emails: [email] });

    const spans = otel.spans();
    const port = Number(new URL(server.url).port);
    // Exactly these spans, in this tree.
    expect(spans.map((s) => s.name).sort()).toEqual(
      [
        'chat claude-sonnet-4-5',
        'chat gpt-4.1',
        'cleanturn.turn',
        'execute_tool send_email',
        'fetch_response gpt-4.1',
      ].sort(),
    );
    const turn = only(spans, 'cleanturn.turn');
    const first = only(spans, 'chat claude-sonnet-4-5');
    const second = only(spans, 'chat gpt-4.1');
    const resume = only(spans, 'fetch_response gpt-4.1');
    const tool = only(spans, 'execute_tool send_email');
    expect([turn.kind, first.kind, second.kind, resume.kind, tool.kind]).toEqual([
      SpanKind.INTERNAL,
      SpanKind.CLIENT,
      SpanKind.CLIENT,
      SpanKind.CLIENT,
      SpanKind.INTERNAL,
    ]);
    expect(parentOf(turn)).toBeUndefined();
    expect(parentOf(first)).toBe(idOf(turn));
    expect(parentOf(second)).toBe(idOf(turn));
    expect(parentOf(resume)).toBe(idOf(second));
    expect(parentOf(tool)).toBe(idOf(turn));
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);

    // The turn: its id, how it ended, and what the conventions leave out under cleanturn.*.
    expect(turn.attributes).toEqual({
      'cleanturn.turn.id': turnId,
      'cleanturn.turn.outcome': 'completed',
      'cleanturn.attempts': 2,
      'cleanturn.resets': 1,
    });
    expect(turn.events.map((e) => [e.name, e.attributes])).toEqual([
      ['cleanturn.tool.replayed', { 'gen_ai.tool.name': 'issue_refund', 'gen_ai.tool.call.id': 'call_c7' }],
    ]);
    expect(turn.status.code).toBe(SpanStatusCode.UNSET);

    // What a sampler sees: the attributes given at the attempts' creation.
    const server1 = { 'server.address': '127.0.0.1', 'server.port': port };
    expect(otel.atStart(first)).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.request.model': 'claude-sonnet-4-5',
      'gen_ai.request.stream': true,
      ...server1,
      'cleanturn.attempt': 1,
    });
    expect(otel.atStart(second)).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4.1',
      'gen_ai.request.stream': true,
      ...server1,
      'cleanturn.attempt': 2,
    });

    // Attempt 1: abandoned mid-sentence; the finish never came; its input was billed.
    const { 'gen_ai.response.time_to_first_chunk': ttfc1, ...first1 } = first.attributes;
    expect(ttfc1).toBeTypeOf('number');
    expect(first1).toEqual({
      ...otel.atStart(first),
      'gen_ai.response.finish_reasons': ['error'],
      'gen_ai.usage.input_tokens': 512,
      'gen_ai.usage.output_tokens': 2,
      'gen_ai.usage.cache_read.input_tokens': 100,
      'error.type': 'connection',
      'cleanturn.attempt.outcome': 'abandoned',
      'cleanturn.resumes': 0,
    });
    const reset = events.find((e) => e.type === 'reset');
    expect(first.events.map((e) => [e.name, e.attributes])).toEqual([
      ['cleanturn.reset', { 'cleanturn.attempt': 2, 'cleanturn.reset.reason': reset?.reason }],
    ]);
    expect(first.status.code).toBe(SpanStatusCode.ERROR);

    // Attempt 2: finished with its calls, after one resume.
    const { 'gen_ai.response.time_to_first_chunk': ttfc2, ...second1 } = second.attributes;
    expect(ttfc2).toBeTypeOf('number');
    expect(second1).toEqual({
      ...otel.atStart(second),
      'gen_ai.response.id': 'resp_7',
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'gen_ai.usage.input_tokens': 142,
      'gen_ai.usage.output_tokens': 58,
      'gen_ai.usage.cache_read.input_tokens': 40,
      'gen_ai.usage.reasoning.output_tokens': 12,
      'cleanturn.attempt.outcome': 'finished',
      'cleanturn.resumes': 1,
    });
    expect(second.events.map((e) => [e.name, e.attributes])).toEqual([
      ['cleanturn.resume', { 'cleanturn.resume.after': cutAfter }],
    ]);
    expect(second.status.code).toBe(SpanStatusCode.UNSET);

    // The resume: the same generation fetched again, without any token usage.
    expect(resume.attributes).toEqual({
      'gen_ai.operation.name': 'fetch_response',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4.1',
      ...server1,
      'gen_ai.response.id': 'resp_7',
      'cleanturn.resume.after': cutAfter,
    });
    expect(Object.keys(resume.attributes).filter((k) => k.startsWith('gen_ai.usage.'))).toEqual([]);
    expect(resume.status.code).toBe(SpanStatusCode.UNSET);

    // The one tool that ran now; the replayed refund has no execute_tool span; no content by default.
    expect(tool.attributes).toEqual({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'send_email',
      'gen_ai.tool.type': 'function',
      'gen_ai.tool.call.id': 'call_c8',
    });
    expect(tool.status.code).toBe(SpanStatusCode.UNSET);

    // No effect key, nor anything like a hash, in any attribute of any span or event.
    const values = spans.flatMap(valuesOf);
    for (const value of values) {
      expect(value).not.toContain(refundKey);
      expect(value).not.toContain(emailKey);
    }
    // Nor any text that looks like a hash (the key is 16 hex characters of a sha256): only numbers are all digits.
    for (const value of values.filter((v) => v.startsWith('"') || v.startsWith('[')))
      expect(value).not.toMatch(/[0-9a-f]{16}/);
    const content = [beforeCut, afterCut, 'ORD-7781', 'refund-started'];
    for (const value of values) for (const text of content) expect(value).not.toContain(text);

    // The metrics.
    const metrics = await otel.metrics();
    expect([...metrics.keys()].sort()).toEqual(
      [
        'gen_ai.client.inference.duration',
        'gen_ai.client.inference.time_to_first_chunk',
        'gen_ai.client.inference.usage.input_tokens',
        'gen_ai.client.inference.usage.output_tokens',
        'gen_ai.client.inference.usage.cache_read.input_tokens',
        'gen_ai.client.inference.usage.reasoning.output_tokens',
        'gen_ai.execute_tool.duration',
        'cleanturn.attempts',
        'cleanturn.resets',
        'cleanturn.resumes',
        'cleanturn.tool.replays',
      ].sort(),
    );
    const unit = (name: string) => metrics.get(name)?.descriptor.unit;
    expect(unit('gen_ai.client.inference.duration')).toBe('s');
    expect(unit('gen_ai.client.inference.time_to_first_chunk')).toBe('s');
    expect(unit('gen_ai.execute_tool.duration')).toBe('s');
    expect(unit('gen_ai.client.inference.usage.input_tokens')).toBe('{token}');
    expect(unit('gen_ai.client.inference.usage.reasoning.output_tokens')).toBe('{token}');

    const anthropic = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.request.model': 'claude-sonnet-4-5',
      ...server1,
    };
    const openai = { ...anthropic, 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-4.1' };
    const counts = (name: string) =>
      pointsOf(metrics.get(name)).map((p) => [p.attributes, (p.value as { count: number }).count]);
    const sums = (name: string) => pointsOf(metrics.get(name)).map((p) => [p.attributes, p.value]);
    const byKey = (pairs: unknown[][]) =>
      pairs.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

    expect(byKey(counts('gen_ai.client.inference.duration'))).toEqual(
      byKey([
        [{ ...anthropic, 'error.type': 'connection' }, 1],
        [openai, 1],
        [{ ...openai, 'gen_ai.operation.name': 'fetch_response' }, 1],
      ]),
    );
    expect(byKey(counts('gen_ai.client.inference.time_to_first_chunk'))).toEqual(
      byKey([
        [anthropic, 1],
        [openai, 1],
      ]),
    );
    const tokens = (attributes: object) => ({ ...attributes, 'gen_ai.token.modality': 'unknown' });
    // The abandoned attempt's tokens are counted: they were billed.
    expect(byKey(sums('gen_ai.client.inference.usage.input_tokens'))).toEqual(
      byKey([
        [tokens(anthropic), 512],
        [tokens(openai), 142],
      ]),
    );
    expect(byKey(sums('gen_ai.client.inference.usage.output_tokens'))).toEqual(
      byKey([
        [tokens(anthropic), 2],
        [tokens(openai), 58],
      ]),
    );
    expect(byKey(sums('gen_ai.client.inference.usage.cache_read.input_tokens'))).toEqual(
      byKey([
        [tokens(anthropic), 100],
        [tokens(openai), 40],
      ]),
    );
    expect(sums('gen_ai.client.inference.usage.reasoning.output_tokens')).toEqual([[tokens(openai), 12]]);
    expect(counts('gen_ai.execute_tool.duration')).toEqual([
      [
        {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': 'send_email',
          'gen_ai.tool.type': 'function',
        },
        1,
      ],
    ]);
    expect(byKey(sums('cleanturn.attempts'))).toEqual(
      byKey([
        [{ ...anthropic, 'cleanturn.attempt.outcome': 'abandoned' }, 1],
        [{ ...openai, 'cleanturn.attempt.outcome': 'finished' }, 1],
      ]),
    );
    expect(sums('cleanturn.resets')).toEqual([[{ ...anthropic, 'error.type': 'connection' }, 1]]);
    expect(sums('cleanturn.resumes')).toEqual([[openai, 1]]);
    expect(sums('cleanturn.tool.replays')).toEqual([
      [{ 'gen_ai.tool.name': 'issue_refund', 'cleanturn.tool.outcome': 'replayed' }, 1],
    ]);
    // Neither the metrics hold an effect key.
    const metricText = JSON.stringify([...metrics.values()].map((m) => pointsOf(m).map((p) => p.attributes)));
    expect(metricText).not.toContain(refundKey);
    expect(metricText).not.toMatch(/[0-9a-f]{16}/);
  });
});
