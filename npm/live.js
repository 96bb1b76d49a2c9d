// Live reads (issue 34): notices filtered by store, owner and change, and a live query over
// an app store that calls back with fresh records only when they changed, whatever tab or
// worker changed them.

import { invalidArgument, readArgument } from "./errors.js";

/**
 * Checks a `subscribe` filter `{stores?, owner?, changes?}`; returns the notice test. The
 * filter is read once, its lists copied: notices are tested against the copies.
 */
export function noticeFilter(filter) {
  if (typeof filter !== "object" || filter === null) throw invalidArgument("subscribe takes (callback) or (filter, callback)");
  const list = (value, name) => {
    if (value !== undefined && !(Array.isArray(value) && value.every((v) => typeof v === "string"))) {
      throw invalidArgument(`subscribe: \`${name}\` must be an array of strings`);
    }
    return value === undefined ? undefined : [...value];
  };
  const { stores, owner, changes } = readArgument("subscribe filter", () => {
    const { stores, owner, changes } = filter;
    return { stores: list(stores, "stores"), owner, changes: list(changes, "changes") };
  });
  if (owner !== undefined && typeof owner !== "string") throw invalidArgument("subscribe: `owner` must be a string");
  return (notice) =>
    (stores === undefined || (notice.records ?? []).some((r) => stores.includes(r.store))) &&
    (owner === undefined || notice.owner === owner) &&
    (changes === undefined || changes.includes(notice.change));
}

/**
 * `outbox.subscribe(callback)` or `outbox.subscribe(filter, callback)`, over the glue's
 * subscribe (`subscribeAll`, bound to the outbox).
 */
export function subscribe(subscribeAll, filterOrCallback, callback) {
  if (typeof filterOrCallback === "function" || callback === undefined) return subscribeAll(filterOrCallback);
  const matches = noticeFilter(filterOrCallback);
  if (typeof callback !== "function") throw invalidArgument("subscribe needs a function");
  return subscribeAll((notice) => {
    if (matches(notice)) callback(notice);
  });
}

/**
 * Reads `store` (with `query`), calls back with the records, then again whenever a change
 * of any tab wrote that store and the records read then differ. Returns the function that
 * stops it. Reads take turns: changes arriving during a read make one more read after it.
 */
export function liveRecords(outbox, store, query, callback) {
  if (typeof query === "function" && callback === undefined) [query, callback] = [undefined, query];
  if (typeof store !== "string") throw invalidArgument("liveRecords needs a store name");
  if (typeof callback !== "function") throw invalidArgument("liveRecords needs a callback");
  let stopped = false;
  let reading = false;
  let readAgain = false;
  /** The records last called back with, as JSON (they are JSON: app writes must be). */
  let lastSeen;

  async function read() {
    if (reading) {
      readAgain = true;
      return;
    }
    reading = true;
    try {
      do {
        readAgain = false;
        const records = await outbox.records(store, query);
        if (stopped) return;
        const seen = JSON.stringify(records);
        if (seen !== lastSeen) {
          lastSeen = seen;
          callback(records);
        }
      } while (readAgain && !stopped);
    } catch (error) {
      // Closed meanwhile: nothing more to read. Anything else is the app's to see.
      if (!stopped && error?.code !== "CLOSED") console.warn("tab-outbox: liveRecords could not read", store, error);
    } finally {
      reading = false;
    }
  }

  const unsubscribe = outbox.subscribe({ stores: [store] }, () => {
    read();
  });
  read();
  return () => {
    stopped = true;
    unsubscribe();
  };
}
