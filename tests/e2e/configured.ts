// Helpers of the issue-34 specs: a blank page of the gate's origin that imports the package
// entry (/pkg/index.js) and opens outboxes with the configured API. Functions cannot cross
// page.evaluate, so each spec's configuration is written inside the page.
import type { BrowserContext, Page } from "@playwright/test";

declare global {
  interface Window {
    pkg: any;
    t: any;
  }
}

/** A page of the gate's origin with the package entry loaded as `window.pkg`. */
export async function packagePage(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  await page.goto("/style.css"); // any page of the origin: IndexedDB, fetch to /api
  await page.evaluate(async () => {
    window.pkg = await import("/pkg/index.js" as string);
    window.t = {};
  });
  return page;
}

/** The gate's routes for the demo's records: the URL of an operation. */
export const RECORD_URL = `(op) => op.kind === "create" ? "/api/records/" + op.body.entity : "/api/records/" + op.target.replace(":", "/")`;
