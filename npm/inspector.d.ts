// Types of tab-outbox/inspector: importing it defines the <outbox-inspector> element.

/**
 * `<outbox-inspector db="app-outbox" owner="alice">`: the owner's rows (state, claim with
 * its tab, fence and lease left, successor link, attempts, last error) and the metrics,
 * redrawn whenever any tab or worker commits a change. Changing `db` or `owner` reopens;
 * removing the element closes its outbox.
 */
export declare class OutboxInspector extends HTMLElement {
  static readonly observedAttributes: string[];
  /** Reads the rows and metrics again and redraws; resolves when drawn. */
  refresh(): Promise<void>;
}

declare global {
  interface HTMLElementTagNameMap {
    "outbox-inspector": OutboxInspector;
  }
}
