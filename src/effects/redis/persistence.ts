// What the Redis effect ledger needs from the server to keep its promise, read from the server itself.
import type { Cluster, Redis } from 'ioredis';
import { isReplyError, runRedisScript } from '../../internal/redisScripts.js';

/** The settings that decide whether a server can lose records; `undefined` where the server would not say. */
interface Settings {
  appendonly: string | undefined;
  appendfsync: string | undefined;
  maxmemory: string | undefined;
  maxmemoryPolicy: string | undefined;
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

/**
 * Lua: `cleanturnSettings()`, what a claim compares with the settings the ledger last checked: `aof_enabled`,
 * `maxmemory` and `maxmemory-policy` as `INFO` shows them (`'1,0,noeviction'`), read inside the script itself,
 * so that a server switched to an evicting policy, or to no AOF, after the check is seen by the next claim before
 * it writes (`CONFIG` cannot run in a script; `INFO` can, and still works where CONFIG is renamed). `''` when
 * INFO is refused: claims then rely on the check of each connection.
 */
export const SETTINGS_LUA = `
local function cleanturnSettings()
  local memory = redis.pcall('INFO', 'memory')
  local persistence = redis.pcall('INFO', 'persistence')
  if type(memory) ~= 'string' or type(persistence) ~= 'string' then return '' end
  return (string.match(persistence, 'aof_enabled:(%d+)') or '?') .. ',' ..
    (string.match(memory, '\\nmaxmemory:(%d+)') or '?') .. ',' ..
    (string.match(memory, 'maxmemory_policy:([%w%-]+)') or '?')
end
`;

/** The error a script answers with when the settings differ from those it was given: the ledger checks again. */
export const SETTINGS_CHANGED = 'CLEANTURN_SETTINGS';

/** The settings as a claim compares them (see {@link SETTINGS_LUA}). */
const SETTINGS = `${SETTINGS_LUA}
return cleanturnSettings()
`;

// KEYS[1] marker; ARGV settings as read before the check ('' : not compared), a new marker value.
// Answers {the marker's value, '1' when written now (the key was absent) else '0'}; errors with
// SETTINGS_CHANGED, writing nothing, when the settings are no longer the ones the check read.
const MARKER = `${SETTINGS_LUA}
if ARGV[1] ~= '' and cleanturnSettings() ~= ARGV[1] then
  return redis.error_reply('${SETTINGS_CHANGED} ' .. cleanturnSettings())
end
local value = redis.call('GET', KEYS[1])
if value then return {value, '0'} end
redis.call('SET', KEYS[1], ARGV[2])
return {ARGV[2], '1'}
`;

/** The settings a claim compares (see {@link SETTINGS_LUA}), as the server shows them now. */
export async function currentSettings(client: Redis): Promise<string> {
  return String(await runRedisScript(client, SETTINGS, [], []));
}

/**
 * The value of the ledger's marker key (a key without TTL that says the server still holds what the ledger
 * wrote), written with `candidate` if absent, unless the settings are no longer `settings`.
 *
 * @returns The marker's value and whether it was written now (it was absent), or `undefined` when the settings
 *   changed (and nothing was written).
 * @throws What the client throws (an OOM reply when the server is full and the marker is absent).
 */
export async function markerValue(
  client: Redis,
  key: string,
  settings: string,
  candidate: string,
): Promise<{ value: string; written: boolean } | undefined> {
  try {
    const [value, written] = (await runRedisScript(client, MARKER, [key], [settings, candidate])) as [
      string,
      string,
    ];
    return { value, written: written === '1' };
  } catch (error) {
    if (isReplyError(error) && error.message.startsWith(SETTINGS_CHANGED)) return undefined;
    throw error;
  }
}
