// A React component over tab-outbox/react: the todos of the page's outbox, live across tabs.
// (No JSX: the app's tsconfig has none; createElement is what JSX compiles to.)
import { createElement, type ReactElement } from "react";
import { createRoot } from "react-dom/client";
import type { Outbox } from "tab-outbox";
import { useLiveRecords } from "tab-outbox/react";
import type { Stores } from "./outbox.ts";

/** How often `TodoList` rendered (the test checks it does not re-render for nothing). */
export const renders = { count: 0 };

function TodoList({ outbox }: { outbox: Outbox<Stores> }): ReactElement {
  renders.count += 1;
  const todos = useLiveRecords(outbox, "todos");
  if (todos === undefined) return createElement("p", { id: "todos-loading" }, "loading");
  return createElement(
    "ul",
    { id: "todos" },
    todos.map((t) => createElement("li", { key: t.key }, `${t.title}${t.done ? " ✓" : ""}`)),
  );
}

export function mountTodos(outbox: Outbox<Stores>): void {
  const root = document.createElement("div");
  document.body.append(root);
  createRoot(root).render(createElement(TodoList, { outbox }));
}
