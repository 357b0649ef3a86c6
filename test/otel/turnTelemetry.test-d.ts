// The object turnTelemetry() returns fits both `telemetry` options: streamTurn's and executeTools'.
import type { Meter, Tracer } from '@opentelemetry/api';
import type { executeTools } from 'cleanturn/effects';
import { turnTelemetry } from 'cleanturn/otel';
import type { StreamTurnOptions } from 'cleanturn/transport';
import { describe, expectTypeOf, it } from 'vitest';

type ExecuteToolsTelemetry = NonNullable<Parameters<typeof executeTools>[1]['telemetry']>;
type StreamTurnTelemetry = NonNullable<StreamTurnOptions['telemetry']>;

describe('turnTelemetry', () => {
  it('returns one object for both telemetry options', () => {
    const telemetry = turnTelemetry();
    expectTypeOf(telemetry).toExtend<StreamTurnTelemetry>();
    expectTypeOf(telemetry).toExtend<ExecuteToolsTelemetry>();
    expectTypeOf<ReturnType<typeof turnTelemetry>>().toExtend<StreamTurnTelemetry & ExecuteToolsTelemetry>();
  });

  it('takes an optional tracer, meter and captureContent, and nothing else', () => {
    expectTypeOf(turnTelemetry)
      .parameter(0)
      .toEqualTypeOf<{ tracer?: Tracer; meter?: Meter; captureContent?: boolean } | undefined>();
    // @ts-expect-error an option of another name
    turnTelemetry({ captureContents: true });
  });

  it('is not an observer of one option only', () => {
    expectTypeOf<{ turn: StreamTurnTelemetry['turn'] }>().not.toExtend<ExecuteToolsTelemetry>();
  });
});
