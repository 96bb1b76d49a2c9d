// The demo as `scripts/demo.sh` runs it, without --test-endpoints (issue 32 item 10): its
// own buttons work — a record is created, "Expire session" holds the rows, "Log in again"
// sends them — while /api/effects, every actor's operation ids, is not served.
import { test, expect } from "@playwright/test";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, startGate, uid } from "./helpers";

/** The gate with scripts/demo.sh's flags, on a file ledger of its own. */
const demoGate = (dbFile: string, port: number): Promise<ChildProcess> =>
  startGate(port, ["--db", dbFile, "--www", "www", "--pkg", "pkg"]);

test("the demo without --test-endpoints: its buttons work, /api/effects is not served", async ({ page }) => {
  const dir = mkdtempSync(join(tmpdir(), "gate-demo-"));
  const port = await freePort();
  const gate = await demoGate(join(dir, "ledger.sqlite"), port);
  try {
    const base = `http://127.0.0.1:${port}`;
    const effects = await fetch(`${base}/api/effects`);
    expect(effects.status).toBe(404);
    expect(await effects.json()).toMatchObject({ code: "NOT_FOUND" });

    const user = `u${uid()}`;
    await page.goto(`${base}/?db=db-${uid()}&users=${user}`); // real clock, flushing on its own
    await page.waitForFunction(() => window.outboxDemo?.ready === true);
    await page.selectOption("#create select", "workout");
    await page.fill("#create input", "70");
    await page.click("#create button");
    await expect(page.locator("#records tbody tr", { hasText: "workout:" })).toHaveCount(1, { timeout: 15_000 });

    // "Expire session": the server forgets this tab's session; the next edit is held (401).
    await page.click("#expire");
    await expect(page.locator("#log")).toContainText("session expired on the server");
    await page.selectOption("#create select", "plan");
    await page.fill("#create input", "Leg day");
    await page.click("#create button");
    await expect
      .poll(async () => (await page.evaluate((o) => window.outboxDemo.outbox.rows(o), user)).map((r: any) => r.state), { timeout: 15_000 })
      .toEqual(["held"]);

    // "Log in again": a new session, the held row resumed and sent.
    await page.click("#login");
    await expect(page.locator("#records tbody tr", { hasText: "plan:" })).toHaveCount(1, { timeout: 15_000 });
    const records = await (await fetch(`${base}/api/records`, { headers: { Authorization: `Bearer ${user}.check` } })).json();
    expect(records.map((r: any) => r.serverId.split(":")[0]).sort()).toEqual(["plan", "workout"]);
  } finally {
    gate.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});
