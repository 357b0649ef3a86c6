import type { SessionNotification, ToolKind } from '@agentclientprotocol/sdk';
import type { UpdateSessionNotification } from '@agentclientprotocol/sdk/experimental/v2';
import type { ToolResultLike, TurnEvent } from 'cleanturn';
import { defer, mergeMap, type OperatorFunction } from 'rxjs';
import { AttemptTracker } from '../AttemptTracker.js';
import { readRetryFacts } from '../internal/retryFacts.js';
import { toolResultStatus } from '../toolResultStatus.js';
import type { ReleasedCall, RetryFacts } from '../types.js';
import { type AcpResetMeta, acpMetaKeys } from './acpMetaKeys.js';

/**
 * What {@link toAcpUpdates} reads: the clean turn, and optionally the executor's results merged in.
 *
 * @inline
 */
export type AcpSourceEvent = TurnEvent | ToolResultLike;

/**
 * Options of {@link toAcpUpdates}.
 *
 * @inline
 */
export interface ToAcpUpdatesOptions {
  /** The ACP session the notifications belong to. */
  sessionId: string;
  /**
   * `v1` (the default): ACP v1 `session/update` params, as `@agentclientprotocol/sdk` types them. A reset
   * starts a new message; the reset and the message it supersedes are in `_meta['cleanturn/reset']`.
   *
   * `v2`: the ACP v2 draft (`@agentclientprotocol/sdk/experimental/v2`), which can replace a message: a reset
   * sends an `agent_message` upsert with empty `content`, which clears the abandoned attempt's text in place;
   * the new attempt's chunks append to the same message. Tool calls are `tool_call_update` upserts there.
   */
  protocol?: 'v1' | 'v2';
  /**
   * The id of the message an attempt's text goes to; unique within the session. In `v1`, called once per
   * attempt that shows anything (a reset shows an empty message); in `v2`, once per turn. Default: a random
   * UUID.
   */
  messageId?: (attempt: number) => string;
  /**
   * The ACP tool call id of a call; default its effect key, unique within a session (turn ids scope it), where
   * provider ids need not be: Gemini's generated ids (`gemini-call-0`…) repeat in every turn.
   */
  toolCallId?: (call: ReleasedCall) => string;
  /** The human-readable title of a call; default its tool name. */
  title?: (call: ReleasedCall) => string;
  /** The ACP tool kind of a call, which editors use for icons; default `other`. */
  kind?: (call: ReleasedCall) => ToolKind;
}

/**
 * The ACP v1 notifications {@link toAcpUpdates} emits.
 *
 * @inline
 */
export type AcpNotification = SessionNotification;
/**
 * The ACP v2 draft notifications {@link toAcpUpdates} emits with `protocol: 'v2'`.
 *
 * @inline
 */
export type AcpV2Notification = UpdateSessionNotification;

