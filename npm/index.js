// The package's entry point: wasm-bindgen's glue (`outbox_idb.js`) wrapped, and the
// JavaScript layer of issue 34 on top of it. It exports only the package's own names.
//
// - `init()` in Node reads `outbox_idb_bg.wasm` from the file next to this one: the glue's
//   default is `fetch(new URL(…, import.meta.url))`, and Node's fetch refuses `file:` URLs.
// - `Outbox.open` initialises the module itself when the app has not (it is async anyway),
//   and keeps what the app configured once: the owner, `send` or a `transport`, the ports,
//   `autoFlush` (configure.js, schedule.js).
// - The synchronous functions cannot wait for a download: before `init()` they throw an
//   `OutboxError` with `code: "NOT_INITIALIZED"` instead of the glue's uncoded `TypeError`.
// - Every error of the module is an `OutboxError` (errors.js).
import glueInit, {
  initSync as glueInitSync,
  Outbox,
  classifyHttp as glueClassifyHttp,
  selectSendable as glueSelectSendable,
  isRowInFlight as glueIsRowInFlight,
} from "./outbox_idb.js";
import { OutboxError, outboxError, adoptError, adoptingErrors } from "./errors.js";
import { Configuration, splitOpenOptions, flushOptions, ackPorts, emptyReport, browserOffline } from "./configure.js";
import { AutoFlush, autoFlushSettings, answerSync, registerSync } from "./schedule.js";
import { subscribe, liveRecords } from "./live.js";
import { httpTransport } from "./transport.js";

export { Outbox, OutboxError, httpTransport, registerSync };

/** The first successful (or running) initialisation, shared by every caller. */
let ready = null;
let initialised = false;

/**
 * In Node, the wasm bytes read from the file next to this module; `undefined` elsewhere
 * (browsers, workers, bundled builds served over http). `process.getBuiltinModule` (Node
 * 20.16+) keeps `node:fs` out of sight of bundlers, which would otherwise try to bundle it
 * for the browser.
 */
function nodeWasmBytes() {
  const proc = globalThis.process;
  if (typeof proc !== "object" || proc === null || typeof proc.versions?.node !== "string") return undefined;
  const url = new URL("./outbox_idb_bg.wasm", import.meta.url);
  if (url.protocol !== "file:" || typeof proc.getBuiltinModule !== "function") return undefined;
  return proc.getBuiltinModule("node:fs").readFileSync(url);
}

/**
 * Loads and instantiates the WebAssembly module; resolves once it is ready. Calling it
 * again (or after `Outbox.open` did it) returns the same promise. `input` is what the
 * glue takes (`{ module_or_path }`: a URL, a `Response`, bytes or a `WebAssembly.Module`);
 * left out, the module next to this file is used — fetched in browsers, read from disk in
 * Node. A module that cannot be loaded rejects with code `NOT_INITIALIZED`, and the next
 * call tries again.
 */
export default function init(input) {
  if (ready !== null) return ready;
  if (input === undefined) {
    const bytes = nodeWasmBytes();
    if (bytes !== undefined) input = { module_or_path: bytes };
  }
  ready = glueInit(input).then(
    (exports) => {
      initialised = true;
      return exports;
    },
    (cause) => {
      ready = null;
      throw loadError(cause, "call init({ module_or_path }) with its URL, its bytes or a WebAssembly.Module");
    },
  );
  return ready;
}

function loadError(cause, what) {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return outboxError("NOT_INITIALIZED", `tab-outbox: the WebAssembly module could not be loaded (${detail}); ${what}`, cause);
}

/**
 * Instantiates the module synchronously from its bytes or a `WebAssembly.Module`; throws
 * `NOT_INITIALIZED` when they are not the module.
 */
export function initSync(module) {
  if (initialised) return glueInitSync(module); // the glue returns the loaded instance
  let exports;
  try {
    exports = glueInitSync(module);
  } catch (cause) {
    throw loadError(cause, "pass initSync({ module }) the package's .wasm bytes or a WebAssembly.Module");
  }
  initialised = true;
  ready = Promise.resolve(exports);
  return exports;
}

function requireInit(name) {
  if (!initialised) {
    throw outboxError(
      "NOT_INITIALIZED",
      `tab-outbox: ${name}() was called before the WebAssembly module was loaded; ` +
        "await init() (or Outbox.open(), which loads it) once first",
    );
  }
}

// ---- one outbox's configuration, network watch and scheduler -------------------------

/**
 * What the package keeps per open outbox: `configuration` (configure.js), `scheduler`
 * (an AutoFlush, or null), and `stop()`, which ends both watches. An outbox opened
 * through the glue directly has none: its calls take their own options only.
 */
const instances = new WeakMap();
const unconfigured = new Configuration({});

const configurationOf = (outbox) => instances.get(outbox)?.configuration ?? unconfigured;

/** Notes when the network comes back (`onlineSince`, for the planner) and asks for a flush. */
function watchNetwork(instance) {
  const target = globalThis;
  if (typeof target.addEventListener !== "function") return () => {};
  const online = () => {
    instance.configuration.onlineSince = instance.configuration.clock();
    instance.scheduler?.request();
  };
  target.addEventListener("online", online);
  return () => target.removeEventListener("online", online);
}

// ---- Outbox ------------------------------------------------------------------------------

const glue = {
  open: Outbox.open,
  flush: Outbox.prototype.flush,
  ack: Outbox.prototype.ack,
  enqueue: Outbox.prototype.enqueue,
  retryBlocked: Outbox.prototype.retryBlocked,
  resumeHeld: Outbox.prototype.resumeHeld,
  subscribe: Outbox.prototype.subscribe,
  close: Outbox.prototype.close,
  free: Outbox.prototype.free,
};

