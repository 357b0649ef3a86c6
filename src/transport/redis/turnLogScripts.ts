/**
 * The Lua scripts of the Redis turn log, one per write or read that has to see several keys at once, and the shapes
 * of their answers. Sent whole with `EVAL` (see `runRedisScript`), but for the append and the page read, sent by
 * their SHA-1 (see `runCachedTurnScript`).
 *
 * @module
 */
import type { StreamEntry } from './streamEntries.js';

// The owner key holds `running:<token>` from the claim, then `ended:<token>` with the end entry: the token is the
// claimer's (or the taker-over's), and only its appends are taken. What is before the colon is the turn's state.
// The lease key holds the runner's token for `leaseMs`, renewed while it runs; the meta key holds
// `<claimedAt>:<takeovers>`.
//
// KEYS[1] stream, KEYS[2] owner, KEYS[3] lease, KEYS[4] meta; ARGV 'claim' or 'release', the claimer's token,
// ttlMs, leaseMs, the claimer's clock in ms.
// claim: 1 for the first claim of the turn, and for a try again of this very claim (Redis applied an earlier
// send, whose answer was lost or late); 0 while the turn is another claimer's (or ran).
// release: undoes this claim while the turn has no entry (a claim given up on, applied late); 1 if it did.
// A release sent after a claim runs after it on the same connection: scripts are sent whole (runRedisScript).
const OWNER = `
local owner = redis.call('GET', KEYS[2])
local mine = owner == 'running:' .. ARGV[2]
if ARGV[1] == 'release' then
  if mine and redis.call('XLEN', KEYS[1]) == 0 then
    redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
    return 1
  end
  return 0
end
if mine then return 1 end
if owner then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], 'running:' .. ARGV[2], 'PX', ARGV[3])
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[4])
redis.call('SET', KEYS[4], ARGV[5] .. ':0', 'PX', ARGV[3])
return 1
`;

// KEYS[1] stream, KEYS[2] owner, KEYS[3] lease, KEYS[4] meta; ARGV the runner's token, leaseMs, ttlMs. Extends the
// lease of a running turn that is still this token's (a lease that lapsed unseen is taken again), and keeps the
// turn for ttlMs more (a quiet runner is not forgotten): 1, else 0.
const RENEW = `
if redis.call('GET', KEYS[2]) ~= 'running:' .. ARGV[1] then return 0 end
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('PEXPIRE', KEYS[4], ARGV[3])
return 1
`;

// KEYS[1] stream, KEYS[2] owner, KEYS[3] lease, KEYS[4] meta; ARGV the new token, leaseMs, ttlMs. Takes over a running
// turn whose lease lapsed: false when there is nothing to take over, else {takeovers, claimedAt, last entry id or
// ''}. A try again of a takeover Redis applied answers the same.
const TAKE_OVER = `
local owner = redis.call('GET', KEYS[2])
local meta = redis.call('GET', KEYS[4])
-- A turn claimed by a log without leases (an older version of it, during a rolling upgrade) is never taken over.
if not owner or not meta then return false end
local colon = string.find(meta, ':', 1, true)
local claimed = string.sub(meta, 1, colon - 1)
local count = tonumber(string.sub(meta, colon + 1))
if owner ~= 'running:' .. ARGV[1] then
  if string.match(owner, '^%a+') ~= 'running' or redis.call('EXISTS', KEYS[3]) == 1 then return false end
  count = count + 1
  redis.call('SET', KEYS[2], 'running:' .. ARGV[1], 'PX', ARGV[3])
  redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
  redis.call('SET', KEYS[4], claimed .. ':' .. count, 'PX', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local lastId = ''
if last[1] then lastId = last[1][1] end
return {count, claimed, lastId}
`;

