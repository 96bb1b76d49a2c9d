/// <reference lib="esnext.disposable" />
// Types of the package's entry point (index.js), written by hand: only the package's own
// names (wasm-bindgen's `InitOutput` and friends stay in outbox_idb.d.ts), an `Outbox<S>`
// typed by the app's stores, and an `OutboxError` class.

// ---- the app's stores --------------------------------------------------------------------

/**
 * The app's stores and the record type of each, e.g. `{ todos: Todo }`, given once to
 * `Outbox.open<Stores>(…)`: `record`, `records`, writes and `reconcile` are then typed by it.
 * Left out, every store holds `unknown` records.
 */
export type AnyStores = Record<string, unknown>;

/** A store name of `S`. */
export type StoreName<S> = keyof S & string;

/** A JSON key IndexedDB accepts: a string, a finite number, or an array of those. */
export type RecordKey = string | number | RecordKey[];

/** Fields merged into a record of type `T` by `patch` and `rekey`. */
export type RecordFields<T> = [T] extends [object] ? Partial<T> : Record<string, unknown>;

/**
 * One write to an app store, committed with the queue change it goes with. `put` stores a
 * JSON record (under `key`, or `atTarget`: under the operation's target — a create without
 * a target gets its `pending:` key); `patch` merges `set` into a record and `rekey` moves
 * one to `to` (with `set` merged in) — both only if the record exists, so an answer never
 * brings back a record the user deleted. Typed per store: `put` is the store's record type,
 * `set` a part of it.
 */
export type RecordWrite<S extends object = AnyStores> = {
  [K in StoreName<S>]:
    | { store: K; put: S[K]; key?: RecordKey; atTarget?: boolean }
    | { store: K; delete: RecordKey }
    | { store: K; patch: RecordKey; set: RecordFields<S[K]> }
    | { store: K; rekey: RecordKey; to: RecordKey; set?: RecordFields<S[K]> };
}[StoreName<S>];

export interface RecordsSchema {
  version: number;
  stores: Array<{
    name: string;
    keyPath?: string | string[];
    autoIncrement?: boolean;
    indexes?: Array<{ name: string; keyPath: string | string[]; unique?: boolean; multiEntry?: boolean }>;
  }>;
}

export interface RecordsQuery {
  /** Read through this index of the store. */
  index?: string;
  /** An `IDBKeyRange` or a key; absent: every record. */
  range?: IDBKeyRange | IDBValidKey;
}

export interface EnqueueOptions<S extends object = AnyStores> {
  /** Record writes committed in the enqueue's own transaction, whatever it planned. */
  writes?: RecordWrite<S>[];
}

// ---- codes -------------------------------------------------------------------------------

/**
 * The `code` of every error the package throws or rejects with. `NOT_INITIALIZED`: the
 * WebAssembly module is not loaded — `classifyHttp`, `selectSendable` or `isRowInFlight`
 * called before `await init()` (or `Outbox.open`, which loads it), or the module could not
 * be fetched or read. `SCHEMA_MISMATCH`: `records` declares a store whose `keyPath` or
 * `autoIncrement` differs from the database's, or, at the same `version`, stores or indexes
 * the database does not have as declared. `INTERNAL`: a bug in the module (a panic); the
 * transaction it was writing is aborted.
 */
export type OutboxErrorCode =
  | "INVALID_ARGUMENT"
  | "STORAGE"
  | "CLOSED"
  | "BLOCKED"
  | "QUOTA"
  | "NOT_INITIALIZED"
  | "SCHEMA_NEWER"
  | "SCHEMA_MISMATCH"
  | "INTERNAL";

/**
 * Why a row is `blocked` (`OutboxRow.blockedCode`): a permanent answer's code —
 * `classifyHttp` gives `INVALID` (400, 422), `FORBIDDEN` (403), `NOT_FOUND` (404), `GONE`
 * (410), `PAYLOAD_CONFLICT`, `HTTP_<status>` for another 4xx, or the server's own code —,
 * `REVISION_UNKNOWN` (a conflict without a usable revision, §9), `SUCCESSOR_UNPREPARED`
 * (`prepareSuccessor` missing or threw), `PREDECESSOR_RECEIPT_UNKNOWN` (the create's
 * receipt could not be found).
 */
