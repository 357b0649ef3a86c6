// Every block marked <!-- loopback --> in README.md and the guides (docs/guides/*.md) makes real requests: each runs
// in a child process against a server on 127.0.0.1 that speaks the OpenAI Chat Completions SSE format
// (OPENAI_BASE_URL points at it). The server resets the first connection half-way through attempt 1, after the
// refund call and inside a word, so the turn needs one retry. A block passes when it completes, the text it prints
// ends with attempt 2's, the refund's effect key is printed at most once, and the server saw exactly one request
// per attempt: two. A block that subscribes twice to a cold turn sends a third request, and fails.
import { readFileSync } from 'node:fs';
import { effectKey } from 'cleanturn';
import { describe, expect, it } from 'vitest';
import { documentPaths } from '../scripts/readme.js';
import { type CodeBlock, extractBlocks, runBlock } from '../scripts/readmeCode.js';
import type { TestServer } from './support/httpServer.js';
import {
  isNextRequest,
  lastSentence,
  nextRequestProblems,
  refund,
  retriedChatServer,
  stepTwoText,
} from './support/retriedChatServer.js';

// The refund's key in a turn of its own, and in step 1 of a run (the quick start's runSteps).
const refundKeys = [
  effectKey('turn-42', { name: 'issue_refund', args: refund }),
  effectKey('turn-42', { name: 'issue_refund', args: refund }, 1),
];
const apiKey = 'sk-loopback';

/** Runs a block against a fresh server; what it printed and the requests the server received. */
async function runAgainstServer(block: CodeBlock): Promise<{ stdout: string; server: TestServer }> {
  const server = await retriedChatServer();
  try {
    const stdout = await runBlock(block, {
      env: { OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: apiKey },
      timeout: 30_000,
    });
    return { stdout, server };
  } finally {
    await server.close();
  }
}

/** What is wrong with one run of a turn that needed one retry; empty when nothing is. */
function problemsOf({ stdout, server }: { stdout: string; server: TestServer }): string[] {
  const problems: string[] = [];
  // A block may go on to the next step of the loop: one request that sends the tool results back.
  const next = server.requests.filter((r) => isNextRequest(r.body));
  const attempts = server.requests.length - next.length;
  if (attempts !== 2)
    problems.push(`${attempts} requests for a turn of two attempts: one request per attempt is 2`);
  if (next.length > 1) problems.push(`${next.length} next requests: the step after the turn is one request`);
  for (const request of next) {
    problems.push(...nextRequestProblems(request.body).map((p) => `the next request: ${p}`));
    // Nothing of the abandoned attempt goes back: neither its call nor its text.
    if (request.body.includes('call_c1')) problems.push("the next request holds attempt 1's call c1");
    if (request.body.includes('Refunding the dam')) problems.push("the next request holds attempt 1's text");
  }
  for (const request of server.requests) {
    const where = `${request.method} ${request.url}`;
    if (where !== 'POST /v1/chat/completions') problems.push(`unexpected request ${where}`);
    if (request.headers.authorization !== `Bearer ${apiKey}`) problems.push(`${where} without the API key`);
    let body: { stream?: unknown } = {};
    try {
      body = JSON.parse(request.body) as { stream?: unknown };
    } catch {
      problems.push(`${where}: the body is not JSON`);
    }
    if (body.stream !== true) problems.push(`${where}: the body does not ask for a stream`);
  }
  if (!stdout.includes(lastSentence))
    problems.push(`the output lacks attempt 2's text: ${JSON.stringify(stdout)}`);
  const keys = refundKeys.reduce((n, key) => n + stdout.split(key).length - 1, 0);
  if (keys > 1)
    problems.push(`the refund's effect key is printed ${keys} times: the refund ran more than once`);
  return problems;
}

const loopbackBlocks = documentPaths().flatMap((file) =>
  extractBlocks(readFileSync(file, 'utf8'))
    .filter((block) => block.markers.has('loopback'))
    .map((block) => ({ file, block })),
);

