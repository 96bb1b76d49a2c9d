// Types of tab-outbox/react (needs React 18 or later).
import type { Outbox, RecordsQuery } from "./index.js";

/**
 * The records of `store` (through `query`: `{index?, range?}`), re-rendering the component
 * whenever any tab or worker changes them (and only then); `undefined` until the first read,
 * and while `outbox` is `null` or `undefined` (not open yet). Built on
 * `useSyncExternalStore` over `outbox.liveRecords`.
 */
export declare function useLiveRecords<S extends object, K extends keyof S & string>(
  outbox: Outbox<S> | null | undefined,
  store: K,
  query?: RecordsQuery,
): S[K][] | undefined;