export type BlockedCode =
  | "INVALID"
  | "FORBIDDEN"
  | "NOT_FOUND"
  | "GONE"
  | "PAYLOAD_CONFLICT"
  | "REVISION_UNKNOWN"
  | "SUCCESSOR_UNPREPARED"
  | "PREDECESSOR_RECEIPT_UNKNOWN"
  | `HTTP_${number}`
  | (string & {});

/**
 * Why the last attempt of a row failed (`evidence.lastErrorCode`): a transient answer's
 * code — `NETWORK` (no answer: `classifyHttp(0)`), `TIMEOUT` (408, or `httpTransport` gave
 * up before the lease ended), `RATE_LIMITED` (429), `IN_PROGRESS`, `HTTP_<status>` (5xx,
 * 3xx), or your `send`'s own —, `AUTH` (401), `SEND_FAILED` (`send` threw or rejected),
 * `BAD_OUTCOME` (`send` returned something that is not an Outcome), `NO_SEND`, or a
 * blocked row's code.
 */
export type LastErrorCode =
  | "NETWORK"
  | "TIMEOUT"
  | "RATE_LIMITED"
  | "IN_PROGRESS"
  | "AUTH"
  | "SEND_FAILED"
  | "BAD_OUTCOME"
  | "NO_SEND"
  | BlockedCode;

/**
 * What a notice reports a change of: `enqueue`, `claim` (a row claimed by `claim()`),
 * `flush` (each transaction of a flush: claims, answers, conversions — and `ack`),
 * `resumeHeld`, `retryBlocked`, `discard`, `purgeOwner`.
 */
export type ChangeKind = "enqueue" | "claim" | "flush" | "resumeHeld" | "retryBlocked" | "discard" | "purgeOwner";

// ---- rows ---------------------------------------------------------------------------------

/**
 * A stored row, format v1 (SPEC §3). Fields this version does not know are kept as stored
 * (read them with a cast); `undecodable` is never set: it tells these apart from
 * `UndecodableRow` in `rows()`.
 */
export interface OutboxRow {
  undecodable?: undefined;
  id: string;
  owner: string;
  target: string;
  kind: "create" | "update" | "delete";
  body: unknown;
  revision?: number | string | null;
  fingerprint: string;
  savedAt: number;
  state: "queued" | "sending" | "held" | "blocked";
  sentAt?: number;
  deferredAt?: number;
  heldAt?: number;
  blockedAt?: number;
  nextAttemptAt?: number;
  blockedCode?: BlockedCode;
  /** Set on a blocked row once a later edit of its record went out ahead of it (SPEC §5, §7):
   * its values are older than the server's, and a later edit never carries them. */
  overtakenAt?: number;
  claim?: { tabId: string; expiresAt: number; fence: number };
  evidence?: { attemptCount: number; lastAttemptAt?: number; lastErrorCode?: LastErrorCode };
  writer?: { bundle: string; at: number };
  successorOf?: string;
  conflict?: { previousId: string; actualRevision: unknown; at: number };
  /** `true`: enqueued with `merge: false`, never coalesced (SPEC §7); absent: may be merged. */
  noMerge?: boolean;
}

/**
 * A stored value this version cannot decode; never sent, claimed, merged or purged (SPEC §3).
 * `raw` is the value as stored.
 */
export interface UndecodableRow {
  id: string | null;
  owner: string | null;
  undecodable: true;
  error: string;
  raw: unknown;
}

