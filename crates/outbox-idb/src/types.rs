//! TypeScript types of the package (the `.d.ts` wasm-bindgen writes includes them).

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &str = r#"
/**
 * A stored row, format v1 (SPEC §3). Fields this version does not know are kept as stored,
 * whatever they hold (a `Date` or `Blob` another writer put there stays one).
 * `undecodable` is never set: it tells these apart from `UndecodableRow` in `rows()`.
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
  blockedCode?: string;
  /** Set on a blocked row once a later edit of its record went out ahead of it (SPEC §5, §7):
   * its values are older than the server's, and a later edit never carries them. */
  overtakenAt?: number;
  claim?: { tabId: string; expiresAt: number; fence: number };
  evidence?: { attemptCount: number; lastAttemptAt?: number; lastErrorCode?: string };
  writer?: { bundle: string; at: number };
  successorOf?: string;
  conflict?: { previousId: string; actualRevision: unknown; at: number };
  /** `true`: enqueued with `merge: false`, never coalesced (SPEC §7); absent: may be merged. */
  noMerge?: boolean;
  [unknown: string]: unknown;
}

/**
 * A stored value this version cannot decode; never sent, claimed, merged or purged (SPEC §3).
 * `raw` is the value as stored. A row whose `body` (or another field this version reads)
 * holds what JSON cannot — a `Date` put there by other code — is one of these.
 */
export interface UndecodableRow {
  id: string | null;
  owner: string | null;
  undecodable: true;
  error: string;
  raw: unknown;
}

export interface OpenOptions {
  dbName: string;
  tabId?: string;
  /** How long a claim lasts, 1 to 2147483647 ms (default 10000). */
  leaseMs?: number;
  /** The clock, epoch ms (default `Date.now`); a reading that is not a `Date`'s number is replaced by `Date.now()`. */
  now?: () => number;
  /** Draws in [0, 1] (default `Math.random`); one outside is clamped into it, `NaN` counts as 0. */
  random?: () => number;
  /** Retry delays, each 0 to 2147483647 ms (defaults 1000 and 300000). */
  backoff?: { baseMs?: number; capMs?: number };
  /** Rows of different targets sent at once (default 16). */
  concurrency?: number;
  /**
   * Flushes of one owner take turns across tabs: while another tab's flush of the owner is
   * running and changing its rows, a flush waits for it to end, then sends what is left.
   * It stops waiting (and runs beside it, as safely: every row is still claimed) once it
   * sees no flush change the owner's rows for this long, after one lease, or at its
   * `deadline` (default 1000 ms; 0: never wait). Uses Web Locks where the engine has them.
   */
  turnWaitMs?: number;
  /**
   * How long opening (and reopening after another tab's upgrade) waits for other tabs of
   * this app to let go of the database before failing with code `BLOCKED` (default 5000).
   */
  openTimeoutMs?: number;
  /**
   * The app's own object stores, kept in this same database so that a record and its queue
   * row commit in one transaction (`enqueue(op, {writes})`, `reconcile`). Raise `version`
   * whenever `stores` changes: missing stores and indexes are created, a changed index is
   * replaced, no store is ever deleted. A database holding a newer `version` (another tab
   * runs a newer app) is refused with `SCHEMA_NEWER`. Refused with `SCHEMA_MISMATCH`, and
   * nothing opened or changed: a store whose `keyPath` or `autoIncrement` differs from the
   * database's, at any `version` (a store's key cannot change: keep it, or declare a store
   * under a new name); at the database's own `version`, a declared store or index missing
   * or different there (raise `version`). Stores and indexes not declared are kept.
   */
  records?: RecordsSchema;
}

export interface RecordsSchema {
  version: number;
  stores: Array<{
    name: string;
    keyPath?: string | string[];
    autoIncrement?: boolean;
    indexes?: Array<{ name: string; keyPath: string | string[]; unique?: boolean; multiEntry?: boolean }>;
  }>;
}

/** A JSON key IndexedDB accepts: a string, a finite number, or an array of those. */
export type RecordKey = string | number | RecordKey[];

/**
 * One write to an app store, committed with the queue change it goes with. `put` stores a
 * JSON record (under `key`, or `atTarget`: under the operation's target — a create without
 * a target gets its `pending:` key); `patch` merges `set` into a record and `rekey` moves
 * one to `to` (with `set` merged in) — both only if the record exists, so an answer never
 * brings back a record the user deleted.
 */
export type RecordWrite =
  | { store: string; put: unknown; key?: RecordKey; atTarget?: boolean }
  | { store: string; delete: RecordKey }
  | { store: string; patch: RecordKey; set: Record<string, unknown> }
  | { store: string; rekey: RecordKey; to: RecordKey; set?: Record<string, unknown> };

export interface EnqueueOptions {
  /** Record writes committed in the enqueue's own transaction, whatever it planned. */
  writes?: RecordWrite[];
}

/** How an attempt ended, as `reconcile` sees it. */
export type ReconcileAnswer =
  | { type: "success"; receipt: unknown; replayed: boolean }
  | { type: "blocked"; code: string }
  | { type: "conflict"; actualRevision: unknown };

export interface RecordsQuery {
  /** Read through this index of the store. */
  index?: string;
  /** An `IDBKeyRange` or a key; absent: every record. */
  range?: IDBKeyRange | IDBValidKey;
}

/**
 * The `code` of every error the package throws or rejects with. `NOT_INITIALIZED`: the
 * WebAssembly module is not loaded — `classifyHttp`, `selectSendable` or `isRowInFlight`
 * called before `await init()` (or `Outbox.open`, which loads it), or the module could not
 * be fetched or read. `INTERNAL`: a bug in the module (a panic); the transaction it was writing is aborted.
 */
