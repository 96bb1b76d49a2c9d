// The demo's one outbox configuration, imported by the page (app.js), the dedicated worker
// (worker.js) and the service worker (sw.js): the same records schema, owner, send and
// ports everywhere (issue 34: configured once, so no context can forget a port).
import { Outbox } from "/pkg/index.js";
import { RECORDS_SCHEMA, transport } from "./transport.js";

/**
 * Opens the demo's outbox. `session()` returns the current `{user, token, offline?}` (or a
 * promise of it; null when logged out); `offline()` is the page's Offline switch. The owner
 * flushed is the session's account, and nobody while the demo is switched offline: nothing
 * is claimed then, so edits keep coalescing (SPEC §7).
 */
export function openDemoOutbox({ session, offline = () => false, timeoutMs, ...options }) {
  const ports = transport({ session, offline, timeoutMs }); // send, prepareSuccessor, findCreateReceipt, reconcile
  return Outbox.open({
    ...options,
    records: RECORDS_SCHEMA,
    owner: async () => {
      const s = await session();
      return s && !offline() && !s.offline ? s.user : null;
    },
    ...ports,
  });
}