/**
 * Turns the clean turn into ACP `session/update` notifications for an editor, with every reset made explicit.
 *
 * Text becomes `agent_message_chunk`s, reasoning `agent_thought_chunk`s (to a thought message of the attempt's
 * own: a new id per attempt with v1, `<message id>:thought` when `messageId` is given), a released call a `tool_call` (status `pending`, the arguments as
 * `rawInput`, the effect key in `_meta['cleanturn/effectKey']`), and an executor's result (a `tool-result`
 * event merged into the source) a `tool_call_update` (`completed`, `in_progress` or `failed`, with
 * `rawOutput`). Usage, finishes and call fragments become nothing: the prompt's response carries the stop
 * reason.
 *
 * ACP v1 cannot take back a chunk. On `reset` it starts a new message at once, with an empty chunk whose
 * `_meta['cleanturn/reset']` is `{ attempt, reason, supersedes }` and the facts of the retry that the reset
 * carries (`delay` until the next attempt, `retryCount`, `maxRetries`, `status`…: `AcpResetMeta`): an editor that
 * knows the key drops the superseded message (or collapses it into a "retried" marker); one that does not
 * shows the abandoned text above the new message. With `protocol: 'v2'` the draft's message replacement
 * clears the abandoned text in place, and every v2 editor drops it; an
 * `agent_thought` replacement clears the abandoned reasoning the same way. In v1 the reset meta names the
 * abandoned attempt's thought in `supersedesThought`. The reset comes when the attempt failed, before the wait:
 * an editor can say "retrying in 3 s (HTTP 503)" from the meta at once, in either protocol.
 *
 * ```text
 * source:   -A-D-X-B-E-K-F-|
 *           toAcpUpdates({ sessionId: 'sess-1', messageId: (attempt) => 'msg-' + attempt })
 * result:   -a-d-x-b-e-k---|
 *
 * where
 *   A = text "Checking order ORD-7781. ", attempt 1
 *   D = text "Refunding the dam", attempt 1
 *   X = reset to attempt 2 (connection reset)
 *   B = text "Checking order ORD-7781. ", attempt 2
 *   E = text "The book arrived damaged, so I have started a full refund.", attempt 2
 *   K = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 2, key 4d02b5b61ea1afa1
 *   F = finish stop, attempt 2
 *   a = {"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg-1","content":{"type":"text","text":"Checking order ORD-7781. "}}}
 *   d = {"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg-1","content":{"type":"text","text":"Refunding the dam"}}}
 *   x = {"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg-2","content":{"type":"text","text":""},"_meta":{"cleanturn/reset":{"attempt":2,"reason":"connection reset","supersedes":"msg-1"}}}}
 *   b = {"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg-2","content":{"type":"text","text":"Checking order ORD-7781. "}}}
 *   e = {"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg-2","content":{"type":"text","text":"The book arrived damaged, so I have started a full refund."}}}
 *   k = {"sessionId":"sess-1","update":{"sessionUpdate":"tool_call","toolCallId":"4d02b5b61ea1afa1","title":"issue_refund","name":"issue_refund","kind":"other","status":"pending","rawInput":{"order_id":"ORD-7781","amount":"full"},"_meta":{"cleanturn/effectKey":"4d02b5b61ea1afa1","cleanturn/attempt":2}}}
 * ```
 *
 * Every case of `marbles/toAcpUpdates.marbles.ts`, with pictures: `docs/operators/toAcpUpdates.md`.
 *
 * State: the live attempt, its message id, and whether that message has been shown.
 *
 * ## Example
 * ```ts
 * import * as acp from '@agentclientprotocol/sdk';
 * import { cleanTurn } from 'cleanturn';
 * import { toAcpUpdates } from 'cleanturn/acp';
 * import { concatMap, lastValueFrom } from 'rxjs';
 *
 * acp.agent().onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
 *   await lastValueFrom(
 *     providerEvents$.pipe(
 *       cleanTurn({ turnId: 'turn-42' }),
 *       toAcpUpdates({ sessionId: params.sessionId }),
 *       concatMap((update) => client.notify(acp.methods.client.session.update, update)),
 *     ),
 *     { defaultValue: undefined },
 *   );
 *   return { stopReason: 'end_turn' };
 * });
 * ```
 *
 * @see {@link acpMetaKeys} for the `_meta` keys and what an editor does with them.
 * @param options `sessionId`; optionally `protocol`, `messageId`, `toolCallId`, `title` and `kind`.
 * @returns An operator from the clean turn (and tool results) to `session/update` params.
 */
export function toAcpUpdates(
  options: ToAcpUpdatesOptions & { protocol?: 'v1' },
): OperatorFunction<AcpSourceEvent, AcpNotification>;
export function toAcpUpdates(
  options: ToAcpUpdatesOptions & { protocol: 'v2' },
): OperatorFunction<AcpSourceEvent, AcpV2Notification>;
export function toAcpUpdates(
  options: ToAcpUpdatesOptions,
): OperatorFunction<AcpSourceEvent, AcpNotification | AcpV2Notification>;
export function toAcpUpdates(
  options: ToAcpUpdatesOptions,
): OperatorFunction<AcpSourceEvent, AcpNotification | AcpV2Notification> {
  return function toAcpUpdatesOperator(source) {
    return defer(() => {
      const translator = options.protocol === 'v2' ? new V2Translator(options) : new V1Translator(options);
      return source.pipe(mergeMap((event) => translator.translate(event)));
    });
  };
}

type Meta = Record<string, unknown>;