export interface EnqueueInput {
  owner: string;
  target?: string;
  kind: "create" | "update" | "delete";
  /**
   * JSON only: plain objects, arrays, strings, finite numbers, booleans, null, at most 256
   * levels deep; anything else is refused with `INVALID_ARGUMENT` naming where it is.
   * Objects coalesce (fields merged, SPEC §7); a non-object body is never merged.
   */
  body?: unknown;
  /** Base revision: a number or an opaque string (an ETag); `null` or absent: none. */
  revision?: number | string | null;
  /** `false`: never coalesced (a payment, an increment, a message), sent in order (SPEC §7). */
  merge?: boolean | null;
}

// ---- sending ------------------------------------------------------------------------------

export type Outcome =
  | { type: "success"; receipt: unknown; replayed?: boolean }
  | { type: "transient"; code?: string; retryAfterMs?: number }
  | { type: "auth" }
  | { type: "permanent"; code: string }
  | { type: "conflict"; actualRevision: unknown };

/** What `send` receives. `id` is the Idempotency-Key. */
export interface SendOp {
  id: string;
  kind: "create" | "update" | "delete";
  target: string;
  body: unknown;
  revision: number | string | null;
  fingerprint: string;
  attempt: number;
  owner: string;
}

/** The second argument of `send`: the lease (a request should end well before it). */
export interface SendContext {
  leaseMs: number;
  /** Aborted when the request must stop. */
  signal?: AbortSignal;
}

export type Send = (op: SendOp, context: SendContext) => Outcome | Promise<Outcome>;

/** The real request of an intent; `body` must be JSON as at enqueue, or the intent is blocked. */
export interface Prepared { target: string; body: unknown; revision?: number | string | null }

/** How an attempt ended, as `reconcile` sees it. */
export type ReconcileAnswer =
  | { type: "success"; receipt: unknown; replayed: boolean }
  | { type: "blocked"; code: BlockedCode }
  | { type: "conflict"; actualRevision: unknown };

export interface AckPorts<S extends object = AnyStores> {
  /**
   * `receipt` is the create's success body exactly as `send` returned it (or as
   * `findCreateReceipt` found it): `unknown`, since it comes from your server; narrow it
   * with a type guard of your own.
   */
  prepareSuccessor?: (a: { intent: OutboxRow; predecessor: OutboxRow | null; receipt: unknown }) => Prepared | Promise<Prepared>;
  findCreateReceipt?: (a: { owner: string; operationId: string }) => unknown | null | Promise<unknown | null>;
  /**
   * Maps an answer that ends an attempt (success, blocked, conflict) to record writes,
   * committed in the ACK's own transaction — only while the claim is still this tab's.
   * Synchronous: it returns the writes (not a promise). If it throws, the answer is not
   * applied and the row is sent again after its lease.
   */
  reconcile?: (a: { row: OutboxRow; answer: ReconcileAnswer }) => RecordWrite<S>[];
}

/** What `httpTransport` (or an object of your own) gives `Outbox.open({transport})`. */
export interface Transport {
  send: Send;
  findCreateReceipt?: AckPorts["findCreateReceipt"];
}

