// Auto flush (issue 34): an outbox opened with `autoFlush` flushes on its own — after this
// tab's enqueues (debounced), when the network comes back, when the page becomes visible,
// on an interval with jitter, when the last report's `nextDueAt` comes, and in a service
// worker on Background Sync's `sync` event. One flush at a time: a request made while one
// runs makes one more run after it. What is due is the planner's decision (it is told
// `offline` and `onlineSince`); only the timing is decided here.

import { browserOffline } from "./configure.js";
import { readArgument } from "./errors.js";

/** The Background Sync tag `registerSync()` registers and the service worker answers. */
export const DEFAULT_SYNC_TAG = "tab-outbox";

const DEFAULTS = { debounceMs: 100, intervalMs: 30_000, syncBudgetMs: 20_000, syncTag: DEFAULT_SYNC_TAG };

/** setTimeout's longest delay; a later `nextDueAt` is looked at again then. */
const MAX_DELAY_MS = 2_147_483_647;

/** `autoFlush: true | {…}` → its settings; `null` when off. */
export function autoFlushSettings(autoFlush) {
  if (autoFlush === false || autoFlush === undefined || autoFlush === null) return null;
  const given = autoFlush === true ? {} : autoFlush;
  const settings = { ...DEFAULTS, onError: (e) => console.warn("tab-outbox: auto flush failed", e) };
  const entries = readArgument("autoFlush options", () => Object.entries(given));
  for (const [name, value] of entries) if (value !== undefined) settings[name] = value;
  return settings;
}

/** True in a service worker's global scope. */
function inServiceWorker() {
  return typeof globalThis.ServiceWorkerGlobalScope === "function" && globalThis instanceof globalThis.ServiceWorkerGlobalScope;
}

export class AutoFlush {
  /**
   * @param {object} o
   * @param {(extra?: object) => Promise<object>} o.flush the outbox's configured flush
   * @param {() => number} o.clock the outbox's clock
   * @param {() => number} o.random draws in [0, 1]
   * @param {ReturnType<typeof autoFlushSettings>} o.settings
   */
  constructor({ flush, clock, random, settings }) {
    this.flush = flush;
    this.clock = clock;
    this.random = random;
    this.settings = settings;
    this.stopped = false;
    /** The flush running now, and the one asked for meanwhile (with its extra options). */
    this.current = null;
    this.queued = null;
    this.queuedExtra = {};
    this.timers = { debounce: null, interval: null, due: null };
    this.listeners = [];
  }

  /** Listens to the browser's events and starts the interval. */
  start() {
    const visible = () => {
      if (globalThis.document?.visibilityState === "visible") this.request();
    };
    if (typeof globalThis.document?.addEventListener === "function") this.listen(globalThis.document, "visibilitychange", visible);
    this.armInterval();
    this.request(); // what was left queued before this page opened
  }

  /** Stops every timer and listener; later requests do nothing. */
  stop() {
    this.stopped = true;
    for (const name of Object.keys(this.timers)) this.clear(name);
    for (const [target, type, fn] of this.listeners) target.removeEventListener(type, fn);
    this.listeners = [];
  }

  /** After an enqueue: a flush soon, once the burst of edits is over. */
  soon() {
    if (this.stopped) return;
    this.clear("debounce");
    this.timers.debounce = setTimeout(() => this.request(), this.settings.debounceMs);
  }

  /**
   * A flush now, or, while one runs, one more right after it (requests made meanwhile share
   * that one). Resolves with its report (`undefined` when it failed: `onError` was told).
   */
  request(extra = {}) {
    if (this.stopped) return Promise.resolve(undefined);
    if (this.current === null) return this.run(extra);
    Object.assign(this.queuedExtra, extra);
    this.queued ??= this.current.then(() => {
      const queuedExtra = this.queuedExtra;
      this.queued = null;
      this.queuedExtra = {};
      return this.stopped ? undefined : this.run(queuedExtra);
    });
    return this.queued;
  }

