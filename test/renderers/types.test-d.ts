// Type tests of the renderer entries (vitest typecheck): what each operator reads and emits.
import type * as acp from '@agentclientprotocol/sdk';
import type * as acp2 from '@agentclientprotocol/sdk/experimental/v2';
import {
  type ToolResultLike as AcpToolResultLike,
  cleanTurn,
  type FinishReason,
  naivePolicy,
  type ProviderEvent,
  type ResetEvent,
  type ToolResultLike,
  type TurnEvent,
} from 'cleanturn';
import { acpMetaKeys, toAcpUpdates } from 'cleanturn/acp';
import type { ToolResultEvent } from 'cleanturn/effects';
import {
  initialView,
  reduceView,
  retryMessage,
  type TurnView,
  toTerminal,
  turnView,
  type ViewEvent,
  viewReducer,
} from 'cleanturn/renderers';
import type { Observable, OperatorFunction } from 'rxjs';
import { describe, expectTypeOf, test } from 'vitest';
import type { AcpResetMeta } from '../../src/acp/acpMetaKeys.js';
import type { AcpNotification, AcpSourceEvent, AcpV2Notification } from '../../src/acp/toAcpUpdates.js';
import type { AssembledEvent } from '../../src/assembleToolCalls.js';
import type {
  InterruptedAttempt,
  ResetPresentation,
  RetryNotice,
  ToolCallView,
  ToolCallViewStatus,
  ViewOptions,
} from '../../src/renderers/reduceView.js';
import type { RetryMessageFacts } from '../../src/renderers/retryMessage.js';
import type { TurnViewOptions } from '../../src/renderers/turnView.js';
import type { RetryFacts } from '../../src/types.js';

declare const provider$: Observable<ProviderEvent>;
/** Provider events with whole tool calls, as after assembleToolCalls(). */
declare const assembled$: Observable<AssembledEvent<ProviderEvent>>;
declare const turn$: Observable<TurnEvent>;
declare const results$: Observable<ToolResultEvent>;

describe('cleanturn/renderers', () => {
  test('turnView reads the clean turn, any policy and tool results, and emits views', () => {
    expectTypeOf(turnView()).toEqualTypeOf<OperatorFunction<ViewEvent, TurnView>>();
    expectTypeOf(assembled$.pipe(cleanTurn({ turnId: 't' }), turnView())).toEqualTypeOf<
      Observable<TurnView>
    >();
    expectTypeOf(provider$.pipe(naivePolicy(), turnView())).toEqualTypeOf<Observable<TurnView>>();
    expectTypeOf(results$.pipe(turnView())).toEqualTypeOf<Observable<TurnView>>();
    // Raw provider events carry no attempt: a view cannot tell a retry from more text.
    // @ts-expect-error ProviderEvent is not a ViewEvent
    provider$.pipe(turnView());
  });

  test('reduceView is a reducer over views', () => {
    expectTypeOf(reduceView).toEqualTypeOf<(view: TurnView, event: ViewEvent) => TurnView>();
    expectTypeOf(viewReducer).toEqualTypeOf<
      (options?: ViewOptions) => (view: TurnView, event: ViewEvent) => TurnView
    >();
    expectTypeOf(initialView).toEqualTypeOf<TurnView>();
  });

  test('a view is read-only, with typed statuses and notices', () => {
    expectTypeOf<TurnView['toolCalls']>().toEqualTypeOf<readonly ToolCallView[]>();
    expectTypeOf<TurnView['resets']>().toEqualTypeOf<readonly ResetEvent[]>();
    expectTypeOf<TurnView['finishReason']>().toEqualTypeOf<FinishReason | undefined>();
    expectTypeOf<ToolCallView['status']>().toEqualTypeOf<ToolCallViewStatus>();
    expectTypeOf<ToolCallViewStatus>().toEqualTypeOf<
      'released' | 'repeat' | 'running' | 'completed' | 'failed'
    >();
    expectTypeOf<NonNullable<TurnView['notice']>>().toEqualTypeOf<
      RetryNotice | { type: 'resuming'; attempt: number; reason: string }
    >();
    expectTypeOf<RetryNotice>().toEqualTypeOf<{
      type: 'retrying';
      attempt: number;
      reason: string;
      delay?: number;
      failedAttempt?: number;
      retryCount?: number;
      maxRetries?: number;
      errorName?: string;
      status?: number;
    }>();
    expectTypeOf<TurnView['interrupted']>().toEqualTypeOf<InterruptedAttempt | undefined>();
    expectTypeOf<InterruptedAttempt>().toEqualTypeOf<{
      readonly attempt: number;
      readonly text: string;
      readonly reasoning: string;
      readonly reason: string;
    }>();
    const view = initialView;
    // @ts-expect-error a snapshot is never mutated
    view.text = 'changed';
  });

  test('the presentation of a reset is an option of turnView, reduceView and toTerminal', () => {
    expectTypeOf<ResetPresentation>().toEqualTypeOf<'rollback' | 'mark'>();
    expectTypeOf<TurnViewOptions>().toEqualTypeOf<ViewOptions>();
    expectTypeOf<ViewOptions['onReset']>().toEqualTypeOf<ResetPresentation | undefined>();
    expectTypeOf(turn$.pipe(turnView({ onReset: 'mark' }))).toEqualTypeOf<Observable<TurnView>>();
    expectTypeOf(turn$.pipe(toTerminal({ tty: true, onReset: 'mark' }))).toEqualTypeOf<Observable<string>>();
    viewReducer({ onReset: 'mark' })(initialView, {} as ViewEvent);
    // @ts-expect-error not a presentation
    turnView({ onReset: 'strike' });
    // @ts-expect-error not a presentation
    toTerminal({ onReset: 'erase' });
  });

  test('retryMessage reads a notice or a reset, and says it in one line', () => {
    expectTypeOf(retryMessage).parameter(0).toEqualTypeOf<RetryMessageFacts>();
    expectTypeOf<RetryNotice>().toExtend<RetryMessageFacts>();
    expectTypeOf<ResetEvent>().toExtend<RetryMessageFacts>();
    expectTypeOf(retryMessage({ reason: 'x' }, { remaining: 1000 })).toEqualTypeOf<string>();
    // @ts-expect-error the reason is required
    retryMessage({ delay: 1000 });
  });

  test('toTerminal emits the strings to write', () => {
    expectTypeOf(turn$.pipe(toTerminal({ tty: true, columns: 80 }))).toEqualTypeOf<Observable<string>>();
    expectTypeOf(turn$.pipe(toTerminal())).toEqualTypeOf<Observable<string>>();
    // @ts-expect-error tty is a boolean
    toTerminal({ tty: 'yes' });
  });

  test("the executor's results fit the renderers' structural result type", () => {
    expectTypeOf<ToolResultEvent>().toExtend<ToolResultLike>();
    expectTypeOf<ToolResultEvent>().toExtend<AcpToolResultLike>();
  });
});