/** The turn's state as an editor knows it, and the events that change it; the two protocols differ in how they say so. */
abstract class Translator<N> {
  /** The live attempt, and whether it finished. */
  protected readonly attempts = new AttemptTracker();
  /** The live attempt's message, once it has an id. */
  protected message: string | undefined = undefined;
  /** Whether the editor has been sent `message`. */
  protected shown = false;
  /** The message the live attempt's reasoning goes to (an ACP thought), once it has an id. */
  protected thought: string | undefined = undefined;
  /** Whether the editor has been sent `thought`. */
  protected thoughtShown = false;
  /** The tool call ids announced so far: a repeat of one updates it instead of announcing it again. */
  protected readonly announced = new Set<string>();

  constructor(protected readonly options: ToAcpUpdatesOptions) {}

  translate(event: AcpSourceEvent): N[] {
    // A result of an abandoned attempt's call is a straggler: the final attempt's calls get their own answers.
    if (event.type === 'tool-result')
      return this.attempts.isLive(event.call.attempt) ? [this.toolResult(event)] : [];
    const step = this.attempts.step(event);
    if (step === 'stale') return [];
    // An event of a newer attempt without a reset before it still starts over.
    const updates =
      step === 'newer'
        ? this.startAttempt(
            event.attempt,
            event.type === 'reset' ? event.reason : 'retry',
            event.type === 'reset' ? readRetryFacts(event) : {},
          )
        : [];
    if (event.type === 'text' && event.text !== '') {
      const message = this.messageId();
      this.shown = true;
      updates.push(this.chunk(message, event.text));
    } else if (event.type === 'reasoning' && event.text !== '') {
      const thought = this.thoughtId();
      this.thoughtShown = true;
      updates.push(this.thoughtChunk(thought, event.text));
    } else if (event.type === 'tool-call' || event.type === 'tool-call-repeat') {
      updates.push(this.toolCall(event));
    }
    return updates;
  }

  /** The message the next chunk goes to. */
  protected messageId(): string {
    if (this.message === undefined) {
      const { messageId } = this.options;
      this.message =
        messageId === undefined ? globalThis.crypto.randomUUID() : messageId(this.attempts.attempt);
    }
    return this.message;
  }

  /** The thought message the next reasoning chunk goes to: `<message id>:thought` with a `messageId` option. */
  protected thoughtId(): string {
    if (this.thought === undefined) {
      const { messageId } = this.options;
      this.thought =
        messageId === undefined
          ? globalThis.crypto.randomUUID()
          : `${messageId(this.attempts.attempt)}:thought`;
    }
    return this.thought;
  }

  protected toolCallId(call: ReleasedCall): string {
    return this.options.toolCallId?.(call) ?? call.effectKey;
  }

  /** The fields a call is announced with, in either protocol. */
  protected callFields(call: ReleasedCall, toolCallId: string) {
    const repeat = call.type === 'tool-call-repeat';
    // A repeat is already done: its key's effect ran, and its answer is the recorded result. Sharing the entry of
    // the call that runs that effect (same id), it leaves that entry's status to that call's result.
    const status = !repeat ? 'pending' : this.announced.has(toolCallId) ? undefined : 'completed';
    this.announced.add(toolCallId);
    return {
      toolCallId,
      title: this.options.title?.(call) ?? call.name,
      name: call.name,
      kind: this.options.kind?.(call) ?? 'other',
      ...(status === undefined ? {} : { status: status as 'pending' | 'completed' }),
      rawInput: call.args,
      _meta: {
        [acpMetaKeys.effectKey]: call.effectKey,
        [acpMetaKeys.attempt]: call.attempt,
        ...(repeat ? { [acpMetaKeys.repeat]: true } : {}),
      },
    };
  }

  /** The fields of a call's update from its result, in either protocol. */
  protected resultFields(result: ToolResultLike) {
    const read = toolResultStatus(result);
    const status = read.status === 'running' ? 'in_progress' : read.status;
    const _meta: Meta = { [acpMetaKeys.outcome]: result.outcome };
    if (read.inDoubt !== undefined) _meta[acpMetaKeys.inDoubt] = read.inDoubt;
    const fields: { toolCallId: string; status: typeof status; rawOutput?: unknown; _meta: Meta } = {
      toolCallId: this.toolCallId(result.call),
      status,
      _meta,
    };
    if (status === 'completed') fields.rawOutput = result.result;
    else if (status === 'failed') fields.rawOutput = result.error;
    return fields;
  }

