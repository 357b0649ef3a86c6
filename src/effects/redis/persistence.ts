// What the Redis effect ledger needs from the server to keep its promise, read from the server itself.
import type { Cluster, Redis } from 'ioredis';

/** The settings that decide whether a server can lose records; `undefined` where the server would not say. */
interface Settings {
  appendonly: string | undefined;
  appendfsync: string | undefined;
  maxmemory: string | undefined;
  maxmemoryPolicy: string | undefined;
}

/** Whether the server answered with an error (a disabled or forbidden command), rather than not at all. */
function isReplyError(error: unknown): boolean {
  return error instanceof Error && error.name === 'ReplyError';
}

/** `CONFIG GET name` → its value. */
async function config(node: Redis, name: string): Promise<string | undefined> {
  const reply = (await node.config('GET', name)) as unknown;
  return Array.isArray(reply) && typeof reply[1] === 'string' ? reply[1] : undefined;
}

/** The `name:value` fields of an `INFO` section. */
async function info(node: Redis, section: string): Promise<Map<string, string>> {
  const fields = new Map<string, string>();
  for (const line of (await node.info(section)).split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

/**
 * Reads the settings with `CONFIG GET`; where CONFIG is disabled or forbidden (managed services), from `INFO`,
 * which tells whether AOF is on and the eviction policy, but not the fsync policy.
 */
async function settings(node: Redis): Promise<Settings | undefined> {
  try {
    const [appendonly, appendfsync, maxmemory, maxmemoryPolicy] = await Promise.all(
      ['appendonly', 'appendfsync', 'maxmemory', 'maxmemory-policy'].map((name) => config(node, name)),
    );
    return { appendonly, appendfsync, maxmemory, maxmemoryPolicy };
  } catch (error) {
    if (!isReplyError(error)) throw error;
  }
  try {
    const [persistence, memory] = await Promise.all([info(node, 'persistence'), info(node, 'memory')]);
    const aof = persistence.get('aof_enabled');
    return {
      appendonly: aof === undefined ? undefined : aof === '1' ? 'yes' : 'no',
      appendfsync: undefined,
      maxmemory: memory.get('maxmemory'),
      maxmemoryPolicy: memory.get('maxmemory_policy'),
    };
  } catch (error) {
    if (!isReplyError(error)) throw error;
    return undefined;
  }
}

/** What can make one server lose ledger records; empty when nothing can (as far as it tells). */
async function nodeProblems(node: Redis, name: string): Promise<string[]> {
  const s = await settings(node);
  if (s === undefined) {
    return [`${name}: cannot read the persistence settings (CONFIG and INFO are refused)`];
  }
  const problems: string[] = [];
  if (s.appendonly === undefined) problems.push(`${name}: cannot tell whether appendonly is on`);
  else if (s.appendonly !== 'yes') {
    problems.push(`${name}: appendonly is ${s.appendonly}, so a restart forgets the claims and results`);
  }
  if (s.appendfsync === 'no') {
    problems.push(`${name}: appendfsync is no, so an OS crash or power loss can forget about 30 s of claims`);
  }
  if (s.maxmemory !== undefined && s.maxmemory !== '0' && s.maxmemoryPolicy !== 'noeviction') {
    problems.push(
      `${name}: maxmemory-policy ${s.maxmemoryPolicy ?? '(unknown)'} evicts keys under memory pressure ` +
        '(every ledger key has a TTL, so volatile-* policies evict them too)',
    );
  }
  return problems;
}

/**
 * Asks every server the ledger writes to (each master of a Cluster) whether it can lose records.
 *
 * @returns One line per problem; empty when the servers keep records through restarts and memory pressure.
 * @throws What the client throws when a server does not answer at all.
 */
export async function persistenceProblems(client: Redis | Cluster): Promise<string[]> {
  if (!client.isCluster) return nodeProblems(client as Redis, 'the server');
  const masters = (client as Cluster).nodes('master');
  const lists = await Promise.all(
    masters.map((node) => nodeProblems(node, `${node.options.host ?? '?'}:${node.options.port ?? '?'}`)),
  );
  return lists.flat();
}
