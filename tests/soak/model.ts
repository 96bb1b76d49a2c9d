// The soak's user model and its bookkeeping: what each user meant (the last write of every
// record), every operation the library was given and what became of it, and the checks
// against what the gate applied.
import type { APIRequestContext, Page } from "@playwright/test";

/**
 * The gate's applied effects of `owners`, read one owner at a time (`/api/effects?actor=`):
 * the list stops at 10,000, and a long soak's owners fill it. Throws on an error answer or a
 * full list rather than count effects that were cut off as lost.
 */
export async function effectsOf(api: APIRequestContext, owners: string[]): Promise<any[]> {
  const lists = await Promise.all(
    owners.map(async (o) => {
      const res = await api.get(`/api/effects?actor=${encodeURIComponent(o)}`);
      if (!res.ok()) throw new Error(`/api/effects?actor=${o}: ${res.status()}`);
      const list: any[] = await res.json();
      if (list.length >= 10_000) throw new Error(`/api/effects?actor=${o}: the list is full (10,000): effects cut off`);
      return list;
    }),
  );
  return lists.flat();
}

export type Rng = () => number;

/** mulberry32: a small seeded PRNG, so that a seed replays the schedule. */
export function rng(seed: number): Rng {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Entity = "workout" | "plan";

/** A record as the user sees it: what they last wrote, or that they deleted it. */
interface Rec {
  key: number;
  owner: string;
  entity: Entity;
  /** The create's operation id and its `pending:` target. */
  createId: string;
  pending: string;
  serverId: string | null;
  alive: boolean;
  /** The user's last write of every field (updates write all fields or some), and `sets`: the commands' items in the order the user made them. */
  desired: Record<string, unknown>;
}

/** One call into the library on behalf of the user. */
interface Op {
  kind: "create" | "update" | "command" | "delete" | "retry";
  owner: string;
  rec: number;
  /** The row id this operation got of its own (null: merged into a row, or cancelled). */
  id: string | null;
  w: number;
  result: "own" | "merged-into-create" | "cancelled";
  /** What the library returned, and when (for the history of a failing record). */
  note?: string;
}

const token = (owner: string) => ({ Authorization: `Bearer ${owner}.soak-checker` });

export class Model {
  api!: APIRequestContext;
  recs: Rec[] = [];
  ops: Op[] = [];
  private locked = new Set<number>();
  private known = new Set<string>();
  /** Row ids an enqueue removed from its scope (coalesced into the new row, or cancelled). */
  private replaced = new Set<string>();
  private cancelledIds = new Set<string>();
  private discarded = new Set<string>();
  private reissued = new Set<string>();
  private retriesByW = new Map<number, Op>();
  private byServerId = new Map<string, Rec>();
  private w = 0;
  /** Edits of `pending:` that still met an empty scope (the create finished in between). */
  vanishedIntents = 0;
  differingRecs: Array<[string, string]> = [];
  lostRecs: number[] = [];
  staleAnswers = 0;
  staleProbes = 0;
  staleChanged = 0;
  /** Rows refused for another reason than the user's invalid weight (403 of a wrong account, 404, …). */
  unexpectedBlocked = 0;
  unexpected: string[] = [];

  private noted = new Set<string>();

  constructor(readonly owners: string[]) {}

  private note(text: string, id: string) {
    if (this.noted.has(id)) return;
    this.noted.add(id);
    this.unexpected.push(text);
  }

  /** Everything the user did to the record behind `target`, and what the gate applied to it. */
  async history(api: APIRequestContext, target: string, owner: string): Promise<string[]> {
    let rec = this.recs.find((r) => r.owner === owner && (r.serverId === target || r.pending === target || `#${r.key}` === target));
    for (const r of this.recs) {
      if (rec) break;
      if (r.owner === owner && !r.serverId && (await this.lookup(r)) === target) rec = r;
    }
    const out: string[] = [];
    if (!rec) return [`no record of the user has target ${target}`];
    out.push(`record ${rec.key}: create ${rec.createId} ${rec.pending} → ${rec.serverId ?? "?"}, alive ${rec.alive}, last write ${JSON.stringify(rec.desired)}`);
    for (const op of this.ops.filter((o) => o.rec === rec.key)) out.push(`op ${op.kind} ${op.id ?? "-"} ${op.result}: ${op.note ?? ""}`);
    const all = await effectsOf(api, [owner]);
    const sid = rec.serverId ?? (await this.lookup(rec));
    for (const e of all.filter((e) => e.actor === owner && e.target === sid)) out.push(`effect ${e.kind} ${e.opId} ×${e.count}`);
    return out;
  }

  // ---- page reports ------------------------------------------------------------------------
  sent(ev: { id: string; w?: number; conflictOf?: string | null }) {
    if (this.known.has(ev.id)) return;
    // A row rewritten after a revision conflict (§9): the same operation under a new id.
    if (ev.conflictOf && this.known.has(ev.conflictOf)) {
      this.alias.set(ev.id, this.original(ev.conflictOf));
      this.known.add(ev.id);
      return;
    }
    const u = ev.w === undefined ? undefined : this.uncertain.find((x) => x.w === ev.w && x.id === null);
    if (u) u.id = ev.id;
    if (ev.w === undefined) return;
    const retry = this.retriesByW.get(ev.w);
    if (retry && retry.id === null) this.own(retry, ev.id);
  }

  stale(ev: { probe: boolean }) {
    this.staleAnswers++;
    if (ev.probe) this.staleProbes++;
  }

  private own(op: Op, id: string) {
    op.id = id;
    this.known.add(id);
  }

  /** True if the user re-saved (`retryBlocked`) or discarded this row: it was refused, on purpose gone. */
  isReissued(id: string): boolean {
    return this.reissued.has(id) || this.discarded.has(id);
  }

  /** Conflict successors' ids → the id the user's operation got first. */
  private alias = new Map<string, string>();
  original(id: string): string {
    for (let i = 0; i < 100 && this.alias.has(id); i++) id = this.alias.get(id)!;
    return id;
  }

  /** Creates whose enqueue the browser's death interrupted: resolved after the relaunch. */
  uncertain: Array<{ owner: string; entity: Entity; body: Record<string, unknown>; w: number; id: string | null }> = [];
  enqueuesInterrupted = 0;
  enqueuesInterruptedCommitted = 0;

  /**
   * A create enqueued while the browser may be killed: the page's answer may never come.
   * Resolves to true when the enqueue returned (bookkept as usual), false when it did not.
   */
  async createMaybe(page: Page, draw: Rng, owner: string): Promise<boolean> {
    const entity: Entity = draw() < 0.7 ? "workout" : "plan";
    const body: Record<string, unknown> = { entity, ...this.fields(entity, draw) };
    const u = { owner, entity, body, w: body.w as number, id: null as string | null };
    this.uncertain.push(u);
    let row: any;
    try {
      ({ row } = await this.enqueue(page, { owner, kind: "create", body }));
    } catch {
      return false;
    }
    this.uncertain.splice(this.uncertain.indexOf(u), 1);
    this.addCreated(owner, entity, body, row.id, row.target);
    return true;
  }

  /**
   * After the relaunch, before any tab flushes again: an interrupted create was stored iff
   * its row is in the queue (or it was already sent: a send was reported with its `w`).
   * Atomicity: its local record exists exactly then (checked by `checkLocal`).
   */
  async resolveUncertain(page: Page) {
    for (const u of this.uncertain.splice(0)) {
      this.enqueuesInterrupted++;
      let id = u.id;
      let target = id ? `pending:${id}` : null;
      if (!id) {
        const rows: any[] = await page.evaluate((o) => (window as any).soak.outbox.rows(o), u.owner);
        const row = rows.find((r) => r.kind === "create" && r.body?.w === u.w);
        if (row) [id, target] = [row.id, row.target];
      }
      if (!id) continue; // never stored: the user saw no confirmation, nothing to send
      this.enqueuesInterruptedCommitted++;
      this.addCreated(u.owner, u.entity, u.body, id, target!);
    }
  }

  private addCreated(owner: string, entity: Entity, body: Record<string, unknown>, id: string, target: string) {
    const rec: Rec = {
      key: this.recs.length, owner, entity, createId: id, pending: target, serverId: null, alive: true,
      desired: { ...body },
    };
    this.recs.push(rec);
    const op: Op = { kind: "create", owner, rec: rec.key, id: null, w: body.w as number, result: "own" };
    this.own(op, id);
    this.ops.push(op);
  }

  // ---- the user's edits --------------------------------------------------------------------
  /** Every field of the entity (a create, a full update), or, `partial`, one of them. */
  private fields(entity: Entity, draw: Rng, invalid = false, partial = false): Record<string, unknown> {
    const w = ++this.w;
    // An invalid edit carries the invalid field alone: merged into a later edit, its other
    // fields would land with it, though the user never saw them saved.
    if (invalid) return { weight: -1 - (w % 7), w };
    const all: Record<string, unknown> = entity === "workout"
      ? { weight: Math.floor(draw() * 1000), reps: Math.floor(draw() * 20) }
      : { title: `t${Math.floor(draw() * 1e6)}`, note: `n${Math.floor(draw() * 1e6)}` };
    if (!partial) return { ...all, w };
    const keys = Object.keys(all);
    const k = keys[Math.floor(draw() * keys.length)];
    return { [k]: all[k], w };
  }

  private async enqueue(page: Page, op: Record<string, unknown>, withRevision = false) {
    const done = await (page.evaluate(([op, r]) => (window as any).soak.enqueue(op, r), [op, withRevision] as const) as Promise<{ row: any; before: string[]; after: string[]; conflicts?: Record<string, string> }>);
    this.learnConflicts(done.conflicts);
    return done;
  }

  /** Conflict successors seen in a scope (id → the id they replaced), sent or not. */
  learnConflicts(conflicts?: Record<string, string>) {
    for (const [id, previous] of Object.entries(conflicts ?? {})) this.sent({ id, conflictOf: previous });
  }

  /** Every id the operation had: its own, then its conflict successors'. */
  private idsOf(id: string): string[] {
    return [id, ...[...this.alias.keys()].filter((a) => this.original(a) === id)];
  }

  private pick(owner: string, draw: Rng): Rec | null {
    const free = this.recs.filter((r) => r.owner === owner && r.alive && !this.locked.has(r.key));
    return free.length ? free[Math.floor(draw() * free.length)] : null;
  }

  private async withLock<T>(rec: Rec, fn: () => Promise<T>): Promise<T> {
    this.locked.add(rec.key);
    try {
      return await fn();
    } finally {
      this.locked.delete(rec.key);
    }
  }

  async create(page: Page, draw: Rng, owner = this.owners[Math.floor(draw() * this.owners.length)]) {
    const entity: Entity = draw() < 0.7 ? "workout" : "plan";
    const body: Record<string, unknown> = { entity, ...this.fields(entity, draw) };
    const { row } = await this.enqueue(page, { owner, kind: "create", body });
    this.addCreated(owner, entity, body, row.id, row.target);
  }

  /** The server id from the create's receipt, if the gate has one. */
  private async lookup(rec: Rec): Promise<string | null> {
    const res = await this.api.get(`/api/receipts/${encodeURIComponent(rec.createId)}`, { headers: token(rec.owner) });
    return res.status() === 200 ? ((await res.json()).serverId as string) : null;
  }

  /** The server id, once known, for good. */
  private adopt(rec: Rec, sid: string) {
    rec.serverId = sid;
    this.byServerId.set(sid, rec);
  }

  /** One app-like edit: a create, an update (of a record still `pending:` too) or a delete. */
  async step(page: Page, draw: Rng) {
    const owner = this.owners[Math.floor(draw() * this.owners.length)];
    const r = draw();
    const live = this.recs.filter((x) => x.owner === owner && x.alive).length;
    const rec = live < 4 || r < 0.25 ? null : this.pick(owner, draw);
    if (!rec) return this.create(page, draw, owner);
    const kind = r < 0.87 ? "update" : "delete";
    const invalidDraw = draw();
    const fieldsDraw = draw();
    // The update's shape: all fields, one field, a command (`merge: false`, appends an
    // item to the record's `sets`), and whether it names its base revision (`If-Match`).
    const shape = draw();
    const revisionDraw = draw();
    await this.withLock(rec, async () => {
      // The app edits through `pending:` while the outbox holds rows of it, then through the
      // server id for good (one record, one scope at a time).
      let target = rec.serverId ?? rec.pending;
      const command = kind === "update" && rec.serverId !== null && shape < 0.12;
      const invalid = kind === "update" && !command && rec.entity === "workout" && rec.serverId !== null && invalidDraw < 0.06;
      const withRevision = kind === "update" && !command && rec.serverId !== null && revisionDraw < 0.3;
      let body: Record<string, unknown> | null = null;
      if (command) {
        const w = ++this.w;
        body = { cmd: "append", item: { n: Math.floor(fieldsDraw * 1000), w }, w };
      } else if (kind !== "delete") {
        body = this.fields(rec.entity, () => fieldsDraw, invalid, shape < 0.5);
      }
      const w = body ? (body.w as number) : ++this.w;
      const extra = command ? { merge: false } : {};
      let done: { row: any; before: string[]; after: string[]; vanished?: boolean } | null = null;
      if (!rec.serverId) {
        done = await page.evaluate((op) => (window as any).soak.enqueueEdit(op), { owner, kind, target, body });
        this.learnConflicts((done as any).conflicts);
        if (done!.vanished) {
          const sid = await this.lookup(rec);
          if (sid) this.adopt(rec, sid);
          target = sid ?? rec.pending;
          done = null;
        } else if (done!.before.length === 0) {
          this.vanishedIntents++;
        }
      }
      done ??= await this.enqueue(page, { owner, kind, target, body, ...extra }, withRevision);
      const { row, before, after } = done;
      const op: Op = { kind: command ? "command" : kind, owner, rec: rec.key, id: null, w, result: "own" };
      if (row === null) {
        op.result = "cancelled";
        for (const id of before) if (!after.includes(id)) this.cancelledIds.add(id);
      } else if (this.known.has(row.id)) {
        op.result = "merged-into-create";
      } else {
        this.own(op, row.id);
      }
      for (const id of before) if (!after.includes(id)) this.replaced.add(id);
      const tab = await page.evaluate(() => (window as any).soak.tabId).catch(() => "?");
      op.note = `${tab} ${op.kind} ${target} w=${w}${invalid ? " (invalid)" : ""}${withRevision ? " (If-Match)" : ""} → ${row ? `${row.id} ${row.kind} successorOf=${row.successorOf ?? "-"} savedAt=${row.savedAt}` : "null"}; ` +
        `scope before [${before.join(",")}] after [${after.join(",")}] at ${Date.now()}`;
      this.ops.push(op);
      if (kind === "delete") rec.alive = false;
      else if (command) rec.desired = { ...rec.desired, sets: [...((rec.desired.sets as unknown[]) ?? []), (body as any).item] };
      else if (!invalid) rec.desired = { ...rec.desired, ...body };
    });
  }

  /**
   * The user looks at blocked rows (a `422` for an invalid weight) and either re-saves the
   * record's current values through `retryBlocked` or discards the row and saves again.
   * A row blocked with `STALE_PROBE` is a stale answer that changed a row (see page/app.js).
   */
  async fixBlocked(page: Page, draw: Rng): Promise<void> {
    for (const owner of this.owners) {
      const rows: any[] = await page.evaluate((o) => (window as any).soak.outbox.rows(o), owner);
      for (const row of rows.filter((x) => x.state === "blocked")) {
        if (row.blockedCode === "STALE_PROBE") {
          if (!this.noted.has(row.id)) this.staleChanged++;
          this.note(`row ${row.id} blocked by a stale answer`, row.id);
        } else if (row.blockedCode !== "INVALID") {
          if (!this.noted.has(row.id)) this.unexpectedBlocked++;
          this.note(`row ${row.id} (${row.kind} ${row.target}) blocked with ${row.blockedCode}`, row.id);
          continue;
        }
        const rec = this.byServerId.get(row.target);
        if (!rec || this.locked.has(rec.key)) continue;
        if (!rec.alive) {
          // The record was deleted after this edit was sent: the user drops the rejected edit.
          const ok = await page.evaluate(([o, id]) => (window as any).soak.discard(o, id), [owner, row.id] as const);
          if (ok) this.discarded.add(row.id);
          continue;
        }
        await this.withLock(rec, async () => {
          const body = this.fields(rec.entity, draw);
          // A re-issued row keeps its place (its `savedAt`, docs/contract.md §7): edits of
          // the record queued behind it are sent after it and win. Re-saving new values
          // through `retryBlocked` is then not the user's last write, so a user with newer
          // edits pending drops the failed one and saves again instead.
          const behind = rows.some((x) => x.target === row.target && x.id !== row.id);
          if (draw() < 0.5 && !behind) {
            const op: Op = { kind: "retry", owner, rec: rec.key, id: null, w: body.w as number, result: "own" };
            this.retriesByW.set(op.w, op);
            const { ok, before, after } = await page.evaluate(async ([o, id, b, t]) => {
              const scope = async () => ((await (window as any).soak.outbox.rows(o)) as any[]).filter((r) => r.target === t).map((r) => r.id);
              const before = await scope();
              const ok = await (window as any).soak.retryBlocked(o, id, b);
              return { ok, before, after: await scope() };
            }, [owner, row.id, body, row.target] as const);
            for (const id of before) if (id !== row.id && !after.includes(id)) this.replaced.add(id);
            if (!ok) return;
            this.reissued.add(row.id);
            op.note = `user retried blocked ${row.id}; scope before [${before.join(",")}] after [${after.join(",")}]`;
            this.ops.push(op);
            rec.desired = { ...rec.desired, ...body };
            const now: any[] = await page.evaluate((o) => (window as any).soak.outbox.rows(o), owner);
            const fresh = now.find((x) => x.target === row.target && x.body?.w === op.w && !this.known.has(x.id));
            if (fresh && op.id === null) this.own(op, fresh.id);
          } else {
            const ok = await page.evaluate(([o, id]) => (window as any).soak.discard(o, id), [owner, row.id] as const);
            if (!ok) return;
            this.discarded.add(row.id);
            const { row: again, before, after } = await this.enqueue(page, { owner, kind: "update", target: row.target, body });
            for (const id of before) if (!after.includes(id)) this.replaced.add(id);
            const op: Op = { kind: "update", owner, rec: rec.key, id: null, w: body.w as number, result: "own" };
            if (again && !this.known.has(again.id)) this.own(op, again.id);
            op.note = `user discarded blocked ${row.id}, saved again → ${again?.id ?? "null"}; scope before [${before.join(",")}] after [${after.join(",")}]`;
            this.ops.push(op);
            rec.desired = { ...rec.desired, ...body };
          }
        });
      }
    }
  }

  /** Drain helper: resumes held rows, fixes blocked ones; returns how many rows are left. */
  async handleLeftovers(page: Page): Promise<number> {
    let left = 0;
    for (const owner of this.owners) {
      const rows: any[] = await page.evaluate((o) => (window as any).soak.outbox.rows(o), owner);
      if (rows.some((r) => r.state === "held")) await page.evaluate((o) => (window as any).soak.resumeHeld(o), owner);
      left += rows.length;
    }
    if (left > 0) await this.fixBlocked(page, rng(left));
    const undecodable: any[] = await page.evaluate(() => (window as any).soak.outbox.undecodable());
    return left + undecodable.length;
  }

  // ---- the checks ----------------------------------------------------------------------------
  /** Pending records without the create that sends them, and queued creates without their record. */
  localViolations = 0;

  /** Checks the invariant of the app's local records on a page (after every relaunch, and at the end). */
  async checkLocal(page: Page, where: string): Promise<void> {
    for (const owner of this.owners) {
      const { rows, recs } = await page.evaluate((o) => (window as any).soak.local(o), owner);
      const keys = new Set(recs.map((r: any) => r.key));
      for (const rec of recs.filter((r: any) => String(r.key).startsWith("pending:"))) {
        if (!rows.some((r: any) => r.kind === "create" && r.target === rec.key)) {
          this.localViolations++;
          this.localDetails.push(`${where}: pending record ${rec.key} of ${owner} has no create in the queue`);
        }
      }
      // A create in flight when the user deleted its record keeps its row, followed by the
      // delete (an intent): the record is gone on purpose.
      const deleting = new Set(rows.filter((r: any) => r.kind === "delete").map((r: any) => r.target));
      for (const row of rows.filter((r: any) => r.kind === "create")) {
        if (!keys.has(row.target) && !deleting.has(row.target)) {
          this.localViolations++;
          this.localDetails.push(`${where}: queued create ${row.id} (${row.target}) of ${owner} has no local record`);
        }
      }
    }
  }

  localDetails: string[] = [];

  /** After the drain: every local record is a server record with the same fields, and back. */
  async localDiffering(api: APIRequestContext, page: Page): Promise<number> {
    let differing = 0;
    for (const owner of this.owners) {
      const server: any[] = await (await api.get("/api/records", { headers: token(owner) })).json();
      const { recs } = await page.evaluate((o) => (window as any).soak.local(o), owner);
      const local = new Map<string, any>(recs.map((r: any) => [r.key, r]));
      for (const s of server) {
        const l = local.get(s.serverId);
        const same = l && Object.keys(s.body).every((k) => JSON.stringify(l[k]) === JSON.stringify(s.body[k]));
        if (!same) {
          differing++;
          this.localDetails.push(`local record ${s.serverId} of ${owner}: ${JSON.stringify(l ?? null)}, server ${JSON.stringify(s.body)}`);
        }
        local.delete(s.serverId);
      }
      for (const [key, l] of local) {
        differing++;
        this.localDetails.push(`local record ${key} of ${owner} is on no server record: ${JSON.stringify(l)}`);
      }
    }
    return differing;
  }

  async verify(api: APIRequestContext, page: Page) {
    const details: string[] = [...this.unexpected];
    const effects = await effectsOf(api, this.owners);
    // Per operation the user made: a conflict successor's effect is its original's.
    const count = new Map<string, number>();
    for (const e of effects) {
      const id = this.original(e.opId);
      count.set(id, (count.get(id) ?? 0) + e.count);
    }
    // Each effect under the account whose user made the operation: a row sent with another
    // account's session shows here (the page's transport takes the flush's session).
    const ownerOf = new Map<string, string>();
    const indexOf = new Map<string, number>();
    this.ops.forEach((op, i) => {
      if (op.id !== null) {
        ownerOf.set(op.id, op.owner);
        indexOf.set(op.id, i);
      }
    });
    let wrongAccount = 0;
    for (const e of effects) {
      const owner = ownerOf.get(this.original(e.opId));
      if (owner !== undefined && owner !== e.actor) {
        wrongAccount++;
        details.push(`operation ${e.opId} of ${owner} applied as ${e.actor}`);
      }
    }
    // Per record, the operations applied (in the gate's order) are in the order the user made
    // them: a subsequence of the record's edits (merged and cancelled ones left out).
    let outOfOrder = 0;
    const byTarget = new Map<string, any[]>();
    for (const e of effects) {
      if (!byTarget.has(e.target)) byTarget.set(e.target, []);
      byTarget.get(e.target)!.push(e);
    }
    for (const [target, list] of byTarget) {
      let last = -1;
      let lastId = "";
      for (const e of list) {
        const i = indexOf.get(this.original(e.opId));
        if (i === undefined) continue;
        if (i < last) {
          outOfOrder++;
          details.push(`record ${target}: ${e.opId} (edit #${i}: ${this.ops[i].kind} w=${this.ops[i].w}) applied after ${lastId} (edit #${last}: ${this.ops[last].kind} w=${this.ops[last].w})`);
          if (!this.differingRecs.some(([t]) => t === target)) this.differingRecs.push([target, e.actor]);
        }
        if (i > last) [last, lastId] = [i, e.opId];
      }
    }
    let duplicates = 0;
    for (const [id, n] of count) {
      if (n > 1) {
        duplicates += n - 1;
        details.push(`operation ${id} applied ${n} times`);
      }
      if (!this.known.has(id)) details.push(`effect of an operation the user never made: ${id}`);
    }
    const unknownEffects = [...count.keys()].filter((id) => !this.known.has(id)).length;

    let lost = 0;
    let merged = 0;
    let cancelled = 0;
    for (const op of this.ops) {
      if (op.result === "cancelled") cancelled++;
      if (op.result === "merged-into-create") merged++;
      if (op.result !== "own") continue;
      if (op.id === null) {
        lost++;
        this.lostRecs.push(op.rec);
        details.push(`${op.kind} w=${op.w} of record ${op.rec}: its row id was never seen`);
        continue;
      }
      const n = count.get(op.id) ?? 0;
      if (n > 0) continue;
      const ids = this.idsOf(op.id);
      if (ids.some((id) => this.cancelledIds.has(id))) cancelled++;
      else if (ids.some((id) => this.replaced.has(id) || this.reissued.has(id))) merged++;
      else if (!ids.some((id) => this.discarded.has(id))) {
        lost++;
        this.lostRecs.push(op.rec);
        details.push(`${op.kind} ${op.id} (w=${op.w}, record ${op.rec}) has no effect and was not merged, cancelled or discarded`);
      }
    }

    let differing = 0;
    for (const owner of this.owners) {
      const server: any[] = await (await api.get("/api/records", { headers: token(owner) })).json();
      const byId = new Map(server.map((s) => [s.serverId, s]));
      const matched = new Set<string>();
      for (const rec of this.recs.filter((r) => r.owner === owner)) {
        const sid = rec.serverId ?? (await this.lookup(rec));
        if (sid) matched.add(sid);
        const s = sid ? byId.get(sid) : undefined;
        if (!rec.alive) {
          if (s) {
            differing++;
            details.push(`record ${rec.key} (${sid}) was deleted by the user but lives on the server`);
          }
          continue;
        }
        const want = rec.desired;
        const same = s && Object.keys(want).every((k) => JSON.stringify(s.body[k]) === JSON.stringify(want[k]));
        if (!same) {
          differing++;
          this.differingRecs.push([sid ?? rec.pending, owner]);
          details.push(`record ${rec.key} (${sid ?? rec.pending}): server ${JSON.stringify(s?.body ?? null)}, last write ${JSON.stringify(want)}`);
        }
      }
      for (const s of server) {
        if (!matched.has(s.serverId)) {
          differing++;
          details.push(`server record ${s.serverId} matches no record of the user`);
        }
      }
      const left: any[] = await page.evaluate((o) => (window as any).soak.outbox.rows(o), owner);
      if (left.length) details.push(`${left.length} rows of ${owner} left in the outbox`);
    }
    // A stale answer that changed a row leaves its mark in the store (page/app.js).
    const marked: any[] = await page.evaluate(async () =>
      ((await (window as any).soak.rawRows()) as any[]).filter((r) => JSON.stringify(r).includes("STALE_PROBE")));
    this.staleChanged += marked.length;
    // ... and in the app's records: a reconcile written for a stale answer (§6: none is).
    for (const owner of this.owners) {
      const { recs } = await page.evaluate((o) => (window as any).soak.local(o), owner);
      for (const r of recs.filter((r: any) => JSON.stringify(r).includes("STALE_PROBE"))) {
        this.staleChanged++;
        details.push(`local record ${r.key} of ${owner} reconciled with a stale answer: ${JSON.stringify(r)}`);
      }
    }

    return {
      enqueued: this.ops.length, merged, cancelled, discarded: this.discarded.size, effects: effects.reduce((n, e) => n + e.count, 0),
      duplicates, lost: lost + unknownEffects, wrongAccount, outOfOrder, staleAnswers: this.staleAnswers, staleProbes: this.staleProbes,
      staleChanged: this.staleChanged, differing, records: this.recs.length, details,
    };
  }
}
