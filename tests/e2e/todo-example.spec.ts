// Issue 34: the to-do example (docs/examples/todo/) driven as a user would: two tabs,
// offline edits, the network's return, and what is (not) sent. The example's files are
// served on the gate's origin by a route; the page imports the package from /pkg.
import { test, expect, type BrowserContext, type Page } from "@playwright/test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { uid, effects } from "./helpers";

const DIR = fileURLToPath(new URL("../../docs/examples/todo/", import.meta.url));

/** The example's outbox code: the non-empty lines between the markers. */
function outboxLines(): string[] {
  const source = readFileSync(join(DIR, "app.js"), "utf8").split("\n");
  const begin = source.findIndex((l) => l.includes("// outbox:begin"));
  const end = source.findIndex((l) => l.includes("// outbox:end"));
  expect(begin).toBeGreaterThanOrEqual(0);
  expect(end).toBeGreaterThan(begin);
  // Everything outside the markers must be UI: no other call of the package.
  const outside = [...source.slice(0, begin), ...source.slice(end + 1)].join("\n");
  expect(outside).not.toMatch(/outbox\.(enqueue|flush|liveRecords|subscribe|ack|claim)\(/);
  return source.slice(begin + 1, end).filter((l) => l.trim() !== "");
}

async function serveExample(context: BrowserContext) {
  await context.route((url) => url.pathname.startsWith("/todo/"), (route) => {
    const name = new URL(route.request().url()).pathname.replace(/^\/todo\//, "") || "index.html";
    return route.fulfill({ path: join(DIR, name) });
  });
}

async function openTodo(context: BrowserContext, user: string, backoffMs?: number): Promise<Page> {
  const page = await context.newPage();
  page.on("pageerror", (e) => console.error(`[todo page] ${e}`));
  const q = new URLSearchParams({ user, ...(backoffMs ? { backoffMs: String(backoffMs) } : {}) });
  await page.goto(`/todo/index.html?${q}`);
  await page.waitForFunction(() => (window as any).todoApp?.ready === true);
  return page;
}

const item = (page: Page, title: string) => page.locator(`#list li[data-title="${title}"]`);

async function add(page: Page, title: string) {
  await page.fill("#new", title);
  await page.press("#new", "Enter");
  await expect(item(page, title)).toHaveCount(1);
}

async function toggle(page: Page, title: string) {
  await item(page, title).locator('input[type="checkbox"]').click();
}

async function rename(page: Page, from: string, to: string) {
  // One step (the list re-renders when any tab changes it): what typing and Enter do.
  await item(page, from).locator("input.title").evaluate((el: HTMLInputElement, to) => {
    el.value = to;
    el.dispatchEvent(new Event("change"));
  }, to);
  await expect(item(page, to)).toHaveCount(1);
}

async function remove(page: Page, title: string) {
  await item(page, title).locator("button.delete").click();
  await expect(item(page, title)).toHaveCount(0);
}

/** What the page shows: `{key, title, done}` per item, sorted by title. */
async function shown(page: Page) {
  const items = await page.locator("#list li").evaluateAll((lis) =>
    lis.map((li) => ({
      key: (li as HTMLElement).dataset.key,
      title: (li.querySelector("input.title") as HTMLInputElement).value,
      done: (li.querySelector('input[type="checkbox"]') as HTMLInputElement).checked,
    })));
  return items.sort((a, b) => a.title.localeCompare(b.title));
}

/** The server's records of `user`, in the same shape. */
async function serverTodos(page: Page, user: string) {
  const res = await page.request.get("/api/records", { headers: { Authorization: `Bearer ${user}.session` } });
  const records: any[] = await res.json();
  return records
    .filter((r) => String(r.serverId).startsWith("todo:"))
    .map((r) => ({ key: r.serverId, title: r.body.title, done: r.body.done }))
    .sort((a, b) => a.title.localeCompare(b.title));
}

const queueLength = (page: Page) => page.evaluate(async () => {
  const { outbox, user } = (window as any).todoApp;
  return (await outbox.rows(user)).length;
});

test("the example's outbox code is at most 35 lines", () => {
  const lines = outboxLines();
  console.log(`todo example: ${lines.length} lines of outbox code`);
  expect(lines.length).toBeLessThanOrEqual(35);
});

test("offline edits in two tabs are applied once each, and both tabs show the server's records", async ({ context, request }) => {
  const user = `u${uid()}`;
  await serveExample(context);
  const a = await openTodo(context, user);
  const b = await openTodo(context, user);

  // Online first: two todos the server has.
  await add(a, "old");
  await add(a, "keep");
  await expect.poll(() => serverTodos(a, user)).toHaveLength(2);
  await expect.poll(async () => (await shown(b)).every((t) => t.key.startsWith("todo:"))).toBe(true);

  await context.setOffline(true);
  await add(a, "a1");
  await add(a, "a2");
  await add(b, "b1");
  await expect(item(b, "a1")).toHaveCount(1); // the other tab's record, pending
  await toggle(b, "a1");                        // an edit of a record the server has not created yet
  await toggle(a, "keep");
  await rename(a, "a2", "a2 renamed");
  await rename(b, "keep", "kept");
  await remove(b, "old");
  await expect.poll(() => queueLength(a)).toBeGreaterThan(0);
  await context.setOffline(false);

  const expected = [
    { title: "a1", done: true },
    { title: "a2 renamed", done: false },
    { title: "b1", done: false },
    { title: "kept", done: true },
  ];
  await expect.poll(async () => (await serverTodos(a, user)).map(({ title, done }) => ({ title, done })), { timeout: 20_000 })
    .toEqual(expected);
  await expect.poll(() => queueLength(a)).toBe(0);
  const server = await serverTodos(a, user);
  // Both tabs show exactly the server's records, under the server's ids.
  await expect.poll(() => shown(a)).toEqual(server);
  await expect.poll(() => shown(b)).toEqual(server);

  // Every operation applied once: no operation id twice, each counted once.
  const applied = await effects(request, user);
  const ids = applied.map((e) => e.opId);
  expect(new Set(ids).size).toBe(ids.length);
  expect(applied.every((e) => e.count === 1)).toBe(true);
  // 2 creates online; offline: 3 creates, the toggle of a1 (an intent, sent after its create),
  // the toggle and rename of "keep" (one row: coalesced, or two), the rename of a2 folded into
  // its unsent create, the delete.
  const kinds = applied.map((e) => e.kind).sort();
  expect(kinds.filter((k) => k === "create")).toHaveLength(5);
  expect(kinds.filter((k) => k === "delete")).toHaveLength(1);
});

test("a 30 s network cut with edits in two tabs: the queue drains within 2 s of the network's return", async ({ context }) => {
  test.setTimeout(120_000);
  const user = `u${uid()}`;
  await serveExample(context);
  // Draws in [0.75, 1): the first retry delay of a row that failed for the network is at
  // least 0.75 × 120 s = 90 s, longer than the cut: without the network-return rule the
  // drain waits for it (or for the interval, 37 s or more).
  await context.addInitScript(() => {
    const draw = Math.random.bind(Math);
    Math.random = () => 0.75 + 0.25 * draw();
  });
  const a = await openTodo(context, user, 120_000);
  const b = await openTodo(context, user, 120_000);
  await add(a, "before");
  await expect.poll(() => serverTodos(a, user)).toHaveLength(1);

  // The network goes before the browser notices: these sends fail for the network, so
  // their rows are deferred with backoff.
  let failed = 0;
  await context.route("**/api/records/**", (route) => {
    failed += 1;
    return route.abort("internetdisconnected");
  });
  await add(a, "failed in a");
  await toggle(b, "before");
  await expect.poll(() => failed).toBeGreaterThanOrEqual(2);
  await expect.poll(() => a.evaluate(async () => {
    const { outbox, user } = (window as any).todoApp;
    return (await outbox.rows(user)).filter((r: any) => r.evidence?.lastErrorCode === "NETWORK").length;
  })).toBe(2);

  // Now the browser notices; edits in both tabs meanwhile.
  await context.setOffline(true);
  await add(a, "offline a");
  await add(b, "offline b");
  await rename(b, "failed in a", "failed, renamed");
  await a.waitForTimeout(30_000);

  await context.unroute("**/api/records/**");
  const back = Date.now();
  await context.setOffline(false);
  const expected = [
    { title: "before", done: true },
    { title: "failed, renamed", done: false },
    { title: "offline a", done: false },
    { title: "offline b", done: false },
  ];
  await expect.poll(async () => {
    const [qa, qb, server] = await Promise.all([queueLength(a), queueLength(b), serverTodos(a, user)]);
    return qa === 0 && qb === 0 && JSON.stringify(server.map(({ title, done }) => ({ title, done }))) === JSON.stringify(expected);
  }, { timeout: 60_000, intervals: [50] }).toBe(true);
  const drainMs = Date.now() - back;
  console.log(`todo example: queue drained ${drainMs} ms after the network's return`);
  expect(drainMs).toBeLessThan(2_000);
});

test("a todo created and deleted offline sends no request", async ({ context }) => {
  const user = `u${uid()}`;
  await serveExample(context);
  const sent: string[] = [];
  context.on("request", (req) => {
    if (new URL(req.url()).pathname.startsWith("/api/records")) sent.push(`${req.method()} ${req.postData() ?? ""}`);
  });
  const a = await openTodo(context, user);
  const b = await openTodo(context, user);
  await context.setOffline(true);
  await add(a, "ephemeral");
  await add(b, "kept");
  await remove(b, "ephemeral"); // the other tab deletes it, still unsent
  await expect.poll(() => queueLength(a)).toBe(1);
  await context.setOffline(false);
  await expect.poll(() => serverTodos(a, user)).toEqual([{ key: expect.stringMatching(/^todo:/), title: "kept", done: false }]);
  await expect.poll(() => queueLength(a)).toBe(0);
  // Only the kept todo's create went out: nothing for the created-and-deleted one.
  expect(sent).toEqual([`POST ${JSON.stringify({ title: "kept", done: false })}`]);
});
