// A SQLite ledger that cannot write: a connection opened read-only, a `query_only` connection, a file made
// immutable (`chattr +i`: the tests run as root, which file modes do not stop, but the immutable flag does), a
// directory that is immutable, so that SQLite cannot create the WAL's `-shm` and `-wal` files beside the
// database. Each is a typed, non-retryable error at open or at the first write, and nothing is lost: no handler
// runs without its claim, and what the ledger already holds is still replayed.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { CleanturnError } from 'cleanturn';
import { EffectError, executeTools, type ToolHandlers } from 'cleanturn/effects';
import { SqliteEffectLedger } from 'cleanturn/effects/sqlite';
import { call, helpDesk, keyed } from 'cleanturn/testing';
import { from, lastValueFrom, toArray } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

const turnId = 'turn-42';
const refund = keyed(turnId, 2, call('c7', 'issue_refund', helpDesk.refundArgs));
const email = keyed(turnId, 2, call('c8', 'send_email', { to: 'ada@example.com' }));

/** Whether `chattr +i` works here (root on a file system with the immutable flag, such as ext4). */
function chattrWorks(dir: string): boolean {
  const probe = join(dir, 'chattr-probe');
  try {
    execFileSync('touch', [probe]);
    execFileSync('chattr', ['+i', probe], { stdio: 'ignore' });
    execFileSync('chattr', ['-i', probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(probe, { force: true });
  }
}

/** What `fn` throws (fails the test if it returns). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

function expectReadOnly(error: unknown, operation: string, code: RegExp): void {
  expect(error).toBeInstanceOf(EffectError);
  expect(error).toMatchObject({ code: 'ledger-read-only' });
  expect(error).toBeInstanceOf(CleanturnError);
  expect(error).toMatchObject({ name: 'EffectError', code: 'ledger-read-only', retryable: false, operation });
  expect((error as EffectError).driverCode).toMatch(code);
  expect((error as Error).message).toMatch(/cannot write/);
}

describe('SqliteEffectLedger on a database it cannot write', () => {
  let dir: string;
  let files = 0;
  /** Paths made immutable by a test: made mutable again afterwards, so that they can be removed. */
  const immutable: string[] = [];
  const closers: (() => void)[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'cleanturn-sqlite-ro-'));
  });
  afterEach(() => {
    for (const close of closers.splice(0)) close();
    for (const path of immutable.splice(0)) execFileSync('chattr', ['-i', path]);
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  /** A ledger file with the refund completed in it, closed again; returns its path. */
  function ledgerFile(parent = dir): string {
    const file = join(parent, `effects-${++files}.db`);
    const ledger = new SqliteEffectLedger({ database: file });
    const claim = ledger.claim(turnId, refund.effectKey, { leaseMs: 60_000 });
    if ('then' in claim || claim.status !== 'claimed') throw new Error('expected a claim');
    ledger.complete(turnId, refund.effectKey, claim.token, { refund_id: 're_7781' });
    ledger.close();
    return file;
  }
  function track<T extends { close(): unknown }>(closable: T): T {
    closers.push(() => closable.close());
    return closable;
  }
  function chattr(path: string) {
    execFileSync('chattr', ['+i', path]);
    immutable.push(path);
  }

  it('a database opened with readonly: true: the first write is a ledger-read-only error; replays still work', () => {
    const file = ledgerFile();
    const db = track(new Database(file, { readonly: true }));
    const ledger = new SqliteEffectLedger({ database: db });
    // What the ledger holds is still answered.
    expect(ledger.claim(turnId, refund.effectKey, { leaseMs: 60_000 })).toMatchObject({
      status: 'completed',
    });
    expect(ledger.get(turnId, refund.effectKey)).toMatchObject({ status: 'completed' });
    expectReadOnly(
      thrown(() => ledger.claim(turnId, email.effectKey, { leaseMs: 60_000 })),
      'claim',
      /^SQLITE_READONLY/,
    );
    expectReadOnly(
      thrown(() => ledger.purge()),
      'purge',
      /^SQLITE_READONLY|^$/,
    );
  });

  it('a database opened with readonly: true that has no ledger table yet: a ledger-read-only error at open', () => {
    const file = join(dir, `empty-${++files}.db`);
    new Database(file).close();
    const db = track(new Database(file, { readonly: true }));
    expectReadOnly(
      thrown(() => new SqliteEffectLedger({ database: db })),
      'open',
      /^SQLITE_READONLY/,
    );
  });

  it('a connection with PRAGMA query_only: the first write is a ledger-read-only error', () => {
    const db = track(new Database(ledgerFile()));
    db.pragma('query_only = 1');
    const ledger = new SqliteEffectLedger({ database: db });
    expectReadOnly(
      thrown(() => ledger.claim(turnId, email.effectKey, { leaseMs: 60_000 })),
      'claim',
      /^SQLITE_READONLY/,
    );
  });

  it('executeTools over a read-only ledger: the stream errors with EffectError ledger-read-only and no handler runs', async () => {
    const db = track(new Database(ledgerFile(), { readonly: true }));
    const ledger = new SqliteEffectLedger({ database: db });
    const ran: string[] = [];
    const handlers: ToolHandlers = {
      issue_refund: () => {
        ran.push('issue_refund');
        return { refund_id: 're_new' };
      },
      send_email: () => {
        ran.push('send_email');
      },
    };
    const results: unknown[] = [];
    const error = await lastValueFrom(
      from([refund, email]).pipe(executeTools(handlers, { turnId, ledger }), toArray()),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expectReadOnly(error, 'claim', /^SQLITE_READONLY/);
    expect(ran).toEqual([]);
    // The completed refund is still replayed from the read-only file.
    results.push(
      ...(await lastValueFrom(from([refund]).pipe(executeTools(handlers, { turnId, ledger }), toArray()))),
    );
    expect(results).toMatchObject([{ outcome: 'replayed', result: { refund_id: 're_7781' } }]);
    expect(ran).toEqual([]);
  });

  describe('as root: files made immutable (chattr +i)', () => {
    const canChattr = () => chattrWorks(dir);

    it('an immutable ledger file opens, replays what it holds, and the first write is a ledger-read-only error', (context) => {
      if (!canChattr()) context.skip();
      const file = ledgerFile();
      chattr(file);
      const ledger = track(new SqliteEffectLedger({ database: file }));
      expect(ledger.claim(turnId, refund.effectKey, { leaseMs: 60_000 })).toMatchObject({
        status: 'completed',
      });
      expectReadOnly(
        thrown(() => ledger.claim(turnId, email.effectKey, { leaseMs: 60_000 })),
        'claim',
        /^SQLITE_READONLY/,
      );
    });

    it('a ledger file in an immutable directory (no room for its -shm and -wal files): a ledger-read-only error at open', (context) => {
      if (!canChattr()) context.skip();
      const sub = join(dir, `sub-${++files}`);
      mkdirSync(sub);
      ledgerFile(sub);
      chattr(sub);
      expectReadOnly(
        thrown(() => track(new SqliteEffectLedger({ database: join(sub, `effects-${files}.db`) }))),
        'open',
        /^SQLITE_(CANTOPEN|READONLY)/,
      );
    });

    it('a new ledger file in an immutable directory: a ledger-read-only error at open', (context) => {
      if (!canChattr()) context.skip();
      const sub = join(dir, `sub-${++files}`);
      mkdirSync(sub);
      chattr(sub);
      expectReadOnly(
        thrown(() => track(new SqliteEffectLedger({ database: join(sub, 'new.db') }))),
        'open',
        /^SQLITE_(CANTOPEN|READONLY)/,
      );
    });
  });
});
