// The package in a dedicated module worker: a tab of its own over the page's database. The
// page sends `{db, session, creates}`; the worker enqueues one create per title, flushes the
// session's account with the demo's transport and answers with what it did. (The demo page
// does not use it; the end-to-end tests do, as an app doing heavy work off the page would.)
import { openDemoOutbox } from "./outbox-config.js";

self.onmessage = async (event) => {
  const { db, session, creates } = event.data;
  try {
    // The page's configuration (outbox-config.js): flush() sends the session's account.
    const outbox = await openDemoOutbox({ dbName: db, tabId: `worker-${crypto.randomUUID()}`, session: () => session });
    const ids = [];
    for (const title of creates) {
      const body = { entity: "plan", title };
      const record = { owner: session.user, ...body, revision: null, sets: 0, error: null };
      const row = await outbox.enqueue(
        { owner: session.user, kind: "create", body },
        { writes: [{ store: "records", put: record, atTarget: true }] },
      );
      ids.push(row.id);
    }
    const report = await outbox.flush();
    postMessage({ tabId: outbox.tabId, ids, report });
    outbox.close();
  } catch (e) {
    postMessage({ error: `${e.code ?? ""} ${e.message}` });
  }
};
