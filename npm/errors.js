// The package's error class. The WebAssembly module throws plain `Error`s named
// "OutboxError" with a `code`; every call of the entry point passes what it throws through
// `adoptError`, which gives those this class's prototype, so `e instanceof OutboxError`
// holds for every error of the package (and `e instanceof Error` still does).

export class OutboxError extends Error {
  /**
   * @param {string} code a stable code (`OutboxErrorCode`)
   * @param {string} message what happened and what to do next
   * @param {ErrorOptions} [options] `{ cause }`
   */
  constructor(code, message, options) {
    super(message, options);
    this.name = "OutboxError";
    this.code = code;
  }
}

/** A new coded error of the package. */
export function outboxError(code, message, cause) {
  return new OutboxError(code, message, cause === undefined ? undefined : { cause });
}

/** `INVALID_ARGUMENT` with a message naming the argument (and what was thrown, as `cause`). */
export function invalidArgument(message, cause) {
  return outboxError("INVALID_ARGUMENT", `tab-outbox: ${message}`, cause);
}

/**
 * `read()`, which reads an object the app gave (spreads it, walks its entries, reads its
 * fields): a throw meanwhile (a getter, a Proxy's trap, a revoked Proxy) is the app's bad
 * argument, `INVALID_ARGUMENT` naming `what` ("flush options could not be read: …"), never
 * the app's own uncoded error (contract §15). The package's own coded errors pass as they are.
 */
export function readArgument(what, read) {
  try {
    return read();
  } catch (error) {
    if (isOutboxError(error)) throw error;
    throw invalidArgument(`${what} could not be read: ${describe(error)}`, error);
  }
}

/** `instanceof OutboxError`, false for a value whose prototype cannot be read (a revoked Proxy). */
function isOutboxError(value) {
  try {
    return value instanceof OutboxError;
  } catch {
    return false;
  }
}

/** What was thrown, as text: its `message` or `String(it)`, whichever can be read. */
function describe(thrown) {
  try {
    return thrown instanceof Error ? String(thrown.message) : String(thrown);
  } catch {
    return "a value that cannot be printed";
  }
}

/**
 * Returns `error`, re-prototyped as an `OutboxError` when it is one of the module's own
 * (named "OutboxError", with a string `code`); any other value (an app's port that threw,
 * say) is returned as it is.
 */
export function adoptError(error) {
  if (
    error instanceof Error &&
    !(error instanceof OutboxError) &&
    error.name === "OutboxError" &&
    typeof error.code === "string"
  ) {
    Object.setPrototypeOf(error, OutboxError.prototype);
  }
  return error;
}

/** Calls `fn`; errors it throws, or a promise it returns rejects with, are adopted. */
export function adoptingErrors(fn) {
  return function (...args) {
    let result;
    try {
      result = fn.apply(this, args);
    } catch (error) {
      throw adoptError(error);
    }
    if (result instanceof Promise) {
      return result.catch((error) => {
        throw adoptError(error);
      });
    }
    return result;
  };
}
