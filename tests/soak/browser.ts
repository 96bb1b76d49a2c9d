// The soak's browser: a persistent Chromium profile that can be killed for real (SIGKILL
// of the browser process, not a polite close) and launched again on the same profile.
import { chromium, type BrowserContext } from "@playwright/test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export const CHROMIUM_ARGS = [
  "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
];

export async function launch(profile: string, baseURL: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: CHROMIUM_ARGS,
    baseURL,
  });
}

/** Processes whose command line names this profile: [pid, isBrowserProcess]. */
export function profileProcesses(profile: string): Array<[number, boolean]> {
  const out: Array<[number, boolean]> = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let cmd: string[];
    try {
      cmd = readFileSync(join("/proc", name, "cmdline"), "utf8").split("\0");
    } catch {
      continue;
    }
    if (!cmd.some((a) => a === `--user-data-dir=${profile}`)) continue;
    out.push([Number(name), !cmd.some((a) => a.startsWith("--type="))]);
  }
  return out;
}

/**
 * SIGKILLs the browser process of this profile (the process with the profile and no
 * `--type=`): the honest "tab death" of every tab at once. Children left behind once the
 * browser is gone are this run's own (they name its unique profile) and are killed by pid
 * too, so the relaunch finds the profile free.
 */
export async function killBrowser(context: BrowserContext, profile: string): Promise<number> {
  const main = profileProcesses(profile).filter(([, browser]) => browser).map(([pid]) => pid);
  if (main.length !== 1) throw new Error(`expected one browser process for ${profile}, found ${main.length}`);
  const closed = new Promise<void>((ok) => context.once("close", () => ok()));
  process.kill(main[0], "SIGKILL");
  await Promise.race([closed, new Promise((ok) => setTimeout(ok, 10_000))]);
  for (let i = 0; i < 50 && profileProcesses(profile).length > 0; i++) await new Promise((ok) => setTimeout(ok, 100));
  for (const [pid] of profileProcesses(profile)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
  return main[0];
}