export type OutboxErrorCode = "INVALID_ARGUMENT" | "STORAGE" | "CLOSED" | "BLOCKED" | "QUOTA" | "NOT_INITIALIZED" | "SCHEMA_NEWER" | "SCHEMA_MISMATCH" | "INTERNAL";

export interface EnqueueInput {
  owner: string;
  target?: string;
  kind: "create" | "update" | "delete";
  /**
   * JSON only: plain objects, arrays, strings, finite numbers, booleans, null, at most 256
   * levels deep. Anything else is refused with `INVALID_ARGUMENT` naming where it is —
   * a `Date`, `Blob`, `Map`, `Set`, `BigInt`, typed array, function, class instance, `NaN`,
   * `Infinity`, a cycle — and so is a property set to `undefined` (leave the key out; JSON
   * would drop it silently). Any JSON value for create and update: objects coalesce
   * (fields merged, SPEC §7); a non-object body (a JSON Patch array, say) is never merged
   * into another body: it waits as the successor of the rows before it.
   */
  body?: unknown;
  /**
   * Base revision: a number or an opaque string (an ETag), stored, fingerprinted and sent
   * exactly as given; `null` or absent: none.
   */
  revision?: number | string | null;
  /**
   * `false`: never coalesced (a payment, an increment, a message): stored with
   * `noMerge: true`, it is neither merged into nor replaced nor cancelled, absorbs nothing,
   * and waits as the successor of the target's latest row; later operations of the target
   * wait behind it, so every one is sent, in order (SPEC §7). Absent, `null` or `true`:
   * may be merged. Anything else is refused with `INVALID_ARGUMENT`. An older library
   * version that does not know `noMerge` (in another tab on the same database) may still
   * merge such rows.
   */
  merge?: boolean | null;
}

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

/** The real request of an intent; `body` must be JSON as at enqueue, or the intent is blocked. */
export interface Prepared { target: string; body: unknown; revision?: number | string | null }

export interface AckPorts {
  /**
   * `receipt` is the create's success body exactly as `send` returned it (or as
   * `findCreateReceipt` found it): `unknown`, since it comes from your server and may have
   * been stored by another tab or version. Narrow it with a type guard of your own, e.g.
   * `(r: unknown): r is { serverId: string } => typeof r === "object" && r !== null && "serverId" in r`.
   */
  prepareSuccessor?: (a: { intent: OutboxRow; predecessor: OutboxRow | null; receipt: unknown }) => Prepared | Promise<Prepared>;
  findCreateReceipt?: (a: { owner: string; operationId: string }) => unknown | null | Promise<unknown | null>;
  /**
   * Maps an answer that ends an attempt (success, blocked, conflict) to record writes,
   * committed in the ACK's own transaction — only while the claim is still this tab's, so a
   * stale answer changes neither the row nor the records. Synchronous: it returns the
   * writes (not a promise). If it throws, the answer is not applied and the row is sent
   * again after its lease (the gate replays the answer).
   */
  reconcile?: (a: { row: OutboxRow; answer: ReconcileAnswer }) => RecordWrite[];
}

export interface FlushOptions extends AckPorts {
  owner: string;
  send: (op: SendOp) => Outcome | Promise<Outcome>;
  maxRows?: number;
  /** Claim and send no row at or after this instant of the outbox's clock (`now()`), e.g.
   *  `Date.now() + 20_000` in a service worker's `sync` handler: the rest stays queued.
   *  Sends already under way are awaited, so give `send` a timeout of its own. */
  deadline?: number;
  concurrency?: number;
  /** `true`: the network is down (`!navigator.onLine`). The flush claims nothing, records no
   *  attempt and changes no row; it resolves at once with zeros and `offline: true`. */
  offline?: boolean;
  /** When the network last came back (the outbox's clock): a queued row whose last attempt
   *  failed for the network (`lastErrorCode` `"NETWORK"` or `"TIMEOUT"`) and that was deferred
   *  before it is due at once, whatever its `nextAttemptAt` (SPEC §10). */
  onlineSince?: number;
}

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
   *  deadline, or less than half a lease left: SPEC §8). A row is in one, never both. */
  claimed: number; released: number; succeeded: number; deferred: number; held: number; blocked: number;
  conflicts: number; stale: number; skipped: number; converted: number; applied: number;
  receipts: ReceiptReport[];
  counters: Counters;
  /** The flush was told the network is down: it did nothing. */
  offline: boolean;
  /** The earliest instant after now at which a row not sendable now may become sendable (a
   *  row's `nextAttemptAt`, another tab's lease end), at most the instant the flush stopped
   *  when its deadline stopped it before it found nothing more to send (rows may be left),
   *  or `null` (SPEC §8): a timer's time. */
  nextDueAt: number | null;
}

export interface Metrics extends Counters {
  total: number;
  byState: { queued: number; sending: number; held: number; blocked: number };
  oldestQueuedAgeMs: number | null;
  undecodable: number;
}

export interface ChangeNotice {
  tabId: string;
  change: string;
  owner: string | null;
  /** The app records the change wrote, when it wrote some. */
  records?: Array<{ store: string; key: IDBValidKey }>;
}

/**
 * Errors thrown by the package: `name` is `"OutboxError"` and `code` is stable. A `catch`
 * clause gets `unknown`; narrow it with a check of `code`, e.g.
 * `e instanceof Error && "code" in e && e.code === "BLOCKED"`.
 */
export interface OutboxError extends Error {
  name: "OutboxError";
  code: OutboxErrorCode;
  /**
   * On a `flush` that failed part way: what it did until then. Answers already applied
   * stay applied (their rows are gone), and their receipts are here.
   */
  report?: FlushReport;
}
"#;
