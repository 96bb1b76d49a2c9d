// The package's entry point: wasm-bindgen's glue (`outbox_idb.js`) re-exported, with the
// module's initialisation taken care of where it can be and a coded error where it cannot.
//
// - `init()` in Node reads `outbox_idb_bg.wasm` from the file next to this one: the glue's
//   default is `fetch(new URL(…, import.meta.url))`, and Node's fetch refuses `file:` URLs.
// - `Outbox.open` initialises the module itself when the app has not (it is async anyway).
// - The synchronous functions cannot wait for a download: before `init()` they throw an
//   `Error` with `code: "NOT_INITIALIZED"` instead of the glue's uncoded `TypeError`.
import glueInit, {
  initSync as glueInitSync,
  Outbox,
  classifyHttp as glueClassifyHttp,
  selectSendable as glueSelectSendable,
  isRowInFlight as glueIsRowInFlight,
} from "./outbox_idb.js";

export * from "./outbox_idb.js";

/** The first successful (or running) initialisation, shared by every caller. */
let ready = null;
let initialised = false;

function outboxError(code, message, cause) {
  const error = new Error(message, cause === undefined ? undefined : { cause });
  error.name = "OutboxError";
  error.code = code;
  return error;
}

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

// `open` is async, so it can load the module itself. The class stays the glue's own, so
// `instanceof Outbox` and the methods are unchanged.
const openOutbox = Outbox.open;
Outbox.open = function open(options) {
  return init().then(() => openOutbox.call(Outbox, options));
};

// `free()` (which `using` calls through `Symbol.dispose`) lets go of this handle, as the
// glue's own does: calls still running finish (they hold the outbox), and the database and
// channel close when the last of them ends. Later calls on the handle fail with a coded
// `CLOSED` (rejected promises; `subscribe` and the getters throw; `close()` and `free()`
// do nothing) instead of the glue's uncoded "null pointer passed to rust".
const glueFree = Outbox.prototype.free;
const freed = () => outboxError("CLOSED", "tab-outbox: this Outbox was freed (free() or `using`); open a new one");
for (const name of Object.getOwnPropertyNames(Outbox.prototype)) {
  const d = Object.getOwnPropertyDescriptor(Outbox.prototype, name);
  if (name === "constructor" || name === "free") continue;
  if (d.get) {
    const get = d.get;
    Object.defineProperty(Outbox.prototype, name, {
      ...d,
      get() {
        if (this.__wbg_ptr === 0) throw freed();
        return get.call(this);
      },
    });
  } else if (typeof d.value === "function") {
    const method = d.value;
    Outbox.prototype[name] = function (...args) {
      if (this.__wbg_ptr !== 0) return method.apply(this, args);
      if (name === "close" || typeof name === "symbol") return undefined;
      if (name === "subscribe") throw freed();
      return Promise.reject(freed());
    };
  }
}
Outbox.prototype.free = function free() {
  if (this.__wbg_ptr !== 0) glueFree.call(this);
};
if (Symbol.dispose) Outbox.prototype[Symbol.dispose] = Outbox.prototype.free;

export function classifyHttp(status, headers, body, now) {
  requireInit("classifyHttp");
  return glueClassifyHttp(status, headers, body, now);
}

export function selectSendable(rows, tabId, now, leaseMs) {
  requireInit("selectSendable");
  return glueSelectSendable(rows, tabId, now, leaseMs);
}

export function isRowInFlight(row, now, leaseMs) {
  requireInit("isRowInFlight");
  return glueIsRowInFlight(row, now, leaseMs);
}
