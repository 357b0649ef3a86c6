// The ACP adapter end to end: an agent in a child process (test/acp/fixtures/agent.ts) streams the help-desk
// turn through cleanTurn and toAcpUpdates over its stdin/stdout; this process is the editor, on the SDK's own
// client connection. The editor must show attempt 2's text only, one tool call (c7) with its effect key, and
// the reset.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import * as acp2 from '@agentclientprotocol/sdk/experimental/v2';
import { effectKey } from 'cleanturn';
import { helpDesk } from 'cleanturn/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { EditorTranscript } from './editor.js';

const root = join(import.meta.dirname, '..', '..');
const attempt1 = 'Checking order ORD-7781. Refunding the dam';
const attempt2 = 'Checking order ORD-7781. The book arrived damaged, so I have started a full refund.';
const c7Key = effectKey('turn-42', { name: 'issue_refund', args: helpDesk.refundArgs });
/** Attempt 2's refund (provider id c7) as the editor shows it: its ACP id is its effect key. */
const c7 = {
  id: c7Key,
  title: 'issue_refund {"order_id":"ORD-7781","amount":"full"}',
  status: 'pending',
  rawInput: helpDesk.refundArgs,
  effectKey: c7Key,
};

interface Agent {
  /** The process's pipes and child processes before the agent started. */
  baseline: string[];
  process: ChildProcessWithoutNullStreams;
  /** Resolves when the process has exited and its pipes are closed. */
  closed: Promise<void>;
  stderr: () => string;
  /** The agent's stdin and stdout as the web streams the SDK's transport reads and writes. */
  output: WritableStream<Uint8Array>;
  input: ReadableStream<Uint8Array>;
}

let running: Agent | undefined;

/** Starts the fixture agent: `node --import tsx test/acp/fixtures/agent.ts <protocol>`. */
function startAgent(protocol: 'v1' | 'v2'): Agent {
  const baseline = handles();
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'test/acp/fixtures/agent.ts'), protocol],
    {
      cwd: root,
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  running = {
    baseline,
    process: child,
    closed,
    stderr: () => stderr,
    output: Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
    input: Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
  };
  return running;
}

afterEach(async () => {
  const agent = running;
  running = undefined;
  if (agent === undefined) return;
  if (agent.process.exitCode === null && agent.process.signalCode === null) agent.process.kill();
  agent.process.stdin.destroy();
  agent.process.stdout.destroy();
  agent.process.stderr.destroy();
  await agent.closed;
  // Nothing of the child is left: no process handle, no pipe beyond those of the test runner itself. (libuv
  // releases a closed handle in the close phase of the event loop: give it a few turns.)
  for (let turn = 0; turn < 20 && handles().length > agent.baseline.length; turn++)
    await new Promise((resolve) => setImmediate(resolve));
  expect(handles()).toEqual(agent.baseline);
});

/** The child processes and pipes this process holds. */
function handles(): string[] {
  return process
    .getActiveResourcesInfo()
    .filter((r) => r === 'ProcessWrap' || r === 'PipeWrap')
    .sort();
}

/**
 * Lets the client connection finish applying notifications it has already read. The SDK settles a request's
 * response as soon as it reads it, while each notification passes through its handler chain in microtasks;
 * every notification the agent wrote before its response was read before it, so one macrotask turn later all
 * of them have been applied. (ACP v1 has no other end-of-turn signal than the prompt's response.)
 */
const notificationsApplied = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('toAcpUpdates over a real stdio pipe, against the SDK client connection', () => {
  it('ACP v1: the editor drops the superseded message and shows attempt 2 and one tool call, c7', async () => {
    const agent = startAgent('v1');
    const editor = new EditorTranscript();
    const unaware = new EditorTranscript(false);
    const received: acp.SessionNotification[] = [];

    const response = await acp
      .client({ name: 'test-editor' })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        received.push(params);
        editor.applyV1(params);
        unaware.applyV1(params);
      })
      .connectWith(acp.ndJsonStream(agent.output, agent.input), async (ctx) => {
        await ctx.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: {},
        });
        const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: root, mcpServers: [] });
        const prompted = await ctx.request(acp.methods.agent.session.prompt, {
          sessionId,
          prompt: [{ type: 'text', text: 'My book arrived damaged. Order ORD-7781.' }],
        });
        await notificationsApplied();
        return prompted;
      });

    expect(response.stopReason, agent.stderr()).toBe('end_turn');
    expect(editor.shown).toEqual({ messages: [attempt2], toolCalls: [c7] });
    expect(editor.resets).toEqual([{ attempt: 2, reason: 'connection reset', supersedes: 'msg-1' }]);
    expect(editor.dropped).toEqual(['msg-1']);
    // The wire, in order: attempt 1 on msg-1; the reset opens msg-2 with an empty chunk; then c7.
    expect(
      received.map(({ sessionId, update }) => [sessionId, update.sessionUpdate, messageIdOf(update)]),
    ).toEqual([
      ['sess-1', 'agent_message_chunk', 'msg-1'],
      ['sess-1', 'agent_message_chunk', 'msg-1'],
      ['sess-1', 'agent_message_chunk', 'msg-2'],
      ['sess-1', 'agent_message_chunk', 'msg-2'],
      ['sess-1', 'agent_message_chunk', 'msg-2'],
      ['sess-1', 'tool_call', undefined],
    ]);
    // An editor that ignores the meta still sees two messages: v1 cannot take the chunks back.
    expect(unaware.shown.messages).toEqual([attempt1, attempt2]);
  });

  it('ACP v2 draft: the message replacement clears attempt 1 in place, for any v2 editor', async () => {
    const agent = startAgent('v2');
    const editor = new EditorTranscript();
    const unaware = new EditorTranscript(false);
    let idle: () => void = () => {};
    const turnEnded = new Promise<void>((resolve) => {
      idle = resolve;
    });

    await acp2
      .client({ name: 'test-editor' })
      .onNotification(acp2.methods.client.session.update, ({ params }) => {
        editor.applyV2(params);
        unaware.applyV2(params);
        if (
          params.update.sessionUpdate === 'state_update' &&
          'state' in params.update &&
          params.update.state === 'idle'
        )
          idle();
      })
      .connectWith(acp2.ndJsonStream(agent.output, agent.input), async (ctx) => {
        await ctx.request(acp2.methods.agent.initialize, {
          protocolVersion: acp2.PROTOCOL_VERSION,
          info: { name: 'test-editor', version: '0.0.0' },
        });
        const { sessionId } = await ctx.request(acp2.methods.agent.session.new, { cwd: root });
        await ctx.request(acp2.methods.agent.session.prompt, {
          sessionId,
          prompt: [{ type: 'text', text: 'My book arrived damaged. Order ORD-7781.' }],
        });
        await turnEnded;
      });

    expect(editor.shown, agent.stderr()).toEqual({ messages: [attempt2], toolCalls: [c7] });
    expect(editor.resets).toEqual([{ attempt: 2, reason: 'connection reset' }]);
    expect(editor.dropped).toEqual([]);
    // No knowledge of cleanturn needed: the protocol's own replacement did it.
    expect(unaware.shown).toEqual(editor.shown);
  });
});

function messageIdOf(update: acp.SessionUpdate): string | null | undefined {
  return update.sessionUpdate === 'agent_message_chunk' ? update.messageId : undefined;
}
