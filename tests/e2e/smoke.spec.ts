import { test, expect } from "@playwright/test";
import { openTab, uid, enqueue, flush, rows, effects } from "./helpers";

test("the demo app loads the package and sends one create exactly once", async ({ context, request }) => {
  const user = `u${uid()}`;
  const page = await openTab(context, { db: `db-${uid()}`, tab: "tab-a", users: [user] });
  const row = await enqueue(page, { kind: "create", body: { entity: "workout", weight: 80 } });
  expect(row.target).toBe(`pending:${row.id}`);
  const report = await flush(page);
  expect(report.succeeded).toBe(1);
  expect(await rows(page)).toEqual([]);
  expect(await effects(request, user)).toEqual([{ opId: row.id, actor: user, kind: "create", target: "workout:" + report.receipts[0].receipt.serverId.split(":")[1], count: 1 }]);
});
