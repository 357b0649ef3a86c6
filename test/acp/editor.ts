// An editor's model of a session's transcript, built from `session/update` notifications the way
// docs/guides/renderers.md tells editors to: messages by `messageId`, tool calls by `toolCallId`, and (ACP v1) a
// message superseded by a reset (`_meta['cleanturn/reset'].supersedes`) dropped.
import type { SessionNotification } from '@agentclientprotocol/sdk';
import type { UpdateSessionNotification } from '@agentclientprotocol/sdk/experimental/v2';
import { acpMetaKeys } from 'cleanturn/acp';
import type { AcpResetMeta } from '../../src/acp/acpMetaKeys.js';

/** A tool call as the editor shows it. */
export interface EditorToolCall {
  id: string;
  title: string | undefined;
  status: string;
  rawInput: unknown;
  rawOutput?: unknown;
  effectKey: unknown;
}

type Meta = { [key: string]: unknown } | null | undefined;
type TextBlock = { type: string; text?: string };

const textOf = (block: TextBlock) => (block.type === 'text' ? (block.text ?? '') : '');

export class EditorTranscript {
  /** Message texts by id, in the order the messages appeared. */
  readonly messages = new Map<string, string>();
  readonly toolCalls = new Map<string, EditorToolCall>();
  /** Every reset the agent announced. */
  readonly resets: AcpResetMeta[] = [];
  /** Messages dropped because a reset superseded them. */
  readonly dropped: string[] = [];
  /** The message a chunk without an id goes to. */
  private lastMessage = '';

  /** @param obeyResets `false` for an editor that does not know the `cleanturn/reset` key. */
  constructor(private readonly obeyResets = true) {}

  /** What the editor shows: the message texts in order, and the tool calls. */
  get shown(): { messages: string[]; toolCalls: EditorToolCall[] } {
    return { messages: [...this.messages.values()], toolCalls: [...this.toolCalls.values()] };
  }

  /** Applies an ACP v1 notification. */
  applyV1({ update }: SessionNotification): void {
    switch (update.sessionUpdate) {
      case 'agent_message_chunk':
        this.reset(update._meta);
        this.append(update.messageId ?? this.lastMessage, textOf(update.content));
        return;
      case 'tool_call':
        this.toolCalls.set(update.toolCallId, {
          id: update.toolCallId,
          title: update.title,
          status: update.status ?? 'pending',
          rawInput: update.rawInput,
          effectKey: update._meta?.[acpMetaKeys.effectKey],
        });
        return;
      case 'tool_call_update': {
        const shown = this.toolCalls.get(update.toolCallId);
        if (shown === undefined) return;
        if (update.status != null) shown.status = update.status;
        if (update.rawOutput !== undefined) shown.rawOutput = update.rawOutput;
        return;
      }
    }
  }

  /**
   * Applies an ACP v2 draft notification. `agent_message` is an upsert whose `content` replaces what the
   * message holds; chunks append; `tool_call_update` upserts a call.
   */
  applyV2({ update }: UpdateSessionNotification): void {
    switch (update.sessionUpdate) {
      case 'agent_message': {
        const message = update as { messageId: string; content?: TextBlock[] | null; _meta?: Meta };
        this.reset(message._meta);
        if (message.content !== undefined)
          this.messages.set(message.messageId, (message.content ?? []).map(textOf).join(''));
        else if (!this.messages.has(message.messageId)) this.messages.set(message.messageId, '');
        return;
      }
      case 'agent_message_chunk': {
        const chunk = update as { messageId: string; content: TextBlock };
        this.append(chunk.messageId, textOf(chunk.content));
        return;
      }
      case 'tool_call_update': {
        const patch = update as {
          toolCallId: string;
          title?: string | null;
          status?: string | null;
          rawInput?: unknown;
          rawOutput?: unknown;
          _meta?: Meta;
        };
        const shown = this.toolCalls.get(patch.toolCallId) ?? {
          id: patch.toolCallId,
          title: undefined,
          status: 'pending',
          rawInput: undefined,
          effectKey: undefined,
        };
        if (patch.title !== undefined) shown.title = patch.title ?? undefined;
        if (patch.status != null) shown.status = patch.status;
        if (patch.rawInput !== undefined) shown.rawInput = patch.rawInput;
        if (patch.rawOutput !== undefined) shown.rawOutput = patch.rawOutput;
        const key = patch._meta?.[acpMetaKeys.effectKey];
        if (key !== undefined) shown.effectKey = key;
        this.toolCalls.set(patch.toolCallId, shown);
        return;
      }
    }
  }

  private append(messageId: string, text: string): void {
    this.lastMessage = messageId;
    this.messages.set(messageId, (this.messages.get(messageId) ?? '') + text);
  }

  /** What the docs tell an editor to do with a reset: drop the superseded message. */
  private reset(meta: Meta): void {
    const value = meta?.[acpMetaKeys.reset] as AcpResetMeta | undefined;
    if (value === undefined || !this.obeyResets) return;
    this.resets.push(value);
    if (value.supersedes !== undefined && this.messages.delete(value.supersedes))
      this.dropped.push(value.supersedes);
  }
}
