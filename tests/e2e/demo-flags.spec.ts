// The demo as `scripts/demo.sh` runs it, without --test-endpoints (issue 32 item 10): its
// own buttons work — a record is created, "Expire session" holds the rows, "Log in again"
// sends them — while /api/effects, every actor's operation ids, is not served.
import { test, expect } from "@playwright/test";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { uid } from "./helpers";

async function freePort(): Promise<number> {
  return new Promise((ok) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

/** The gate with scripts/demo.sh's flags, on a file ledger of its own. */
async function demoGate(dbFile: string, port: number): Promise<ChildProcess> {
  const gate = spawn("target/release/outbox-gate", ["--addr", `127.0.0.1:${port}`, "--db", dbFile, "--www", "www", "--pkg", "pkg"], {
    stdio: "ignore",
  });
  for (let i = 0; i < 100; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/`);
      return gate;
    } catch {
      await new Promise((ok) => setTimeout(ok, 50));
    }
  }
  throw new Error("the demo's gate did not start");
}

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
