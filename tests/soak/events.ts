// Chaos events between edits: every tab pauses between two edits, then one event (a close,
// a browser kill) runs alone, so an event never cuts an edit's bookkeeping in half.

export function events() {
  let active = 0;
  let eventRunning: Promise<void> | null = null;
  /** Runs one edit, waiting for a running event first. */
  async function edit<T>(fn: () => Promise<T>): Promise<T> {
    while (eventRunning) await eventRunning;
    active++;
    try {
      return await fn();
    } finally {
      active--;
    }
  }
  /** Runs one event once every edit in progress has finished; edits wait meanwhile. */
  async function event(fn: () => Promise<void>): Promise<void> {
    while (eventRunning) await eventRunning;
    let done!: () => void;
    eventRunning = new Promise((ok) => (done = ok));
    try {
      while (active > 0) await new Promise((ok) => setTimeout(ok, 5));
      await fn();
    } finally {
      eventRunning = null;
      done();
    }
  }
  return { edit, event };
}
