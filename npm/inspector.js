// <outbox-inspector db="…" owner="…">: the outbox's rows and metrics, live across tabs, as
// a custom element any app can put on a page (import "tab-outbox/inspector").
//
// It opens its own Outbox on the database (a reader: it never claims or sends), re-reads on
// every change any tab or worker commits (subscribe), and ticks once a second while a claim
// is live so the lease left counts down. Row values are written as text, never as HTML:
// whatever a row holds is shown, not run.
import { Outbox } from "./index.js";

const STYLE = `
:host { display: block; font: 13px/1.4 system-ui, sans-serif; color: #222; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 2px 6px; border-bottom: 1px solid #ddd; vertical-align: top; }
th { font-weight: 600; color: #555; }
code { font: 12px ui-monospace, monospace; }
.metrics { margin: 4px 0 6px; color: #444; }
.error { color: #a00; }
[data-state="sending"] td[data-col="state"] { color: #06c; }
[data-state="held"] td[data-col="state"] { color: #a60; }
[data-state="blocked"] td[data-col="state"], [data-state="undecodable"] td[data-col="state"] { color: #a00; }
`;

const COLUMNS = ["op", "kind", "target", "state", "claim", "successorOf", "attempts", "last error"];

const short = (id) => (typeof id === "string" ? id.slice(0, 8) : "");

function cell(tr, col, text, title) {
  const td = document.createElement("td");
  td.dataset.col = col;
  td.textContent = text;
  if (title) td.title = title;
  tr.append(td);
  return td;
}

/** "tab-a · fence 2 · 7 s left" (or "expired" when the claim no longer holds). */
function describeClaim(claim, now) {
  if (!claim || typeof claim !== "object") return "";
  const left = Number(claim.expiresAt) - now;
  const lease = left > 0 ? `${Math.ceil(left / 1000)} s left` : "expired";
  return `${String(claim.tabId)} · fence ${String(claim.fence)} · ${lease}`;
}

const Base = globalThis.HTMLElement ?? class {};

export class OutboxInspector extends Base {
  static get observedAttributes() {
    return ["db", "owner"];
  }

  #outbox = null;
  #unsubscribe = null;
  #ticker = 0;
  #generation = 0;
  #running = null;
  #again = false;
  #root;

  constructor() {
    super();
    this.#root = this.attachShadow({ mode: "open" });
    const style = document.createElement("style");
    style.textContent = STYLE;
    this.#root.append(style, document.createElement("div"));
  }

  connectedCallback() {
    this.#start();
  }

  disconnectedCallback() {
    this.#stop();
  }

  attributeChangedCallback(_name, before, after) {
    if (before !== after && this.isConnected) {
      this.#stop();
      this.#start();
    }
  }

  /** Reads the rows and metrics again and redraws; resolves when drawn. */
  refresh() {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        await this.#draw();
      } while (this.#again);
    })().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async #start() {
    const generation = ++this.#generation;
    const db = this.getAttribute("db");
    if (!db) return this.#message("set the db attribute to the outbox's database name");
    try {
      const outbox = await Outbox.open({ dbName: db });
      if (generation !== this.#generation) return outbox.close();
      this.#outbox = outbox;
      this.#unsubscribe = outbox.subscribe(() => void this.refresh());
      await this.refresh();
    } catch (e) {
      if (generation === this.#generation) this.#message(`cannot open ${db}: ${e?.code ?? ""} ${e?.message ?? e}`);
    }
  }

  #stop() {
    this.#generation++;
    clearInterval(this.#ticker);
    this.#ticker = 0;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#outbox?.close();
    this.#outbox = null;
  }

  #message(text) {
    const div = document.createElement("div");
    div.className = "error";
    div.textContent = text;
    this.#root.lastChild.replaceWith(div);
  }

  async #draw() {
    const outbox = this.#outbox;
    const owner = this.getAttribute("owner");
    if (!outbox) return;
    if (!owner) return this.#message("set the owner attribute to the account whose rows to show");
    let rows, metrics;
    try {
      [rows, metrics] = await Promise.all([outbox.rows(owner), outbox.metrics(owner)]);
    } catch (e) {
      if (e?.code !== "CLOSED") this.#message(`cannot read: ${e?.code ?? ""} ${e?.message ?? e}`);
      return;
    }
    if (outbox !== this.#outbox) return;
    const now = Date.now();
    const view = document.createElement("div");
    const summary = document.createElement("div");
    summary.className = "metrics";
    summary.setAttribute("part", "metrics");
    const b = metrics.byState;
    const oldest = metrics.oldestQueuedAgeMs === null ? "" : ` · oldest queued ${Math.round(metrics.oldestQueuedAgeMs / 1000)} s`;
    summary.textContent =
      `total ${metrics.total} · queued ${b.queued} · sending ${b.sending} · held ${b.held} · ` +
      `blocked ${b.blocked} · undecodable ${metrics.undecodable}${oldest}`;
    const table = document.createElement("table");
    const head = table.createTHead().insertRow();
    for (const c of COLUMNS) {
      const th = document.createElement("th");
      th.textContent = c;
      head.append(th);
    }
    const body = table.createTBody();
    let live = false;
    for (const r of rows) {
      const tr = body.insertRow();
      tr.setAttribute("part", "row");
      tr.dataset.id = String(r.id ?? "");
      if (r.undecodable) {
        tr.dataset.state = "undecodable";
        cell(tr, "op", short(r.id), String(r.id ?? ""));
        cell(tr, "state", "undecodable");
        cell(tr, "error", String(r.error)).colSpan = COLUMNS.length - 2;
        continue;
      }
      tr.dataset.state = r.state;
      const claimLive = r.claim && Number(r.claim.expiresAt) > now;
      live ||= Boolean(claimLive);
      cell(tr, "op", short(r.id), r.id);
      cell(tr, "kind", r.kind);
      cell(tr, "target", r.target);
      cell(tr, "state", r.state);
      cell(tr, "claim", describeClaim(r.claim, now), r.claim ? `tab ${r.claim.tabId}` : "");
      cell(tr, "successorOf", short(r.successorOf), r.successorOf ?? "");
      cell(tr, "attempts", String(r.evidence?.attemptCount ?? 0));
      cell(tr, "error", r.blockedCode ?? r.evidence?.lastErrorCode ?? "");
    }
    view.append(summary, table);
    this.#root.lastChild.replaceWith(view);
    // Count a live lease down; stop ticking when none is left.
    if (live && !this.#ticker) this.#ticker = setInterval(() => void this.refresh(), 1000);
    if (!live && this.#ticker) {
      clearInterval(this.#ticker);
      this.#ticker = 0;
    }
  }
}

if (globalThis.customElements && !customElements.get("outbox-inspector")) {
  customElements.define("outbox-inspector", OutboxInspector);
}
