// turnTelemetry(): content capture (off by default, on when asked), a tracer or meter that throws, an unsubscribe in
// the middle of an attempt, and the checks of the `telemetry` options.
import { type Meter, type Span, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import type { TurnEvent } from 'cleanturn';
import { executeTools } from 'cleanturn/effects';
import { turnTelemetry } from 'cleanturn/otel';
import { streamTurn } from 'cleanturn/transport';
import { of } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/httpServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { afterCut, beforeCut, email, helpDeskPlan, pointsOf, refund, sdk, startHelpDesk } from './harness.js';
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

const contentKeys = ['gen_ai.output.messages', 'gen_ai.tool.call.arguments', 'gen_ai.tool.call.result'];

describe('content capture', () => {
  it('records no content by default, nor with captureContent: false', async () => {
    for (const captureContent of [undefined, false]) {
      server = await startHelpDesk();
      otel = sdk();
      await runHelpDesk(server, turnTelemetry({ tracer: otel.tracer, meter: otel.meter, captureContent }));
      const spans = otel.spans();
      expect(spans).toHaveLength(5);
      for (const span of spans)
        for (const key of contentKeys) expect(span.attributes).not.toHaveProperty(key);
      await server.close();
      server = undefined;
      await otel.shutdown();
      otel = undefined;
    }
  });

  it('records the attempts’ output and the tool’s arguments and result as the opt-in attributes', async () => {
    server = await startHelpDesk();
    otel = sdk();
    await runHelpDesk(
      server,
      turnTelemetry({ tracer: otel.tracer, meter: otel.meter, captureContent: true }),
    );
    const spans = otel.spans();
    const named = (name: string) => spans.find((s) => s.name === name);
    const output = (name: string) => JSON.parse(String(named(name)?.attributes['gen_ai.output.messages']));
    // The abandoned attempt's output as it stood, without a finish.
    expect(output('chat claude-sonnet-4-5')).toEqual([
      {
        role: 'assistant',
        parts: [{ type: 'text', content: 'Checking order ORD-7781. Refunding the dam' }],
        finish_reason: 'error',
      },
    ]);
    expect(output('chat gpt-4.1')).toEqual([
      {
        role: 'assistant',
        parts: [
          { type: 'text', content: beforeCut + afterCut },
          { type: 'tool_call', id: 'call_c7', name: 'issue_refund', arguments: refund },
          { type: 'tool_call', id: 'call_c8', name: 'send_email', arguments: email },
        ],
        finish_reason: 'tool_calls',
      },
    ]);
    const tool = named('execute_tool send_email');
    expect(JSON.parse(String(tool?.attributes['gen_ai.tool.call.arguments']))).toEqual(email);
    expect(JSON.parse(String(tool?.attributes['gen_ai.tool.call.result']))).toEqual({
      sent: true,
      to: email.to,
    });
    // The resume and the turn carry no content; no span carries an effect key.
    for (const name of ['fetch_response gpt-4.1', 'cleanturn.turn'])
      for (const key of contentKeys) expect(named(name)?.attributes).not.toHaveProperty(key);
    const text = JSON.stringify(spans.map((s) => [s.attributes, s.events.map((e) => e.attributes)]));
    expect(text).not.toContain(refundKey);
    expect(text).not.toContain(emailKey);
  });
});

/** What a consumer saw of a turn, to compare runs with and without telemetry. */
const seen = (events: readonly TurnEvent[]) =>
  events.map((e) => (e.type === 'text' ? `text ${e.text}` : `${e.type} ${e.attempt}`));

describe('a tracer or meter that throws', () => {
  const thrower = () => {
    throw new Error('telemetry backend down');
  };
  /** A span whose every method throws. */
  const brokenSpan = new Proxy({} as Span, {
    get: (_target, property) =>
      property === 'spanContext' ? () => ({ traceId: '0', spanId: '0', traceFlags: 0 }) : thrower,
  });

  it('never breaks the turn nor its tools', async () => {
    server = await startHelpDesk();
    const plain = await runHelpDesk(server, undefined);
    await server.close();
    const broken: { name: string; tracer: Tracer; meter: Meter }[] = [
      {
        name: 'startSpan and every instrument factory throw',
        tracer: { startSpan: thrower, startActiveSpan: thrower } as unknown as Tracer,
        meter: new Proxy({} as Meter, { get: () => thrower }),
      },
      {
        name: 'every span method and every measurement throws',
        tracer: { startSpan: () => brokenSpan, startActiveSpan: thrower } as unknown as Tracer,
        meter: new Proxy({} as Meter, { get: () => () => ({ add: thrower, record: thrower }) }),
      },
    ];
    for (const { name, tracer, meter } of broken) {
      server = await startHelpDesk();
      const run = await runHelpDesk(server, turnTelemetry({ tracer, meter, captureContent: true }));
      expect(seen(run.events), name).toEqual(seen(plain.events));
      const answers = (results: typeof run.results) =>
        results.map((r) => [r.call.name, r.outcome, 'result' in r ? r.result : undefined]);
      expect(answers(run.results), name).toEqual(answers(plain.results));
      expect(run.ran, name).toEqual({ refunds: [], emails: [email] });
      await server.close();
      server = undefined;
    }
  });

  it('never breaks the turn when the observer itself throws', async () => {
    server = await startHelpDesk();
    const plain = await runHelpDesk(server, undefined);
    await server.close();
    server = await startHelpDesk();
    const observer = { turn: thrower, run: thrower, replayed: thrower };
    const run = await runHelpDesk(server, observer);
    expect(seen(run.events)).toEqual(seen(plain.events));
    expect(run.ran).toEqual({ refunds: [], emails: [email] });
  });
});

describe('an unsubscribe in the middle of an attempt', () => {
  it('ends every open span once, as abandoned, and counts the abandoned attempt', async () => {
    server = await startHelpDesk({ holdResume: true });
    otel = sdk();
    const telemetry = turnTelemetry({ tracer: otel.tracer, meter: otel.meter });
    const srv = server;
    const events: TurnEvent[] = [];
    await new Promise<void>((resolve, reject) => {
      const subscription = streamTurn({
        turnId,
        plan: helpDeskPlan(srv),
        backoff: false,
        telemetry,
      }).subscribe({
        next: (event) => {
          events.push(event);
          // The first text of the resumed connection, which the server then holds open.
          if (event.type === 'text' && event.text === afterCut) {
            // Unsubscribing inside next: after the current event, as a consumer that goes away does.
            queueMicrotask(() => {
              subscription.unsubscribe();
              resolve();
            });
          }
        },
        error: reject,
        complete: () => reject(new Error('the turn completed')),
      });
    });
    const spans = otel.spans();
    expect(spans.map((s) => s.name).sort()).toEqual(
      ['chat claude-sonnet-4-5', 'chat gpt-4.1', 'cleanturn.turn', 'fetch_response gpt-4.1'].sort(),
    );
    // Every span that started ended, once.
    for (const span of spans) expect(otel.atStart(span)).toBeDefined();
    expect(new Set(spans.map((s) => s.spanContext().spanId)).size).toBe(spans.length);
    const named = (name: string) => spans.find((s) => s.name === name);
    expect(named('cleanturn.turn')?.attributes).toMatchObject({
      'cleanturn.turn.outcome': 'cancelled',
      'cleanturn.attempts': 2,
      'cleanturn.resets': 1,
    });
    expect(named('cleanturn.turn')?.status.code).toBe(SpanStatusCode.UNSET);
    const attempt = named('chat gpt-4.1');
    expect(attempt?.attributes).toMatchObject({
      'gen_ai.response.id': 'resp_7',
      'gen_ai.response.finish_reasons': ['error'],
      'error.type': 'cancelled',
      'cleanturn.attempt.outcome': 'abandoned',
      'cleanturn.resumes': 1,
    });
    expect(attempt?.attributes).not.toHaveProperty('gen_ai.usage.input_tokens');
    expect(attempt?.status.code).toBe(SpanStatusCode.ERROR);
    const resume = named('fetch_response gpt-4.1');
    expect(resume?.attributes['error.type']).toBe('cancelled');
    expect(resume?.status.code).toBe(SpanStatusCode.ERROR);
    // The abandoned attempt's tokens: none arrived, so 0 is counted under the unknown modality.
    const metrics = await otel.metrics();
    const input = pointsOf(metrics.get('gen_ai.client.inference.usage.input_tokens')).find(
      (p) => p.attributes['gen_ai.provider.name'] === 'openai',
    );
    expect(input?.value).toBe(0);
    expect(input?.attributes['gen_ai.token.modality']).toBe('unknown');
    const attempts = pointsOf(metrics.get('cleanturn.attempts')).map((p) => [
      p.attributes['gen_ai.provider.name'],
      p.attributes['cleanturn.attempt.outcome'],
      p.value,
    ]);
    expect(attempts.sort()).toEqual([
      ['anthropic', 'abandoned', 1],
      ['openai', 'abandoned', 1],
    ]);
    // The abandoned background response was cancelled, as without telemetry.
    await expect.poll(() => srv.requests.some((r) => r.url === '/v1/responses/resp_7/cancel')).toBe(true);
    expect(events.filter((e) => e.type === 'reset')).toHaveLength(1);
  });
});

describe('a failed turn and a failed handler', () => {
  it('end their spans with status ERROR and error.type', async () => {
    server = await startHelpDesk();
    otel = sdk();
    const telemetry = turnTelemetry({ tracer: otel.tracer, meter: otel.meter });
    const srv = server;
    // No retry: the cut of attempt 1 ends the turn with its own error.
    const error = await new Promise<unknown>((resolve, reject) => {
      streamTurn({ turnId, plan: helpDeskPlan(srv), retry: 0, telemetry }).subscribe({
        error: resolve,
        complete: () => reject(new Error('the turn completed')),
      });
    });
    expect(error).toMatchObject({ code: 'connection' });
    const turn = otel.spans().find((s) => s.name === 'cleanturn.turn');
    const attempt = otel.spans().find((s) => s.name === 'chat claude-sonnet-4-5');
    expect(turn?.attributes).toMatchObject({
      'cleanturn.turn.outcome': 'failed',
      'error.type': 'connection',
    });
    expect(turn?.status.code).toBe(SpanStatusCode.ERROR);
    expect(attempt?.attributes).toMatchObject({
      'gen_ai.response.finish_reasons': ['error'],
      'error.type': 'connection',
      'cleanturn.attempt.outcome': 'failed',
    });
    expect(attempt?.events).toEqual([]);
    expect(attempt?.status.code).toBe(SpanStatusCode.ERROR);

    // A handler that throws: its execute_tool span fails with the error's class.
    const call = {
      type: 'tool-call' as const,
      id: 'call_x',
      name: 'send_email',
      args: email,
      attempt: 1,
      effectKey: emailKey,
    };
    const results = await new Promise<unknown[]>((resolve, reject) => {
      const out: unknown[] = [];
      of<TurnEvent>(call)
        .pipe(
          executeTools(
            {
              send_email: () => {
                throw new TypeError('mail server down');
              },
            },
            { turnId: 'turn-otel-2', telemetry },
          ),
        )
        .subscribe({ next: (r) => out.push(r.outcome), error: reject, complete: () => resolve(out) });
    });
    expect(results).toEqual(['failed']);
    const tool = otel.spans().find((s) => s.name === 'execute_tool send_email');
    expect(tool?.attributes).toMatchObject({ 'error.type': 'TypeError', 'gen_ai.tool.call.id': 'call_x' });
    expect(tool?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'mail server down' });
    // With no turn of that id, the tool's span starts in the active context: a root here.
    expect(tool?.parentSpanContext).toBeUndefined();
    const text = JSON.stringify(otel.spans().map((s) => s.attributes));
    expect(text).not.toContain(emailKey);
  });
});

describe('the telemetry options', () => {
  it('refuse what is not an observer with a UsageError', () => {
    const plan = () => {
      throw new Error('not called');
    };
    expect(() => streamTurn({ turnId, plan, telemetry: {} as never })).toThrow(
      /streamTurn: telemetry must be a turn observer/,
    );
    expect(() => executeTools({}, { turnId, telemetry: { run: () => undefined } as never })).toThrow(
      /executeTools: telemetry/,
    );
  });

  it('turnTelemetry refuses options of the wrong shape with a UsageError', () => {
    expect(() => turnTelemetry(null as never)).toThrow(/turnTelemetry: options must be an object/);
    expect(() => turnTelemetry({ tracer: {} as never })).toThrow(
      /turnTelemetry: tracer must be an OpenTelemetry Tracer/,
    );
    expect(() => turnTelemetry({ meter: { createCounter: () => undefined } as never })).toThrow(
      /turnTelemetry: meter must be an OpenTelemetry Meter/,
    );
    expect(() => turnTelemetry({ captureContent: 'yes' as never })).toThrow(
      /turnTelemetry: captureContent must be a boolean/,
    );
  });
});
