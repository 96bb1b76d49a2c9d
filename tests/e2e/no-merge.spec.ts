// §7/§8 commands (`merge: false`) through the demo's "Log a set", two tabs, the gate counting
// effects: every command enqueued offline is applied exactly once, in the order enqueued,
// and a refused command holds the rest of its record's chain only.
import { test, expect, type APIRequestContext, type Page } from "@playwright/test";
import { uid, openTab, enqueue, flush, rows, effects, serverRecord } from "./helpers";

const logSet = (page: Page, target: string, weight: number): Promise<any> =>
  page.evaluate(([t, w]) => window.outboxDemo.logSet(t, w), [target, weight] as const);

const setOffline = (page: Page, value: boolean) => page.evaluate((v) => window.outboxDemo.setOffline(v), value);

/** Flushes both pages together until neither has rows left (or `rounds` runs out). */
async function drainBoth(a: Page, b: Page, rounds = 10) {
  for (let i = 0; i < rounds && (await rows(a)).length > 0; i++) await Promise.all([flush(a), flush(b)]);
}

async function setsOn(request: APIRequestContext, user: string, target: string): Promise<unknown[]> {
  const records = await (await request.get("/api/records", { headers: { Authorization: `Bearer ${user}.t` } })).json();
  return records.find((r: any) => r.serverId === target)?.body.sets ?? [];
}

test("commands enqueued offline in two tabs are applied once each, in order; an edit between them is not merged", async ({ context, request }) => {
  const user = `u${uid()}`;
  const db = `db-${uid()}`;
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const b = await openTab(context, { db, tab: "tab-b", users: [user] });
  const { serverId } = await serverRecord(a, { entity: "workout", weight: 60 });
  await setOffline(a, true);
  await setOffline(b, true);
  const ids: string[] = [];
  for (const [page, weight] of [[a, 10], [b, 20], [a, 20], [b, 40]] as const) {
    ids.push((await logSet(page, serverId, weight)).id);
  }
  // An ordinary edit after the commands waits behind them; it does not absorb one.
  const edit = await enqueue(b, { kind: "update", target: serverId, body: { weight: 65 } });
  // Both clocks read the same time, so the order is the chain's, not `savedAt`'s.
  const byId = new Map((await rows(a)).map((r) => [r.id, r]));
  const chain = [...ids, edit.id].map((id) => byId.get(id));
  expect(byId.size).toBe(5);
  expect(chain.map((r) => r.noMerge ?? false)).toEqual([true, true, true, true, false]);
  expect(chain.map((r) => r.successorOf ?? null)).toEqual([null, ...ids]);
  expect(edit.body).toEqual({ weight: 65 });

  await setOffline(a, false);
  await setOffline(b, false);
  await drainBoth(a, b);
  expect(await rows(a)).toEqual([]);
  const applied = (await effects(request, user)).filter((e) => e.target === serverId && e.kind !== "create");
  expect(applied.map((e) => [e.opId, e.kind, e.count])).toEqual([
    ...ids.map((id) => [id, "append", 1]),
    [edit.id, "update", 1],
  ]);
  expect(await setsOn(request, user, serverId)).toEqual([{ weight: 10 }, { weight: 20 }, { weight: 20 }, { weight: 40 }]);
});

test("a refused command holds the rest of its record's chain until it is discarded; other records keep flowing", async ({ context, request }) => {
  const user = `u${uid()}`;
  const db = `db-${uid()}`;
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const b = await openTab(context, { db, tab: "tab-b", users: [user] });
  const one = await serverRecord(a, { entity: "workout", weight: 60 });
  const two = await serverRecord(a, { entity: "workout", weight: 70 });
  const bad = await logSet(a, one.serverId, 5000); // the gate refuses a weight over 1000: 422
  const next = await logSet(b, one.serverId, 50);
  const other = await logSet(b, two.serverId, 80);
  await drainBoth(a, b, 3);
  // Both pages' clocks read the same time: rows come back in id order, so compare as a map.
  const left = new Map((await rows(a)).map((r) => [r.id, r.state]));
  expect(left).toEqual(new Map([[bad.id, "blocked"], [next.id, "queued"]]));
  let applied = (await effects(request, user)).filter((e) => e.kind === "append");
  expect(applied.map((e) => e.opId)).toEqual([other.id]);

  await a.evaluate((id) => window.outboxDemo.outbox.discard(window.outboxDemo.owner(), id), bad.id);
  await drainBoth(a, b);
  applied = (await effects(request, user)).filter((e) => e.kind === "append");
  expect(applied.map((e) => [e.opId, e.count])).toEqual([[other.id, 1], [next.id, 1]]);
  expect(await setsOn(request, user, one.serverId)).toEqual([{ weight: 50 }]);
});

test("a person clicks 'Log a set' twice offline and sees two sets once online", async ({ page }) => {
  const user = `u${uid()}`;
  await page.goto(`/?db=db-${uid()}&users=${user}`); // real clock, flushing on its own
  await page.waitForFunction(() => window.outboxDemo?.ready === true);
  await page.fill("#create input", "80");
  await page.click("#create button");
  const row = page.locator("#records tbody tr", { hasText: "workout:" });
  await expect(row).toContainText("0 sets", { timeout: 15_000 });
  await page.check("#offline");
  // A quick double click: both clicks land before the first one's edit is written (each
  // reads the count, then enqueues), so the page must let them take turns.
  await row.getByRole("button", { name: "Log a set" }).evaluate((button) => {
    (button as HTMLButtonElement).click();
    (button as HTMLButtonElement).click();
  });
  await expect(page.locator("#inspector tbody tr")).toHaveCount(2);
  await expect(row.locator("td.overlay")).toContainText("update +1 set @ 80 (queued), update +1 set @ 80 (queued)");
  await expect(row).toContainText("2 sets"); // offline already: the local record counts both
  await page.uncheck("#offline");
  await expect(row).toContainText("2 sets", { timeout: 15_000 });
  await expect(page.locator("#inspector tbody tr")).toHaveCount(0);
});