export interface HttpTransportConfig {
  /** The URL of an operation's request. */
  url: (op: SendOp) => string | URL;
  /** The method: per kind (defaults POST, PUT, DELETE), or per operation. */
  method?: Partial<Record<SendOp["kind"], string>> | ((op: SendOp) => string);
  /** The JSON body (default: `op.body`; none for a delete); `undefined`: no body. */
  body?: (op: SendOp) => unknown;
  /**
   * Headers of each request, read when it is sent (a fresh token). `about.owner` is the
   * row's owner: return `null` when there is no session for that owner — the row is then
   * held (an `auth` answer), never sent with another account's credentials.
   */
  headers?: (about: { owner: string }) => Record<string, string> | null | Promise<Record<string, string> | null>;
  /** The URL of a create's stored receipt (`findCreateReceipt`); 404 means none. */
  receiptUrl?: (operationId: string, owner: string) => string | URL;
  /** Gives a request up after this long (default: half the lease) → transient `TIMEOUT`. */
  timeoutMs?: number;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

// ---- options --------------------------------------------------------------------------------

/** `autoFlush` settings; `true` takes every default. */
export interface AutoFlushOptions {
  /** Wait after this tab's last enqueue before flushing (default 100 ms). */
  debounceMs?: number;
  /** A flush every `intervalMs`, each wait drawn between ½ and 1½ of it (default 30000; 0: none). */
  intervalMs?: number;
  /** Failed auto flushes are told here (default: `console.warn`). */
  onError?: (error: unknown) => void;
  /** The Background Sync tag pages register and a service worker answers (default "tab-outbox"; false: none). */
  syncTag?: string | false;
  /** In a service worker's `sync` event: claim no row after this long (default 20000 ms). */
  syncBudgetMs?: number;
}

export interface OpenOptions<S extends object = AnyStores> extends AckPorts<S> {
  dbName: string;
  tabId?: string;
  /** How long a claim lasts, 1 to 3600000 ms (default 10000). */
  leaseMs?: number;
  /** The clock, epoch ms (default `Date.now`); a reading that is not a `Date`'s number is replaced by `Date.now()`. */
  now?: () => number;
  /** Draws in [0, 1] (default `Math.random`); one outside is clamped into it, `NaN` counts as 0. */
  random?: () => number;
  /** Retry delays, each 0 to 2147483647 ms (defaults 1000 and 300000). */
  backoff?: { baseMs?: number; capMs?: number };
  /** Rows of different targets sent at once (default 16). */
  concurrency?: number;
  /** Flushes of one owner take turns across tabs, waiting at most this long for another's progress (default 1000 ms; 0: never wait). */
  turnWaitMs?: number;
  /** How long opening waits for other tabs to let go of the database before `BLOCKED` (default 5000). */
  openTimeoutMs?: number;
  /**
   * The app's own object stores, in this same database, so that a record and its queue row
   * commit in one transaction. Raise `version` whenever `stores` changes.
   */
  records?: RecordsSchema;
  /**
   * Whose rows `flush()` sends: a string, or a function read at every flush (the signed-in
   * account; `null` or `undefined`: nobody is signed in, nothing is flushed). Never stored.
   */
  owner?: string | (() => string | null | undefined | Promise<string | null | undefined>);
  /** Sends one operation (or give `transport`). */
  send?: Send;
  /** `send` (and `findCreateReceipt`) ready made: `httpTransport({...})`. */
  transport?: Transport;
  /** Flush on its own (default off): see `AutoFlushOptions`. */
  autoFlush?: boolean | AutoFlushOptions;
}

export interface FlushOptions<S extends object = AnyStores> extends AckPorts<S> {
  /** Default: the configured `owner`. */
  owner?: string;
  /** Default: the configured `send` (or transport's). */
  send?: Send;
  maxRows?: number;
  /** Claim and send no row at or after this instant of the outbox's clock (`now()`), e.g.
   *  `Date.now() + 20_000` in a service worker's `sync` handler: the rest stays queued. */
  deadline?: number;
  concurrency?: number;
  /** `true`: the network is down; nothing is claimed (default: `!navigator.onLine`). */
  offline?: boolean;
  /** When the network came back (the outbox's clock): rows deferred by a network failure
   *  before it are due at once (default: the last `online` event this outbox saw). */
  onlineSince?: number;
}

// ---- reports --------------------------------------------------------------------------------

export interface Ticket { tabId: string; fence: number }

export interface ReceiptReport { id: string; target: string; receipt: unknown; replayed: boolean; applied: boolean }

export interface Counters {
  attempts: { success: number; transient: number; auth: number; permanent: number; conflict: number };
  replays: number;
  conflicts: number;
  permanentFailures: number;
}

export interface FlushReport {
  /** `claimed`: rows claimed and sent; `released`: claimed but handed back unsent because an
   *  auth answer ended the flush (SPEC §6), or claimed ahead of their send and not sent (the
   *  deadline, or less than half a lease left: SPEC §8). */
  claimed: number; released: number; succeeded: number; deferred: number; held: number; blocked: number;
  conflicts: number; stale: number; skipped: number; converted: number; applied: number;
  receipts: ReceiptReport[];
  counters: Counters;
  /** `true`: the flush was told the network is down and claimed nothing. */
  offline: boolean;
  /** The earliest instant after now at which a row of the owner may become sendable; at most
   *  the instant the flush stopped when its deadline stopped it before it found nothing more
   *  to send (rows may be left, sendable at once); `null`: none. */
  nextDueAt: number | null;
}

export interface Metrics extends Counters {
  total: number;
  byState: { queued: number; sending: number; held: number; blocked: number };
  oldestQueuedAgeMs: number | null;
  undecodable: number;
}

export interface ChangeNotice<S extends object = AnyStores> {
  tabId: string;
  change: ChangeKind;
  owner: string | null;
  /** The app records the change wrote, when it wrote some. */
  records?: Array<{ store: StoreName<S>; key: IDBValidKey }>;
}

/** Which notices a `subscribe` callback hears (each field given narrows them). */
export interface NoticeFilter<S extends object = AnyStores> {
  /** Changes that wrote records of these stores. */
  stores?: StoreName<S>[];
  /** Changes of this owner's rows. */
  owner?: string;
  changes?: ChangeKind[];
}

// ---- errors --------------------------------------------------------------------------------

/**
 * Every error the package throws or rejects with: `e instanceof OutboxError`, `code` stable.
 */
export declare class OutboxError extends Error {
  constructor(code: OutboxErrorCode, message: string, options?: ErrorOptions);
  name: "OutboxError";
  code: OutboxErrorCode;
  /**
   * On a `flush` that failed part way: what it did until then. Answers already applied
   * stay applied (their rows are gone), and their receipts are here.
   */
  report?: FlushReport;
}

// ---- the outbox ----------------------------------------------------------------------------

/** A crash-safe, multi-tab offline outbox over one IndexedDB database. */
export declare class Outbox<S extends object = AnyStores> {
  private constructor();
  /**
   * Opens (creating or upgrading) the outbox database, keeping the owner, `send` or
   * `transport`, the ports and `autoFlush` for this instance. Rejects with `BLOCKED` when
   * another tab holds an older version open for `openTimeoutMs`.
   */
  static open<S extends object = AnyStores>(options: OpenOptions<S>): Promise<Outbox<S>>;
  /** The IndexedDB database name. */
  readonly dbName: string;
  /** This tab's id. */
  readonly tabId: string;
  /** Stores an operation; resolves to the stored row, or `null` when it cancelled an unsent create. */
  enqueue(op: EnqueueInput, options?: EnqueueOptions<S>): Promise<OutboxRow | null>;
  /** A record of an app store, or `undefined`. */
  record<K extends StoreName<S>>(store: K, key: IDBValidKey): Promise<S[K] | undefined>;
  /** The records of an app store (through `query`). */
  records<K extends StoreName<S>>(store: K, query?: RecordsQuery): Promise<S[K][]>;
  /** Every row of the owner in (savedAt, id) order, undecodable ones with their error. */
  rows(owner: string): Promise<Array<OutboxRow | UndecodableRow>>;
  /**
   * Sends the owner's sendable rows (SPEC §8). Without arguments: the configured owner, send
   * and ports; a field given overrides the configured one. Resolves with nothing done when
   * the configured `owner()` returns `null`/`undefined`; rejects with `INVALID_ARGUMENT`
   * when no owner is given or configured.
   */
  flush(options?: FlushOptions<S>): Promise<FlushReport>;
  /** A ticket, or `null` if stale, not sendable or this tab's flush is sending it. */
  claim(owner: string, rowId: string): Promise<Ticket | null>;
  /** Applies an answer while the claim is this tab's (§6), with the configured ports under `ports`. */
  ack(owner: string, rowId: string, ticket: Ticket, outcome: Outcome, ports?: AckPorts<S>): Promise<"applied" | "not-mine">;
  /** How many held rows went back to queued (after a new login). */
  resumeHeld(owner: string): Promise<number>;
  /** A blocked row sent again under a new id (with a corrected body); `true` if re-issued. */
  retryBlocked(owner: string, rowId: string, body?: unknown, options?: EnqueueOptions<S>): Promise<boolean>;
  /** `true` if removed; `false` if in flight or absent. */
  discard(owner: string | null, rowId: string, options?: EnqueueOptions<S>): Promise<boolean>;
  /** Every owner's undecodable rows. */
  undecodable(): Promise<UndecodableRow[]>;
  /** How many rows of the owner were removed (at logout). */
  purgeOwner(owner: string): Promise<number>;
  metrics(owner?: string): Promise<Metrics>;
  /** Calls `callback` after any tab commits a change (those `filter` selects); returns the unsubscribe. */
  subscribe(callback: (notice: ChangeNotice<S>) => void): () => void;
  subscribe(filter: NoticeFilter<S>, callback: (notice: ChangeNotice<S>) => void): () => void;
  /**
   * Reads the store's records and calls back with them, then again whenever a change of any
   * tab wrote that store and the records differ. Returns the function that stops it.
   */
  liveRecords<K extends StoreName<S>>(store: K, callback: (records: S[K][]) => void): () => void;
  liveRecords<K extends StoreName<S>>(store: K, query: RecordsQuery | undefined, callback: (records: S[K][]) => void): () => void;
  /** Closes the database and the channel and stops auto flush; later calls fail with `CLOSED`. */
  close(): void;
  /** Lets go of this handle (`using` calls it). */
  free(): void;
  [Symbol.dispose](): void;
}

// ---- functions --------------------------------------------------------------------------------

/** Where the WebAssembly module comes from: a URL, a `Response`, its bytes or a compiled module. */
export type ModuleSource = RequestInfo | URL | Response | BufferSource | WebAssembly.Module;

/**
 * Loads and instantiates the WebAssembly module; resolves once it is ready. Calling it again
 * returns the same promise, and `Outbox.open` calls it when the app has not. Left out, the
 * `.wasm` file next to the package's JavaScript is used: fetched in browsers and workers (a
 * bundler such as Vite serves it as an asset), read from disk in Node (20.16 or later).
 * Rejects with an `OutboxError` whose `code` is `"NOT_INITIALIZED"` when it cannot be loaded.
 */
export default function init(
  module_or_path?: { module_or_path: ModuleSource | Promise<ModuleSource> } | ModuleSource | Promise<ModuleSource>,
): Promise<unknown>;

/** Instantiates the module synchronously from its bytes or a `WebAssembly.Module`. */
export declare function initSync(module: { module: BufferSource | WebAssembly.Module } | BufferSource | WebAssembly.Module): unknown;

/** The default classifier (§10); headers: a Headers or a plain object; status 0 means a network error. */
export declare function classifyHttp(status: number, headers?: Headers | Record<string, string> | null, body?: unknown, now?: number): Outcome;

/** The rows sendable now by this tab (§8), pure. */
export declare function selectSendable(
  rows: ReadonlyArray<OutboxRow | UndecodableRow>, tabId: string, now: number, leaseMs?: number, onlineSince?: number,
): OutboxRow[];

/** Whether a row's claim is still running (§5), pure. */
export declare function isRowInFlight(row: OutboxRow, now: number, leaseMs?: number): boolean;

/**
 * `{send, findCreateReceipt}` over `fetch`: URL per operation, method per kind,
 * `Idempotency-Key: op.id`, `If-Match` from `op.revision`, a JSON body, headers read at send
 * time, every answer through `classifyHttp`, a network error → transient `NETWORK`, a
 * request still running at half the lease (or `timeoutMs`) aborted → transient `TIMEOUT`.
 */
export declare function httpTransport(config: HttpTransportConfig): Transport;

/**
 * Asks the browser to fire `sync` in the app's service worker once online (Background
 * Sync). `true` when registered; `false` without a service worker or Background Sync.
 */
export declare function registerSync(tag?: string): Promise<boolean>;