describe('blocks that make requests', () => {
  it('include the quick start and the transport guide’s streamTurn example', () => {
    const names = loopbackBlocks.map(({ file, block }) => `${file} ${block.code.includes('streamTurn(')}`);
    expect(names).toContain('README.md true');
    expect(names).toContain('docs/guides/transport.md true');
  });

  it("the quick start sends the next request: the final attempt's call answered, step 2's text printed", async () => {
    const quickStart = loopbackBlocks.find(({ file }) => file === 'README.md');
    const run = await runAgainstServer((quickStart as { block: CodeBlock }).block);
    expect(problemsOf(run)).toEqual([]);
    const next = run.server.requests.filter((r) => isNextRequest(r.body));
    expect(next).toHaveLength(1);
    const { messages } = JSON.parse(next[0]?.body ?? '{}') as { messages: { role: string }[] };
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(next[0]?.body).toContain('call_c7');
    expect(run.stdout).toContain(stepTwoText);
  }, 40_000);

  for (const { file, block } of loopbackBlocks) {
    it(`${file}:${block.line} sends one request per attempt and prints the clean turn`, async () => {
      expect(problemsOf(await runAgainstServer(block))).toEqual([]);
    }, 40_000);
  }
});

describe('the request check can fail', () => {
  const turn = [
    "import { share } from 'rxjs';",
    "import { openaiChat } from 'cleanturn/providers';",
    "import { streamTurn } from 'cleanturn/transport';",
    '',
    'const turn$ = streamTurn({',
    "  turnId: 'turn-42',",
    '  adapter: openaiChat(),',
    '  backoff: false,',
    '  request: ({ signal }) => ({',
    "    url: process.env.OPENAI_BASE_URL + '/chat/completions',",
    "    init: { method: 'POST', signal, headers: { authorization: 'Bearer ' + process.env.OPENAI_API_KEY },",
    "      body: JSON.stringify({ model: 'gpt-4.1', stream: true }) },",
    '  }),',
    '})',
  ];
  const print = [
    "turn$.subscribe((event) => { if (event.type === 'text') process.stdout.write(event.text); });",
    "turn$.subscribe((event) => { if (event.type === 'tool-call') console.log(event.effectKey); });",
  ];
  const block = (code: string[]): CodeBlock =>
    extractBlocks(['```ts', ...code, '```'].join('\n'))[0] as CodeBlock;

  it('fails a turn subscribed twice without share(): a third request', async () => {
    const problems = problemsOf(await runAgainstServer(block([...turn, ';', ...print])));
    expect(problems.join('\n')).toMatch(/^3 requests for a turn of two attempts/m);
  }, 40_000);

  it("fails a next request that sends the abandoned attempt's call back", async () => {
    const next = [
      "const url = process.env.OPENAI_BASE_URL + '/chat/completions';",
      "const headers = { authorization: 'Bearer ' + process.env.OPENAI_API_KEY };",
      'await lastValueFrom(turn$.pipe(share()));',
      'const assistant = { role: "assistant", content: "Refunding the dam", tool_calls: [',
      '  { id: "call_c1", type: "function", function: { name: "issue_refund", arguments: "{}" } }] };',
      "const messages = [assistant, { role: 'tool', tool_call_id: 'call_c1', content: '{}' }];",
      "await fetch(url, { method: 'POST', headers, body: JSON.stringify({ model: 'gpt-4.1', stream: true, messages }) });",
    ];
    const code = ["import { lastValueFrom } from 'rxjs';", ...turn, ';', ...next];
    const problems = problemsOf(await runAgainstServer(block(code)));
    expect(problems).toContain("the next request holds attempt 1's call c1");
    expect(problems).toContain("the next request holds attempt 1's text");
  }, 40_000);

  it('passes the same turn shared by its two subscribers', async () => {
    expect(problemsOf(await runAgainstServer(block([...turn, '.pipe(share());', ...print])))).toEqual([]);
  }, 40_000);
});
