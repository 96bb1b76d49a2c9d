// tab-outbox/react: `useLiveRecords`, a React hook over `outbox.liveRecords` (issue 34),
// built on `useSyncExternalStore` as dexie-react-hooks' `useLiveQuery` is. React is an
// optional peer dependency: only apps importing this module need it.
import { useMemo, useSyncExternalStore } from "react";
import { readArgument } from "./errors.js";

/** A query's identity across renders: an `IDBKeyRange` made anew each render is the same query. */
function queryKey(query) {
  if (query === undefined || query === null) return "";
  return readArgument("useLiveRecords query", () => {
    const { index, range } = query;
    const isRange = typeof IDBKeyRange === "function" && range instanceof IDBKeyRange;
    const r = isRange ? { lower: range.lower, upper: range.upper, lowerOpen: range.lowerOpen, upperOpen: range.upperOpen } : { key: range };
    return JSON.stringify([index ?? null, r]);
  });
}

/** The external store of one live query: its last records, and how to follow them. */
function liveQuery(outbox, store, query) {
  let snapshot;
  return {
    subscribe(onChange) {
      if (!outbox) return () => {};
      return outbox.liveRecords(store, query, (records) => {
        snapshot = records;
        onChange();
      });
    },
    getSnapshot: () => snapshot,
  };
}

/**
 * The records of `store` (through `query`: `{index?, range?}`), re-rendering the component
 * when any tab or worker changes them; `undefined` until the first read (or while `outbox`
 * is not open yet: pass `null`).
 */
export function useLiveRecords(outbox, store, query) {
  const key = queryKey(query);
  // eslint-disable-next-line react-hooks/exhaustive-deps -- `key` stands for `query`
  const live = useMemo(() => liveQuery(outbox, store, query), [outbox, store, key]);
  return useSyncExternalStore(live.subscribe, live.getSnapshot, live.getSnapshot);
}
