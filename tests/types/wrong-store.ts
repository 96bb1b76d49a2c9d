// Must FAIL to compile (tests/types/check-typed.mjs asserts each error below): the app's
// declared stores catch a wrong store name and a wrong field at compile time.
import { Outbox } from "tab-outbox";

interface Todo { key: string; title: string; done: boolean }
type Stores = { todos: Todo };

export async function mistakes(outbox: Outbox<Stores>): Promise<void> {
  await outbox.record("todoz", "t:1"); // MISTAKE wrong store name
  const todo = await outbox.record("todos", "t:1");
  console.log(todo?.titel); // MISTAKE wrong field read
  await outbox.enqueue(
    { owner: "alice", kind: "update", target: "t:1", body: {} },
    { writes: [{ store: "todos", patch: "t:1", set: { titel: "x" } }] }, // MISTAKE wrong field written
  );
  await outbox.enqueue(
    { owner: "alice", kind: "create", body: {} },
    { writes: [{ store: "todos", put: { key: "t:2", title: 1, done: false }, atTarget: true }] }, // MISTAKE wrong field type
  );
}