describe('cleanturn/acp', () => {
  test('v1 (the default) emits the SDK v1 session/update params', () => {
    expectTypeOf<AcpNotification>().toEqualTypeOf<acp.SessionNotification>();
    expectTypeOf(turn$.pipe(toAcpUpdates({ sessionId: 's' }))).toEqualTypeOf<
      Observable<acp.SessionNotification>
    >();
    expectTypeOf(turn$.pipe(toAcpUpdates({ sessionId: 's', protocol: 'v1' }))).toEqualTypeOf<
      Observable<acp.SessionNotification>
    >();
  });

  test("protocol: 'v2' emits the v2 draft's session/update params", () => {
    expectTypeOf<AcpV2Notification>().toEqualTypeOf<acp2.UpdateSessionNotification>();
    expectTypeOf(turn$.pipe(toAcpUpdates({ sessionId: 's', protocol: 'v2' }))).toEqualTypeOf<
      Observable<acp2.UpdateSessionNotification>
    >();
    const protocol = Math.random() > 0.5 ? ('v1' as const) : ('v2' as const);
    expectTypeOf(turn$.pipe(toAcpUpdates({ sessionId: 's', protocol }))).toEqualTypeOf<
      Observable<acp.SessionNotification | acp2.UpdateSessionNotification>
    >();
  });

  test('it reads the clean turn and tool results, not raw provider events', () => {
    expectTypeOf<TurnEvent>().toExtend<AcpSourceEvent>();
    expectTypeOf<ToolResultEvent>().toExtend<AcpSourceEvent>();
    // @ts-expect-error ProviderEvent has no attempts and no effect keys
    provider$.pipe(toAcpUpdates({ sessionId: 's' }));
  });

  test('options are typed with the SDK', () => {
    toAcpUpdates({ sessionId: 's', kind: (call) => (call.name.startsWith('read') ? 'read' : 'execute') });
    // @ts-expect-error not an ACP tool kind
    toAcpUpdates({ sessionId: 's', kind: () => 'banana' });
    // @ts-expect-error the session is required
    toAcpUpdates({});
    // @ts-expect-error no such protocol
    toAcpUpdates({ sessionId: 's', protocol: 'v3' });
  });

  test('the meta keys are literal and namespaced', () => {
    expectTypeOf(acpMetaKeys.reset).toEqualTypeOf<'cleanturn/reset'>();
    expectTypeOf(acpMetaKeys.effectKey).toEqualTypeOf<'cleanturn/effectKey'>();
    expectTypeOf(acpMetaKeys.repeat).toEqualTypeOf<'cleanturn/repeat'>();
    expectTypeOf<AcpResetMeta>().toEqualTypeOf<{
      attempt: number;
      reason: string;
      supersedes?: string;
      supersedesThought?: string;
      delay?: number;
      failedAttempt?: number;
      outputStarted?: boolean;
      retryCount?: number;
      maxRetries?: number;
      errorName?: string;
      status?: number;
    }>();
    expectTypeOf<AcpResetMeta>().toExtend<RetryFacts>();
  });
});

describe('ToolResultLike', () => {
  test('is what the executor of cleanturn/effects emits, so its results feed the renderers and the ACP adapter', () => {
    expectTypeOf<import('cleanturn/effects').ToolResultEvent>().toExtend<
      import('cleanturn').ToolResultLike
    >();
  });
});
