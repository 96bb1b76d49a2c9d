// The demo app with two tabs: the inspector of each shows both tabs' rows, live.
import { test, expect } from "@playwright/test";
import { uid, openTab, enqueue, holdRecords, startFlush, waitHeld } from "./helpers";

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
