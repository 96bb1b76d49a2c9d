// What the page and the worker share: the app's `send`, here a fake server that creates
// records and answers through the package's own classifier.
import { classifyHttp, type Outcome, type SendOp } from "tab-outbox";

/** The app's records, kept in the outbox's database (the React test shows them). */
export interface Todo { key: string; title: string; done: boolean }
export type Stores = { todos: Todo };
export const RECORDS = { version: 1, stores: [{ name: "todos", keyPath: "key" }] };

let nextId = 1;

export function fakeSend(op: SendOp): Outcome {
  const status = op.kind === "create" ? 201 : 200;
  return classifyHttp(status, { "Content-Type": "application/json" }, { serverId: `srv-${nextId++}`, revision: 1, target: op.target });
}
