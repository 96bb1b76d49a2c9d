// Compiled by tests/types/check-typed.mjs against the package entry (pkg/index.d.ts): an app
// that declares its stores gets its records back typed, writes checked per store, and the
// package's own error class. (wrong-store.ts beside it must fail.)
import { Outbox, OutboxError, httpTransport, type BlockedCode, type ChangeKind, type RecordWrite } from "tab-outbox";
import { useLiveRecords } from "tab-outbox/react";

interface Todo { key: string; title: string; done: boolean; revision?: number | null }
interface Note { key: string; text: string }
type Stores = { todos: Todo; notes: Note };

export async function app(user: () => string | null): Promise<void> {
  const outbox = await Outbox.open<Stores>({
    dbName: "todo",
    records: { version: 1, stores: [{ name: "todos", keyPath: "key" }, { name: "notes", keyPath: "key" }] },
    owner: user,
    transport: httpTransport({ url: (op) => `/api/todos/${op.target}`, headers: () => ({ Authorization: "Bearer x" }) }),
    reconcile: ({ row, answer }) => (answer.type === "success" ? [{ store: "todos", patch: row.target, set: { done: true } }] : []),
    autoFlush: { debounceMs: 50, onError: (e) => console.warn(e) },
  });
  const todo: Todo | undefined = await outbox.record("todos", "t:1");
  const notes: Note[] = await outbox.records("notes");
  const title: string | undefined = todo?.title;
  const writes: RecordWrite<Stores>[] = [
    { store: "todos", put: { key: "t:1", title: "milk", done: false }, atTarget: true },
    { store: "notes", patch: "n:1", set: { text: "x" } },
    { store: "todos", rekey: "pending:1", to: "t:2" },
  ];
  await outbox.enqueue({ owner: "alice", kind: "create", body: { title: "milk" } }, { writes });
  await outbox.flush();
  const stop = outbox.liveRecords("todos", (records) => records.map((r) => r.done));
  stop();
  const unsubscribe = outbox.subscribe({ stores: ["todos"], changes: ["flush"] }, (n) => {
    const change: ChangeKind = n.change;
    void change;
  });
  unsubscribe();
  for (const row of await outbox.rows("alice")) {
    if (!row.undecodable) {
      const code: BlockedCode | undefined = row.blockedCode;
      void code;
    }
  }
  try {
    await outbox.flush({ owner: "bob" });
  } catch (e) {
    if (e instanceof OutboxError && e.code === "SCHEMA_MISMATCH") console.warn(e.message);
  }
  const live: Todo[] | undefined = useLiveRecords(outbox, "todos");
  void notes, title, live;
}
