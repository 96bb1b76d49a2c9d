// A to-do list over tab-outbox. The todos live in the outbox's own database (store
// "todos"); every edit is queued together with the record change it makes, in one
// transaction, and sent to the server (the demo gate) on its own — at once when online,
// when the network returns otherwise. Open it in two tabs: each shows the other's edits.
import { Outbox, httpTransport } from "tab-outbox";

// The stand-in login of the demo gate: `?user=alice` (any name).
const params = new URLSearchParams(location.search);
const user = params.get("user") ?? "alice";

// outbox:begin
const isCreated = (r) => typeof r?.serverId === "string" && typeof r?.revision === "number";
const outbox = await Outbox.open({
  dbName: `todo-${user}`,
  records: { version: 1, stores: [{ name: "todos", keyPath: "key" }] },
  owner: () => user,
  transport: httpTransport({
    // "todo:7" → /api/records/todo/7; a create has no server id yet.
    url: (op) => (op.kind === "create" ? "/api/records/todo" : `/api/records/${op.target.replace(":", "/")}`),
    headers: () => ({ Authorization: `Bearer ${user}.session` }),
    receiptUrl: (operationId) => `/api/receipts/${encodeURIComponent(operationId)}`,
  }),
  // An edit made while its todo's create was on its way: sent to the id the server chose.
  prepareSuccessor: ({ intent, receipt }) => {
    if (!isCreated(receipt)) throw new Error("unexpected receipt");
    return { target: receipt.serverId, body: intent.body };
  },
  // A created todo moves from its pending: key to the server's id.
  reconcile: ({ row, answer }) =>
    answer.type === "success" && row.kind === "create" && isCreated(answer.receipt)
      ? [{ store: "todos", rekey: row.target, to: answer.receipt.serverId }]
      : [],
  backoff: { baseMs: Number(params.get("backoffMs") ?? 1000) },
  autoFlush: true,
});
const add = (title) => outbox.enqueue({ owner: user, kind: "create", body: { title, done: false } },
  { writes: [{ store: "todos", put: { title, done: false }, atTarget: true }] });
const edit = (key, set) => outbox.enqueue({ owner: user, kind: "update", target: key, body: set },
  { writes: [{ store: "todos", patch: key, set }] });
const remove = (key) => outbox.enqueue({ owner: user, kind: "delete", target: key },
  { writes: [{ store: "todos", delete: key }] });
outbox.liveRecords("todos", (todos) => render(todos));
// outbox:end

// ---- the app's own UI ----------------------------------------------------------------

const list = document.getElementById("list");
const input = document.getElementById("new");

function render(todos) {
  list.replaceChildren(...todos.map((todo) => {
    const li = document.createElement("li");
    li.dataset.key = todo.key;
    li.dataset.title = todo.title;
    li.classList.toggle("done", todo.done);
    li.classList.toggle("pending", todo.key.startsWith("pending:"));
    const done = Object.assign(document.createElement("input"), { type: "checkbox", checked: todo.done });
    done.addEventListener("change", () => edit(todo.key, { done: done.checked }));
    const title = Object.assign(document.createElement("input"), { className: "title", value: todo.title });
    title.addEventListener("change", () => title.value.trim() && edit(todo.key, { title: title.value.trim() }));
    const del = Object.assign(document.createElement("button"), { className: "delete", textContent: "×", title: "Delete" });
    del.addEventListener("click", () => remove(todo.key));
    li.append(done, title, del);
    return li;
  }));
}

document.getElementById("add").addEventListener("submit", (event) => {
  event.preventDefault();
  const title = input.value.trim();
  if (title) add(title);
  input.value = "";
});

const status = document.getElementById("status");
const showNetwork = () => (status.textContent = navigator.onLine ? "" : "Offline: edits are kept and sent when the network returns.");
addEventListener("online", showNetwork);
addEventListener("offline", showNetwork);
showNetwork();

// For the example's tests.
window.todoApp = { outbox, user, ready: true };
