// A read that fails inside a write transaction of a flush (issue 35: the transaction's reads
// wait on the last request's promise alone and take the others' results from their
// requests). IndexedDB settles a transaction's requests in order and a failed request
// aborts its transaction, so the reads after it fail too: the flush must report the read
// that failed (not the abort that followed it), write nothing, and leave every row to the
// next flush, which sends each once.
import { test, expect } from "@playwright/test";
import { uid, openTab, rows, enqueue, flush, timesApplied } from "./helpers";

let user: string;
let db: string;
test.beforeEach(() => {
  user = `u${uid()}`;
  db = `db-${uid()}`;
});

test("the second read of a flush's claim fails: that read's error, nothing written, each row sent once by the next flush", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const ops = [];
  for (const w of [1, 2, 3]) ops.push(await enqueue(a, { kind: "create", body: { entity: "workout", weight: w } }));
  const before = await rows(a);
  expect(before.map((r) => r.state)).toEqual(["queued", "queued", "queued"]);
  // The claim reads each row by its key (IDBObjectStore.getAll) in one readwrite
  // transaction. Its second read is replaced by a request that fails later, in its turn:
  // an `add` under that row's key, which exists (ConstraintError). The reads after it are
  // then aborted (AbortError): the one the flush waits on.
  await a.evaluate(() => {
    const getAll = IDBObjectStore.prototype.getAll;
    let seen = 0;
    (window as any).__failedReads = 0;
    IDBObjectStore.prototype.getAll = function (this: IDBObjectStore, ...args: any[]) {
      if (this.transaction.mode === "readwrite" && (window as any).__failedReads === 0 && ++seen === 2) {
        (window as any).__failedReads = 1;
        return this.add({ id: args[0] }) as unknown as IDBRequest<any[]>;
      }
      return (getAll as any).apply(this, args);
    } as any;
    (window as any).__restoreReads = () => { IDBObjectStore.prototype.getAll = getAll; };
  });
  const failed = await a.evaluate(() =>
    window.outboxDemo.flushNow().then(
      (report: any) => ({ report }),
      (e: any) => ({ code: e.code, message: String(e.message), report: e.report }),
    ),
  );
  expect(await a.evaluate(() => (window as any).__failedReads)).toBe(1);
  expect(failed).toMatchObject({ code: "STORAGE" });
  // The read that failed, not the abort it caused in the reads after it.
  expect((failed as any).message).toMatch(/^read: /);
  // (Chromium's words for the ConstraintError; an AbortError says the transaction was aborted.)
  expect((failed as any).message).toContain("Key already exists");
  expect((failed as any).message).not.toMatch(/abort/i);
  // Nothing written: the rows are exactly as before, none claimed, none sent.
  expect(await rows(a)).toEqual(before);
  for (const op of ops) expect(await timesApplied(request, op.id)).toBe(0);
  // The next flush sends each row once.
  await a.evaluate(() => (window as any).__restoreReads());
  const rep = await flush(a);
  expect(rep.succeeded).toBe(3);
  for (const op of ops) expect(await timesApplied(request, op.id)).toBe(1);
  expect(await rows(a)).toEqual([]);
});