// `open` is async, so it can load the module itself. The class stays the glue's own, so
// `instanceof Outbox` and the methods are unchanged.
Outbox.open = function open(options) {
  let split, settings;
  try {
    split = splitOpenOptions(options);
    settings = autoFlushSettings(split.configuration.autoFlush);
  } catch (error) {
    return Promise.reject(error);
  }
  const { openOptions, configuration } = split;
  let resolveScheduler;
  const scheduler = new Promise((resolve) => (resolveScheduler = resolve));
  // In a service worker, `sync` may come before the open resolves (schedule.js).
  const unregisterSync = settings ? answerSync(settings.syncTag, scheduler) : () => {};
  return init()
    .then(() => glue.open.call(Outbox, openOptions))
    .then(
      (outbox) => {
        const instance = { configuration, scheduler: null, stop: null };
        if (settings) {
          instance.scheduler = new AutoFlush({
            flush: (extra) => outbox.flush(extra),
            clock: configuration.clock,
            random: configuration.random,
            settings,
          });
        }
        const unwatch = watchNetwork(instance);
        instance.stop = () => {
          instance.scheduler?.stop();
          unwatch();
          unregisterSync();
        };
        instances.set(outbox, instance);
        resolveScheduler(instance.scheduler);
        instance.scheduler?.start();
        return outbox;
      },
      (error) => {
        unregisterSync();
        resolveScheduler(null);
        throw adoptError(error);
      },
    );
};

/** flush(options?): the configured owner, send and ports, under the call's own fields. */
Outbox.prototype.flush = async function flush(options) {
  const merged = await flushOptions(configurationOf(this), options);
  if (merged === null) return emptyReport(browserOffline()); // nobody to flush for
  return glue.flush.call(this, merged);
};

/** ack(owner, rowId, ticket, outcome, ports?): the configured ports, under the call's own. */
Outbox.prototype.ack = function ack(owner, rowId, ticket, outcome, ports) {
  let merged;
  try {
    merged = ackPorts(configurationOf(this), ports);
  } catch (error) {
    return Promise.reject(error); // async: a bad `ports` rejects, as every argument of ack does
  }
  return glue.ack.call(this, owner, rowId, ticket, outcome, merged);
};

/** Calls that may make rows sendable: an auto flush follows them soon. */
for (const name of ["enqueue", "retryBlocked", "resumeHeld"]) {
  const method = glue[name];
  Outbox.prototype[name] = function (...args) {
    const result = method.apply(this, args);
    const scheduler = instances.get(this)?.scheduler;
    return scheduler ? result.then((value) => (scheduler.soon(), value)) : result;
  };
}

/** subscribe(callback) or subscribe({stores?, owner?, changes?}, callback) → unsubscribe. */
Outbox.prototype.subscribe = function (filterOrCallback, callback) {
  return subscribe((cb) => glue.subscribe.call(this, cb), filterOrCallback, callback);
};

/** liveRecords(store, query?, callback) → stop: the records now, then whenever they change. */
Outbox.prototype.liveRecords = function (store, query, callback) {
  return liveRecords(this, store, query, callback);
};

Outbox.prototype.close = function close() {
  instances.get(this)?.stop();
  glue.close.call(this);
};

// `free()` (which `using` calls through `Symbol.dispose`) lets go of this handle, as the
// glue's own does: calls still running finish (they hold the outbox), and the database and
// channel close when the last of them ends. Later calls on the handle fail with a coded
// `CLOSED` (rejected promises; `subscribe`, `liveRecords` and the getters throw; `close()`
// and `free()` do nothing) instead of the glue's uncoded "null pointer passed to rust".
// Every method's errors are adopted as `OutboxError`s.
const freed = () => outboxError("CLOSED", "tab-outbox: this Outbox was freed (free() or `using`); open a new one");
const THROWING = new Set(["subscribe", "liveRecords"]);
for (const name of Object.getOwnPropertyNames(Outbox.prototype)) {
  const d = Object.getOwnPropertyDescriptor(Outbox.prototype, name);
  if (name === "constructor" || name === "free") continue;
  if (d.get) {
    const get = adoptingErrors(d.get);
    Object.defineProperty(Outbox.prototype, name, {
      ...d,
      get() {
        if (this.__wbg_ptr === 0) throw freed();
        return get.call(this);
      },
    });
  } else if (typeof d.value === "function") {
    const method = adoptingErrors(d.value);
    Outbox.prototype[name] = function (...args) {
      if (this.__wbg_ptr !== 0) return method.apply(this, args);
      if (name === "close") return undefined;
      if (THROWING.has(name)) throw freed();
      return Promise.reject(freed());
    };
  }
}
Outbox.prototype.free = function free() {
  if (this.__wbg_ptr === 0) return;
  instances.get(this)?.stop();
  glue.free.call(this);
};
if (Symbol.dispose) Outbox.prototype[Symbol.dispose] = Outbox.prototype.free;

export function classifyHttp(status, headers, body, now) {
  requireInit("classifyHttp");
  return glueClassifyHttp(status, headers, body, now);
}

export function selectSendable(rows, tabId, now, leaseMs, onlineSince) {
  requireInit("selectSendable");
  try {
    return glueSelectSendable(rows, tabId, now, leaseMs, onlineSince);
  } catch (error) {
    throw adoptError(error);
  }
}

export function isRowInFlight(row, now, leaseMs) {
  requireInit("isRowInFlight");
  try {
    return glueIsRowInFlight(row, now, leaseMs);
  } catch (error) {
    throw adoptError(error);
  }
}