  /** The meta of the update that announces a reset: its keys, then the facts of the retry. */
  protected resetMeta(
    attempt: number,
    reason: string,
    facts: RetryFacts,
    supersedes: string | undefined,
    supersedesThought?: string,
  ): Meta {
    const meta: AcpResetMeta = { attempt, reason };
    if (supersedes !== undefined) meta.supersedes = supersedes;
    if (supersedesThought !== undefined) meta.supersedesThought = supersedesThought;
    return { [acpMetaKeys.reset]: { ...meta, ...facts } };
  }

  protected abstract startAttempt(attempt: number, reason: string, facts: RetryFacts): N[];
  protected abstract chunk(messageId: string, text: string): N;
  protected abstract thoughtChunk(messageId: string, text: string): N;
  protected abstract toolCall(call: ReleasedCall): N;
  protected abstract toolResult(result: ToolResultLike): N;
}

/** ACP v1: a reset starts a new message; the reset meta names the one it supersedes. */
class V1Translator extends Translator<AcpNotification> {
  protected startAttempt(attempt: number, reason: string, facts: RetryFacts): AcpNotification[] {
    const supersedes = this.shown ? this.message : undefined;
    const supersedesThought = this.thoughtShown ? this.thought : undefined;
    this.message = undefined;
    this.thought = undefined;
    this.thoughtShown = false;
    const message = this.messageId();
    this.shown = true;
    return [
      this.notify({
        sessionUpdate: 'agent_message_chunk',
        messageId: message,
        content: { type: 'text', text: '' },
        _meta: this.resetMeta(attempt, reason, facts, supersedes, supersedesThought),
      }),
    ];
  }

  protected chunk(messageId: string, text: string): AcpNotification {
    return this.notify({ sessionUpdate: 'agent_message_chunk', messageId, content: { type: 'text', text } });
  }

  protected thoughtChunk(messageId: string, text: string): AcpNotification {
    return this.notify({ sessionUpdate: 'agent_thought_chunk', messageId, content: { type: 'text', text } });
  }

  protected toolCall(call: ReleasedCall): AcpNotification {
    const toolCallId = this.toolCallId(call);
    const known = this.announced.has(toolCallId);
    const fields = this.callFields(call, toolCallId);
    return known
      ? this.notify({ sessionUpdate: 'tool_call_update', ...fields })
      : this.notify({ sessionUpdate: 'tool_call', ...fields });
  }

  protected toolResult(result: ToolResultLike): AcpNotification {
    return this.notify({ sessionUpdate: 'tool_call_update', ...this.resultFields(result) });
  }

  private notify(update: AcpNotification['update']): AcpNotification {
    return { sessionId: this.options.sessionId, update };
  }
}

/** The ACP v2 draft: one message per turn, whose content a reset replaces with nothing. */
class V2Translator extends Translator<AcpV2Notification> {
  protected startAttempt(attempt: number, reason: string, facts: RetryFacts): AcpV2Notification[] {
    const message = this.messageId();
    this.shown = true;
    // The replacement itself clears the abandoned text: there is no other message to supersede.
    const updates = [
      this.notify({
        sessionUpdate: 'agent_message',
        messageId: message,
        content: [],
        _meta: this.resetMeta(attempt, reason, facts, undefined),
      }),
    ];
    // The abandoned reasoning is cleared the same way, in the thought it streamed to.
    if (this.thoughtShown && this.thought !== undefined) {
      updates.push(this.notify({ sessionUpdate: 'agent_thought', messageId: this.thought, content: [] }));
      this.thoughtShown = false;
    }
    return updates;
  }

  protected chunk(messageId: string, text: string): AcpV2Notification {
    return this.notify({ sessionUpdate: 'agent_message_chunk', messageId, content: { type: 'text', text } });
  }

  protected thoughtChunk(messageId: string, text: string): AcpV2Notification {
    return this.notify({ sessionUpdate: 'agent_thought_chunk', messageId, content: { type: 'text', text } });
  }

  protected toolCall(call: ReleasedCall): AcpV2Notification {
    return this.notify({
      sessionUpdate: 'tool_call_update',
      ...this.callFields(call, this.toolCallId(call)),
    });
  }

  protected toolResult(result: ToolResultLike): AcpV2Notification {
    return this.notify({ sessionUpdate: 'tool_call_update', ...this.resultFields(result) });
  }

  private notify(update: AcpV2Notification['update']): AcpV2Notification {
    return { sessionId: this.options.sessionId, update };
  }
}