  /** A service worker's `sync` event: a flush that claims nothing after its budget. */
  async onSync(event) {
    // The browser fires `sync` once the network is back: this flush is online, whatever the
    // worker's navigator.onLine still reads.
    const report = await this.request({ deadline: this.clock() + this.settings.syncBudgetMs, offline: false });
    // Rows left to retry: a rejected `sync` is fired again later, unless this was its last try.
    // Also rows this flush did not attempt because they wait out a backoff (a page's failed
    // send deferred them, and online the browser fires the page's sync at once) or another
    // tab's lease: `nextDueAt` says when. Resolving would end the sync with them still queued.
    const waiting = typeof report?.nextDueAt === "number";
    if (report && (report.deferred > 0 || report.offline || waiting) && !event.lastChance) {
      throw new Error("tab-outbox: rows left for a later sync");
    }
  }

  run(extra) {
    const run = this.flushOnce(extra);
    this.current = run;
    run.then(() => {
      if (this.current === run) this.current = null;
    });
    return run;
  }

  async flushOnce(extra) {
    try {
      const report = await this.flush(extra);
      this.afterReport(report);
      return report;
    } catch (error) {
      if (!this.stopped) this.settings.onError(error);
      return undefined;
    }
  }

  afterReport(report) {
    if (this.stopped || !report) return;
    this.armDue(report.nextDueAt);
    // Rows wait for the network or a retry: the service worker (if the app has one) is
    // asked to send them once online, also with every tab closed.
    if ((report.offline || report.deferred > 0 || browserOffline()) && this.settings.syncTag && !inServiceWorker()) {
      registerSync(this.settings.syncTag).catch(() => {});
    }
  }

  /** A flush when the earliest row not sendable now may become sendable. */
  armDue(nextDueAt) {
    this.clear("due");
    if (typeof nextDueAt !== "number" || !Number.isFinite(nextDueAt)) return;
    const delay = Math.min(Math.max(0, nextDueAt - this.clock()), MAX_DELAY_MS);
    this.timers.due = setTimeout(() => this.request(), delay);
  }

  /** The interval, each wait drawn between ½ and 1½ of `intervalMs` (tabs do not align). */
  armInterval() {
    const { intervalMs } = this.settings;
    if (!(intervalMs > 0)) return;
    const draw = Math.min(Math.max(Number(this.random()) || 0, 0), 1);
    this.timers.interval = setTimeout(() => {
      this.request();
      if (!this.stopped) this.armInterval();
    }, Math.min(intervalMs * (0.5 + draw), MAX_DELAY_MS));
  }

  listen(target, type, fn) {
    target.addEventListener(type, fn);
    this.listeners.push([target, type, fn]);
  }

  clear(name) {
    if (this.timers[name] !== null) clearTimeout(this.timers[name]);
    this.timers[name] = null;
  }
}

/**
 * Asks the browser to fire `sync` (Background Sync) in the app's service worker once it is
 * online. Resolves `true` when registered; `false` without a service worker or without
 * Background Sync (Firefox, Safari).
 */
export async function registerSync(tag = DEFAULT_SYNC_TAG) {
  const container = globalThis.navigator?.serviceWorker;
  if (!container) return false;
  const registration = await container.getRegistration();
  if (!registration?.sync) return false;
  const ready = registration.active ? registration : await container.ready;
  try {
    await ready.sync.register(tag);
    return true;
  } catch {
    return false;
  }
}

// ---- service workers: `sync` ---------------------------------------------------------
//
// A service worker woken for `sync` runs its script, then is sent the event at once: the
// listener must exist by the end of the script's first run, before `Outbox.open` (async)
// has resolved. So the package listens as soon as it is imported, and every outbox opened
// with `autoFlush` is registered, while still opening, under its sync tag.

/** Outboxes with auto flush in this service worker: `{tag, scheduler: Promise<AutoFlush | null>}`. */
const syncTargets = new Set();

/** Registers an opening outbox's scheduler (a promise of it) for `sync` events of `tag`. */
export function answerSync(tag, scheduler) {
  if (!inServiceWorker()) return () => {};
  const entry = { tag, scheduler };
  syncTargets.add(entry);
  return () => syncTargets.delete(entry);
}

if (inServiceWorker()) {
  globalThis.addEventListener("sync", (event) => {
    const targets = [...syncTargets].filter((t) => t.tag === event.tag);
    if (targets.length === 0) return;
    event.waitUntil(Promise.all(targets.map((t) => t.scheduler.then((s) => s?.onSync(event)))));
  });
}
