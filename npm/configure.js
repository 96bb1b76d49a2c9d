// Configure once (issue 34): `Outbox.open` takes who the owner is and the ports besides the
// glue's own options; `flush()` and `ack()` use them, under whatever a call gives itself.

import { invalidArgument, readArgument } from "./errors.js";

/** The ports a flush and an ack take, configured once at open. */
const PORT_NAMES = ["prepareSuccessor", "findCreateReceipt", "reconcile"];

/** Options of `Outbox.open` that the package keeps, never passed to the glue's open. */
const CONFIG_NAMES = ["owner", "send", "transport", "autoFlush", ...PORT_NAMES];

/** The glue's default `leaseMs` (SPEC §5): a send is told it, to time its request out. */
export const DEFAULT_LEASE_MS = 10_000;

/**
 * What one outbox was configured with at open: `owner()` (read at every flush), `send`
 * (told the lease: `send(op, {leaseMs})`), the ports, the clock, and, once the network came
 * back, `onlineSince` (an instant of the outbox's clock).
 */
export class Configuration {
  constructor(options) {
    const given = (name) => options[name] !== undefined && options[name] !== null;
    if (given("owner") && typeof options.owner !== "string" && typeof options.owner !== "function") {
      throw invalidArgument("`owner` must be a string or a function returning the current owner");
    }
    if (given("send") && given("transport")) {
      throw invalidArgument("give `send` or `transport`, not both");
    }
    if (given("send") && typeof options.send !== "function") throw invalidArgument("`send` must be a function");
    if (given("transport") && typeof options.transport?.send !== "function") {
      throw invalidArgument("`transport` must be an object with a `send` function (httpTransport(...) makes one)");
    }
    for (const name of PORT_NAMES) {
      if (given(name) && typeof options[name] !== "function") throw invalidArgument(`\`${name}\` must be a function`);
    }
    const owner = options.owner;
    /** @type {(() => unknown) | undefined} */
    this.owner = typeof owner === "function" ? owner : given("owner") ? () => owner : undefined;
    this.leaseMs = typeof options.leaseMs === "number" ? options.leaseMs : DEFAULT_LEASE_MS;
    const transport = options.transport ?? {};
    this.send = options.send ?? transport.send;
    /** The ports by name: the transport's `findCreateReceipt` unless given one of its own. */
    this.ports = {};
    for (const name of PORT_NAMES) {
      const port = options[name] ?? transport[name];
      if (typeof port === "function") this.ports[name] = port;
    }
    this.autoFlush = options.autoFlush ?? false;
    const now = options.now;
    /** The outbox's clock, as the module reads it (a bad reading is `Date.now()`). */
    this.clock = () => {
      const t = typeof now === "function" ? safely(now) : undefined;
      return typeof t === "number" && Number.isFinite(t) ? t : Date.now();
    };
    this.random = typeof options.random === "function" ? options.random : Math.random;
    /** @type {number | undefined} when the network last came back (the outbox's clock) */
    this.onlineSince = undefined;
  }
}

function safely(fn) {
  try {
    return fn();
  } catch {
    return undefined;
  }
}

/**
 * `Outbox.open`'s options split in two: what the glue's open takes, and the configuration
 * the package keeps for the instance.
 */
export function splitOpenOptions(options) {
  if (typeof options !== "object" || options === null) return { openOptions: options, configuration: new Configuration({}) };
  return readArgument("Outbox.open options", () => {
    const openOptions = { ...options };
    for (const name of CONFIG_NAMES) delete openOptions[name];
    return { openOptions, configuration: new Configuration(options) };
  });
}

/** `true` when the browser says the network is down (`navigator.onLine === false`). */
export function browserOffline() {
  return globalThis.navigator?.onLine === false;
}

/**
 * The fields of `call` that are given (a field set to `undefined` overrides nothing), read
 * once into a plain object; `what` names `call` in errors ("flush options").
 */
function givenFields(call, what) {
  if (call === undefined || call === null) return {};
  if (typeof call !== "object") throw invalidArgument(`${what} must be an object`);
  return readArgument(what, () => Object.fromEntries(Object.entries(call).filter(([, v]) => v !== undefined)));
}

/** `send` as the glue calls it (`send(op)`), told the lease: `send(op, {leaseMs})`. */
function toldTheLease(send, leaseMs) {
  if (typeof send !== "function") return send; // the glue refuses it with INVALID_ARGUMENT
  return (op) => send(op, { leaseMs });
}

/**
 * The options of one flush: the configured owner, send and ports, the browser's network
 * state (`offline`, `onlineSince`), under the call's own fields. Resolves to `null` when
 * the configured `owner()` says there is nobody to flush for (null or undefined).
 */
export async function flushOptions(configuration, call) {
  const own = givenFields(call, "flush options");
  const options = { ...configuration.ports, send: configuration.send };
  if (globalThis.navigator !== undefined && typeof globalThis.navigator.onLine === "boolean") {
    options.offline = browserOffline();
  }
  if (configuration.onlineSince !== undefined) options.onlineSince = configuration.onlineSince;
  Object.assign(options, own);
  if (own.owner === undefined) {
    if (configuration.owner === undefined) {
      throw invalidArgument("flush needs an owner: pass flush({ owner }) or configure `owner` in Outbox.open");
    }
    const owner = await configuration.owner();
    if (owner === null || owner === undefined) return null;
    options.owner = owner;
  }
  options.send = toldTheLease(options.send, configuration.leaseMs);
  return options;
}

/** The ports of one `ack`: the configured ones under the call's own. */
export function ackPorts(configuration, ports) {
  return { ...configuration.ports, ...givenFields(ports, "ack ports") };
}

/** The report of a flush that had nobody to flush for: nothing claimed, nothing sent. */
export function emptyReport(offline) {
  return {
    claimed: 0, released: 0, succeeded: 0, deferred: 0, held: 0, blocked: 0,
    conflicts: 0, stale: 0, skipped: 0, converted: 0, applied: 0,
    receipts: [],
    counters: { attempts: { success: 0, transient: 0, auth: 0, permanent: 0, conflict: 0 }, replays: 0, conflicts: 0, permanentFailures: 0 },
    offline,
    nextDueAt: null,
  };
}
