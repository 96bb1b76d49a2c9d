// Issue 35: the package's module is built with panics as traps (`-Cpanic=immediate-abort`),
// and the glue's guard around every call into the module (scripts/guard-traps.mjs) reports
// a trap to the module, which does what the panic hook did (crates/outbox-idb/src/panic.rs):
// the transaction being written is aborted, the call being polled rejects with INTERNAL,
// the message goes to the console, and the instance goes on. A trap is made here as a bug
// would make one: a call into the module through a handle whose pointer is out of the
// module's memory, met in the middle of an enqueue's replace (from inside its first put).
import { test, expect, type BrowserContext, type Page } from "@playwright/test";
import { uid } from "./helpers";
import { packagePage } from "./configured";

/**
 * A package page whose `window.t.open(db)` opens an outbox and a handle of the module's
 * class whose pointer lies beyond its memory (`broken`: any call through it traps, an
 * out-of-bounds load, as a panic does in this build), and whose `window.t.trapInPut(rethrow)`
 * makes the next IndexedDB put call through `broken`: the trap's error is rethrown from
 * the put, or swallowed there. Console errors are collected in `errors`.
 */
async function trapPage(context: BrowserContext): Promise<{ page: Page; errors: string[] }> {
  const page = await packagePage(context);
  const errors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  await page.evaluate(() => {
    const t = window.t;
    t.open = async (db: string) => {
      const glue = await import("/pkg/outbox_idb.js" as string);
      t.outbox = await window.pkg.Outbox.open({ dbName: db, send: () => ({ type: "success", receipt: {} }) });
      t.broken = Object.create(glue.Outbox.prototype);
      t.broken.__wbg_ptr = 0xffffff00;
    };
    const put = IDBObjectStore.prototype.put;
    t.trapInPut = (rethrow: boolean) => {
      IDBObjectStore.prototype.put = function (this: IDBObjectStore, ...args: unknown[]) {
        IDBObjectStore.prototype.put = put;
        const request = put.apply(this, args as [unknown]);
        try {
          t.broken.close();
        } catch (e) {
          t.trapped = (e as Error).constructor.name;
          if (rethrow) throw e;
        }
        return request;
      };
    };
  });
  return { page, errors };
}

test("a trap mid-replace rejects the call with INTERNAL, writes nothing, and the instance goes on", async ({ context }) => {
  const { page, errors } = await trapPage(context);
  const result = await page.evaluate(async (db) => {
    const t = window.t;
    await t.open(db);
    t.trapInPut(true);
    const first = await t.outbox.enqueue({ owner: "o", kind: "create", body: { n: 1 } }).then(
      () => ({ code: "none", message: "" }),
      (e: any) => ({ code: e.code, message: String(e.message) }),
    );
    const afterTrap = (await t.outbox.rows("o")).length;
    // The instance goes on: the same handle enqueues, and a new one opens and reads it.
    await t.outbox.enqueue({ owner: "o", kind: "create", body: { n: 2 } });
    const again = await window.pkg.Outbox.open({ dbName: db, send: () => ({ type: "success", receipt: {} }) });
    const bodies = (await again.rows("o")).map((r: any) => r.body.n);
    t.outbox.close();
    again.close();
    return { first, afterTrap, bodies, trapKind: t.trapped };
  }, `db-${uid()}`);
  expect(result.trapKind).toBe("RuntimeError");
  expect(result.first.code).toBe("INTERNAL");
  expect(result.first.message).toMatch(/^outbox-idb: internal error, please report it: .+ \(at wasm-function\[\d+\]:0x[0-9a-f]+\)$/);
  expect(result.afterTrap).toBe(0);
  expect(result.bodies).toEqual([2]);
  expect(errors.some((e) => e.startsWith("outbox-idb: internal error, please report it: "))).toBe(true);
});

// The trap caught inside the put and not rethrown: the replace goes on issuing its writes as
// if nothing had happened, so only the guard's clean-up (the armed transaction aborted)
// keeps them from committing.
test("after a trap mid-replace, the transaction left armed is aborted by the guard's clean-up", async ({ context }) => {
  const { page } = await trapPage(context);
  const result = await page.evaluate(async (db) => {
    const t = window.t;
    await t.open(db);
    t.trapInPut(false);
    const code = await t.outbox.enqueue({ owner: "o", kind: "create", body: { n: 1 } }).then(
      () => "none",
      (e: any) => e.code,
    );
    const left = (await t.outbox.rows("o")).length;
    t.outbox.close();
    return { code, left, trapKind: t.trapped };
  }, `db-${uid()}`);
  expect(result).toEqual({ code: "INTERNAL", left: 0, trapKind: "RuntimeError" });
});

test("a trap outside any call is reported once and rethrown as it is", async ({ context }) => {
  const { page, errors } = await trapPage(context);
  const result = await page.evaluate(async (db) => {
    const t = window.t;
    await t.open(db);
    let thrown = "";
    try {
      t.broken.close();
    } catch (e) {
      thrown = (e as Error).constructor.name;
    }
    const row = await t.outbox.enqueue({ owner: "o", kind: "create", body: { n: 1 } });
    t.outbox.close();
    return { thrown, id: typeof row.id };
  }, `db-${uid()}`);
  expect(result).toEqual({ thrown: "RuntimeError", id: "string" });
  expect(errors.filter((e) => e.includes("internal error"))).toHaveLength(1);
});
