// The renderer's CPU profile around one measurement (the trace tools, not the benchmark).
import type { BrowserContext, Page } from "@playwright/test";

/** Starts sampling the page's renderer every 100 µs; `stop()` gives the profile. */
export async function startProfile(context: BrowserContext, page: Page): Promise<{ stop: () => Promise<any> }> {
  const cdp = await context.newCDPSession(page);
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
  await cdp.send("Profiler.start");
  return { stop: async () => (await cdp.send("Profiler.stop")).profile };
}

/** The `top` functions by self time (ms), one line each: name, file and line. */
export function selfTimes(cpu: any, top: number): string {
  const self = new Map<string, number>();
  const byId = new Map<number, any>(cpu.nodes.map((x: any) => [x.id, x]));
  cpu.samples.forEach((id: number, i: number) => {
    const cf = byId.get(id).callFrame;
    const key = `${cf.functionName || "(anon)"} ${cf.url.split("/").pop()}:${cf.lineNumber}`;
    self.set(key, (self.get(key) ?? 0) + (cpu.timeDeltas[i] ?? 0) / 1000);
  });
  return [...self].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, v]) => `  ${v.toFixed(1).padStart(8)} ${k}`).join("\n");
}
