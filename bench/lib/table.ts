// One table of figures: each with its ratio and issue 12's target beside it (printed, never
// asserted: this is measurement only), and the same as JSON.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { dirname } from "node:path";

export interface Figure {
  figure: string;
  /** What was measured, e.g. "1.234 ms/row" or "12.3 ms". */
  value: string;
  /** Its ratio as the target states it, e.g. "×1.52 (Floor B ÷ flush)". */
  ratio?: string;
  target?: string;
  /** Whether the ratio meets the target (a figure, not an assertion). */
  met?: boolean;
  /** The numbers behind it (ms of every run, counts). */
  data: Record<string, unknown>;
}

export const perRow = (ms: number, n: number) => `${(ms / n).toFixed(3)} ms/row`;
export const times = (x: number) => `×${x.toFixed(2)}`;

export function machine() {
  const chromium = execFileSync("/usr/bin/chromium", ["--version"], { encoding: "utf8" }).trim();
  let os = "unknown";
  try {
    os = `Debian ${readFileSync("/etc/debian_version", "utf8").trim()}`;
  } catch { /* not Debian */ }
  return { cores: cpus().length, cpu: cpus()[0]?.model ?? "", memGiB: Math.round(totalmem() / 2 ** 30), os, chromium };
}

export function render(figures: Figure[]): string {
  const head = ["figure", "measured", "ratio", "target", "met"];
  const rows = figures.map((f) => [f.figure, f.value, f.ratio ?? "", f.target ?? "", f.met === undefined ? "" : f.met ? "yes" : "no"]);
  const lines = [head, head.map(() => "---"), ...rows].map((r) => `| ${r.join(" | ")} |`);
  return lines.join("\n");
}

export function writeJson(path: string, report: Record<string, unknown>) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify({ ...report, loadavgAtEnd: loadavg() }, null, 2) + "\n");
}
