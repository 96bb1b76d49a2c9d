// The demo app with two tabs: the inspector of each shows both tabs' rows, live.
import { test, expect } from "@playwright/test";
import { uid, openTab, enqueue, holdRecords, startFlush, waitHeld, effects } from "./helpers";

test("two tabs' rows in the inspector, updated live across tabs (screenshot)", async ({ context }) => {
  const user = `u${uid()}`;
  const db = `db-${uid()}`;
  const a = await openTab(context, { db, tab: "tab-a", users: [user, `b${uid()}`] });
  const b = await openTab(context, { db, tab: "tab-b", users: [user] });
  await a.setViewportSize({ width: 1400, height: 800 });
  const held = await holdRecords(a);
  const c = await enqueue(a, { kind: "create", body: { entity: "workout", weight: 82 } });
  await startFlush(a);
  await waitHeld(held);
  await enqueue(b, { kind: "update", target: c.target, body: { weight: 85 } });
  await enqueue(b, { kind: "create", body: { entity: "plan", title: "Leg day" } });
  // Tab A's inspector shows its own claim and tab B's rows (announced over BroadcastChannel).
  const inspector = a.locator("#inspector tbody tr");
  await expect(inspector).toHaveCount(3);
  await expect(a.locator("#inspector tbody tr.mine")).toHaveCount(1);
  await expect(a.locator('#inspector tbody tr[data-state="sending"]')).toHaveCount(1);
  await expect(a.locator("#records tbody")).toContainText("pending:");
  await a.screenshot({ path: "test-results/demo-two-tabs.png", fullPage: true });
});

test("a change committed in one tab reaches subscribe callbacks in the other (BroadcastChannel)", async ({ context }) => {
  const user = `u${uid()}`;
  const db = `db-${uid()}`;
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const b = await openTab(context, { db, tab: "tab-b", users: [user] });
  await b.evaluate(() => {
    (window as any).__notices = [];
    window.outboxDemo.outbox.subscribe((n: unknown) => (window as any).__notices.push(n));
  });
  await enqueue(a, { kind: "create", body: { entity: "plan", title: "x" } });
  await expect.poll(() => b.evaluate(() => (window as any).__notices)).toEqual([
    { tabId: "tab-a", change: "enqueue", owner: user },
  ]);
  const code = await b.evaluate(() => {
    try {
      window.outboxDemo.outbox.subscribe("not a function");
      return "no error";
    } catch (e: any) {
      return e.code;
    }
  });
  expect(code).toBe("INVALID_ARGUMENT");
});

test("a person using the demo: create, edit and delete reach the server through the outbox", async ({ page, request }) => {
  const user = `u${uid()}`;
  await page.goto(`/?db=db-${uid()}&users=${user}`); // real clock, flushing on its own
  await page.waitForFunction(() => window.outboxDemo?.ready === true);
  await page.selectOption("#create select", "workout");
  await page.fill("#create input", "75");
  await page.click("#create button");
  const row = page.locator("#records tbody tr", { hasText: "workout:" });
  await expect(row).toHaveCount(1, { timeout: 15_000 });
  await expect(row.locator("td").nth(2)).toHaveText("1");
  await row.locator("input").fill("77");
  await row.getByRole("button", { name: "Save" }).click();
  await expect(row.locator("td").nth(2)).toHaveText("2", { timeout: 15_000 });
  await row.getByRole("button", { name: "Delete" }).click();
  await expect(page.locator("#records tbody tr", { hasText: "workout:" })).toHaveCount(0, { timeout: 15_000 });
  await expect(page.locator("#inspector tbody tr")).toHaveCount(0);
  const kinds = (await effects(request, user)).map((e) => `${e.kind}:${e.count}`);
  expect(kinds).toEqual(["create:1", "update:1", "delete:1"]);
});
