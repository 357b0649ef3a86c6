// The README's quick start, run as a new user runs it when something is wrong before the first token: a wrong key
// (the server answers 401 with OpenAI's error body, which is never retried) and a host that cannot be reached (a
// closed port on 127.0.0.1: each attempt is refused, then the turn gives up). Each run ends with one line on stderr
// that says what happened and names the cause, no stack, and exit code 1. The block runs as
// test/readme-loopback.test.ts runs it: in a child process, with OPENAI_BASE_URL and OPENAI_API_KEY set.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { BlockRunError, type CodeBlock, extractBlocks, runBlock } from '../scripts/readmeCode.js';
import { listenOnLoopback, startServer } from './support/httpServer.js';

const quickStart = extractBlocks(readFileSync('README.md', 'utf8')).find((block) =>
  block.markers.has('loopback'),
) as CodeBlock;

/** What OpenAI answers for a wrong key. */
const invalidKey = {
  error: {
    message:
      'Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.',
    type: 'invalid_request_error',
    param: null,
    code: 'invalid_api_key',
  },
};

/** Runs the quick start with `baseUrl`; how it ended. A run that succeeds fails the test. */
async function failedRun(baseUrl: string): Promise<BlockRunError> {
  const outcome = await runBlock(quickStart, {
    env: { OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: 'sk-wrong' },
    timeout: 30_000,
  }).then(
    (stdout) => new Error(`the quick start succeeded: ${stdout}`),
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(BlockRunError);
  return outcome as BlockRunError;
}

/** The lines of stderr, without the empty last one. */
const linesOf = (text: string) =>
  text.split(/\r?\n/).filter((line, i, all) => line !== '' || i < all.length - 1);

describe("the quick start's failed turn ends with one line and exit code 1", () => {
  it('a wrong key: the 401, what OpenAI said, and which variable to check', async () => {
    const server = await startServer([
      { status: 401, headers: { 'content-type': 'application/json' }, body: JSON.stringify(invalidKey) },
    ]);
    try {
      const run = await failedRun(`${server.url}/v1`);
      expect(run.exitCode).toBe(1);
      const lines = linesOf(run.stderr);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^HTTP 401 Unauthorized: Incorrect API key provided: sk-wrong\./);
      expect(lines[0]).toContain('OPENAI_API_KEY');
      expect(run.stderr).not.toMatch(/^\s+at /m);
      expect(run.stderr).not.toContain('{"error"');
      // A 401 is not retried: one request.
      expect(server.requests).toHaveLength(1);
    } finally {
      await server.close();
    }
  }, 40_000);

  it('a host that refuses the connection: the attempts and the refusal, with the address', async () => {
    // A port nothing listens on: listened on, noted, closed.
    const { port, close } = await listenOnLoopback(createServer());
    await close();
    const run = await failedRun(`http://127.0.0.1:${port}/v1`);
    expect(run.exitCode).toBe(1);
    const lines = linesOf(run.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/after 3 attempts?\b/);
    expect(lines[0]).toContain(`ECONNREFUSED 127.0.0.1:${port}`);
    expect(lines[0]).toContain('OPENAI_BASE_URL');
    expect(run.stderr).not.toMatch(/^\s+at /m);
  }, 40_000);
});