// KEYS[1] stream, KEYS[2] owner, KEYS[3] lease, KEYS[4] meta; ARGV id, entry JSON, maxEntries, ttlMs, '1' for the end ('0' otherwise), the
// claimer's token, the id after ARGV[1].
// Answers {'ok'} | {'unknown'} | {'not-owner'} | {'ended'} | {'refused', why}.
// A try again of a write Redis applied (the same entry at the same id) answers ok and writes nothing. An end whose
// id holds another entry (the runner's last write, given up on and then applied late) goes right after it, so
// that the turn still ends for its readers.
const APPEND = `
local owner = redis.call('GET', KEYS[2])
if not owner then return {'unknown'} end
local colon = string.find(owner, ':', 1, true)
local state = owner
local token = ''
if colon then
  state = string.sub(owner, 1, colon - 1)
  token = string.sub(owner, colon + 1)
end
if token ~= ARGV[6] then
  if state == 'ended' then return {'ended'} end
  return {'not-owner'}
end
local id = ARGV[1]
local there = redis.call('XRANGE', KEYS[1], id, id)
if there[1] and there[1][2][2] ~= ARGV[2] and ARGV[5] == '1' then
  id = ARGV[7]
  there = redis.call('XRANGE', KEYS[1], id, id)
end
if there[1] then
  if there[1][2][2] == ARGV[2] then return {'ok'} end
  return {'refused', 'entry ' .. id .. ' holds another entry'}
end
if state == 'ended' then return {'ended'} end
local added = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], id, 'entry', ARGV[2])
if type(added) == 'table' and added.err then return {'refused', added.err} end
if ARGV[5] == '1' then
  redis.call('SET', KEYS[2], 'ended:' .. ARGV[6], 'PX', ARGV[4])
  redis.call('DEL', KEYS[3])
else
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[4], ARGV[4])
return {'ok'}
`;

// KEYS[1] stream, KEYS[2] owner; ARGV first id, count. Answers false for an unknown turn, else
// {'running'|'ended', entries from the first id on, the last entry (none for a turn without entries)}.
const PAGE_OF = `
local owner = redis.call('GET', KEYS[2])
if not owner then return false end
local state = string.match(owner, '^%a+')
return {
  state,
  redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[2]),
  redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1),
}
`;

// KEYS[1] stream, KEYS[2] owner, KEYS[3] stop mark; ARGV reason, ttlMs. Marks a running turn as asked to stop (the
// first reason stays): 1, or 0 for a turn that is unknown or ended.
const STOP = `
local owner = redis.call('GET', KEYS[2])
if not owner or string.match(owner, '^%a+') ~= 'running' then return 0 end
redis.call('SET', KEYS[3], ARGV[1], 'NX', 'PX', ARGV[2])
return 1
`;

// KEYS[1] stream, KEYS[2] owner, KEYS[3] stop mark. Answers {'stop', reason} for a running turn asked to stop,
// {'running'}, {'ended'}, or {'unknown'}.
const STOP_STATE = `
local owner = redis.call('GET', KEYS[2])
if not owner then return {'unknown'} end
local state = string.match(owner, '^%a+')
if state ~= 'running' then return {state} end
local reason = redis.call('GET', KEYS[3])
if reason then return {'stop', reason} end
return {'running'}
`;

/** The scripts of the log, by what they do. */
export const scripts = {
  owner: OWNER,
  renew: RENEW,
  takeOver: TAKE_OVER,
  append: APPEND,
  page: PAGE_OF,
  stop: STOP,
  stopState: STOP_STATE,
};

/** The answer of `scripts.takeOver`: null when there is nothing to take over. */
export type TakeOverAnswer = [takeovers: number, claimedAt: string, lastId: string] | null;

/** The answer of `scripts.append`: a status, and for `refused` why. */
export type AppendAnswer = [status: string, detail: string | undefined];

/** The answer of `scripts.page`: null for an unknown turn. */
export type PageAnswer = [state: string, entries: StreamEntry[], last: StreamEntry[]] | null;

/** The answer of `scripts.stopState`: the state, and for `stop` the reason. */
export type StopStateAnswer = [state: string, reason: string | undefined];
