// The walk over a JS value that writes its JSON, in JavaScript (issue 35): the engine does
// the per-node work (typeof, the prototype, the keys, each read) that cost several wasm↔JS
// calls per node when the walk was in Rust, and the module receives one string. Imported
// by src/convert/walk.rs; scripts/inline-snippets.mjs puts it into the package's glue. No
// dependencies.
//
// The rules are the crate's (SPEC §3 rules 2 and 4; docs in src/convert.rs): what JSON
// cannot hold is refused with its path (a value the app gives) or kept aside behind a
// marker, with the original and its path (a stored row); the walk is bounded in depth,
// in work (a node budget: shared objects count once per use) and stops at cycles; keys
// keep their order; a getter or Proxy trap that throws is a value that cannot be read,
// never an exception for the caller. Nothing here runs app code outside a `try`.
//
// The text is JSON as JSON.stringify writes it, but for numbers that are not safe integers:
// `#` and the 16 hex digits of their bits, read back exact (src/convert/parse.rs).

const OPAQUE = "$outboxOpaque";
const RESERVED = "an object using the reserved key `" + OPAQUE + "`";
// The intrinsics, as the module found them: an app's own `getTime` or a fake ArrayBuffer
// cannot answer for a real one.
const getTime = Date.prototype.getTime;
const byteLength = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength").get;
const bits = new DataView(new ArrayBuffer(8));
const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?:^|[^\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const wellFormed = "".isWellFormed ? (s) => s.isWellFormed() : (s) => !LONE.test(s);
// What a stored value's marker holds, by its tag: properties, or its text.
const PROPS = { __proto__: null, Blob: ["size", "type"], File: ["size", "type", "lastModified", "name"], Map: ["size"], Set: ["size"] };
const SHOWN = ["RegExp", "Number", "String", "Boolean", "Error"];
// Thrown to end a walk of the app's value at its first refusal (`Walk.refusal` says why).
const REFUSED = {};

/**
 * The walk of `v`: its text; `[text, kept]` when a stored value held what JSON cannot
 * (`kept`: path, what, marker, value, four by four); `[null, path, what, at]` when the app's
 * value is refused (`at`: the length of the path a cycle refers back to, else -1).
 */
export function walk(v, stored, maxDepth, maxNodes) {
  return new Walk(stored, maxDepth, maxNodes, []).run(v);
}

/**
 * An argument object's own fields, each walked as a value the app gives (fields set to
 * `undefined` are absent): its text, or `[null, path, what, at]` as for `walk`, where
 * `path` is `null` when the argument itself is not an object or cannot be read, and a key
 * when that field cannot be read.
 */
export function walkFields(v, maxDepth, maxNodes) {
  let keys;
  try {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return [null, null, "must be an object", -1];
  } catch {
    return [null, null, "must be an object", -1];
  }
  try {
    keys = Object.keys(v);
  } catch {
    return [null, null, "cannot be read", -1];
  }
  let s = "";
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    let field;
    try {
      field = v[k];
    } catch {
      return [null, k, "cannot be read", -1];
    }
    if (field === undefined) continue;
    const r = new Walk(false, maxDepth, maxNodes, [k]).run(field);
    if (typeof r !== "string") return r;
    s += (s ? "," : "{") + JSON.stringify(k) + ":" + r;
  }
  return s ? s + "}" : "{}";
}

class Walk {
  constructor(stored, maxDepth, maxNodes, path) {
    this.stored = stored;
    this.maxDepth = maxDepth;
    this.maxNodes = maxNodes;
    this.path = path;
    this.root = path.length;
    this.nodes = 0;
    // Objects on the current path → the length of the path at them.
    this.open = new Map();
    this.kept = [];
    // The outermost object on the path (by path length) a back edge below the last value
    // walked points to, or -1.
    this.back = -1;
    this.refusal = null;
  }

  run(v) {
    try {
      let text;
      try {
        text = this.step(v, 0);
      } catch (e) {
        if (e === REFUSED) throw e;
        // Not the value but the walk failing (out of stack or memory): it cannot be read.
        this.path.length = this.root;
        this.kept.length = 0;
        text = this.unreadable(v, e);
      }
      return this.kept.length ? [text, this.kept] : text;
    } catch {
      const r = this.refusal;
      return [null, r[0], r[1], r[2]];
    }
  }

  step(v, depth) {
    this.back = -1;
    if (++this.nodes > this.maxNodes) return this.large(v);
    switch (typeof v) {
      case "number":
        if (v - v === 0) return Number.isSafeInteger(v) ? "" + v : float(v);
        if (v !== v) return this.foreign(v, "NaN", "Number:NaN");
        return v > 0 ? this.foreign(v, "Infinity", "Number:Infinity") : this.foreign(v, "-Infinity", "Number:-Infinity");
      case "string":
        if (wellFormed(v)) return JSON.stringify(v);
        return this.foreign(v, "a string with an unpaired surrogate", this.stored ? "String:" + digest(v) : "");
      case "boolean":
        return v ? "true" : "false";
      case "object":
        return v === null ? "null" : this.object(v, depth);
      case "bigint":
        return this.foreign(v, "a BigInt", this.stored ? "BigInt:" + String(v) : "");
      case "symbol":
        return this.foreign(v, "a symbol", "Symbol");
      case "function":
        return this.foreign(v, "a function", "Function");
      default:
        // `undefined`, and what claims to be (`document.all`).
        return this.foreign(v, "undefined", "undefined");
    }
  }

  /** An object: an array or a plain object (of any realm) is walked, anything else is foreign. */
  object(v, depth) {
    let array, proto;
    try {
      array = Array.isArray(v);
    } catch {
      return this.foreign(v, "an object that cannot be read", "Unreadable");
    }
    if (!array) {
      try {
        proto = Object.getPrototypeOf(v);
      } catch {
        return this.foreign(v, "an object whose prototype cannot be read", "Unreadable");
      }
      if (proto !== null && proto !== Object.prototype && !isObjectPrototype(proto)) return this.describe(v, proto);
    }
    if (depth >= this.maxDepth) {
      const what = "nested deeper than " + this.maxDepth + " levels";
      return this.stored ? this.foreign(v, "a value " + what, "Deep") : this.refuse(what, -1);
    }
    const at = this.open.get(v);
    if (at !== undefined) {
      if (!this.stored) return this.refuse("", at);
      // A back edge to the row itself: the edge is kept as it is.
      if (at === 0) return this.foreign(v, "a cycle", "Cycle");
      // Otherwise the object it points to is kept whole, with its cycle (below).
      this.back = at;
      return mark("Cycle");
    }
    const here = this.path.length;
    const kept = this.kept.length;
    this.open.set(v, here);
    const text = array ? this.items(v, depth) : this.fields(v, depth);
    this.open.delete(v);
    if (this.back !== here) return text;
    // The cycle closes here: this object is kept whole, so the cycle is written back as the
    // same cycle. Its marker digests what the walk saw inside.
    this.kept.length = kept;
    return this.foreign(v, "a cycle", "Cycle:" + digest(text));
  }

  items(v, depth) {
    let n;
    try {
      n = v.length;
    } catch (e) {
      return this.unreadable(v, e);
    }
    // As Rust's `as u32`: truncated, saturated, NaN and anything not a number as 0.
    n = typeof n === "number" && n > 0 ? Math.min(Math.floor(n), 4294967295) : 0;
    // The length counts before the items are read: a sparse array of length 2^32 − 1 costs
    // nothing to store.
    if (this.nodes + n > this.maxNodes) return this.large(v);
    let s = "[";
    let back = -1;
    for (let i = 0; i < n; i++) {
      this.path.push(i);
      const text = this.child(v, i, depth);
      this.path.pop();
      back = outer(back, this.back);
      s += i ? "," + text : text;
    }
    this.back = back;
    return s + "]";
  }

  fields(v, depth) {
    let keys;
    try {
      keys = Object.keys(v);
    } catch (e) {
      return this.unreadable(v, e);
    }
    if (this.nodes + keys.length > this.maxNodes) return this.large(v);
    const kept = this.kept.length;
    let s = "{";
    let back = -1;
    let reserved = false;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      if (!wellFormed(k)) {
        this.kept.length = kept;
        return this.foreign(v, "an object with a key holding an unpaired surrogate", "Object:" + digest(k));
      }
      if (k === OPAQUE) {
        if (!this.stored) return this.foreign(v, RESERVED, "");
        reserved = true;
      }
      this.path.push(k);
      const text = this.child(v, k, depth);
      this.path.pop();
      back = outer(back, this.back);
      s += (i ? "," : "") + JSON.stringify(k) + ":" + text;
    }
    s += "}";
    if (reserved) {
      // Read back as it is, this object could pass for a marker: it is kept whole.
      this.kept.length = kept;
      s = this.foreign(v, RESERVED, "Reserved:" + digest(s));
    }
    this.back = back;
    return s;
  }

  /** `v[k]`, walked; a read that throws makes `v` a value that cannot be read (at `k`). */
  child(v, k, depth) {
    let item;
    try {
      item = v[k];
    } catch (e) {
      return this.unreadable(v, e);
    }
    return this.step(item, depth + 1);
  }

  unreadable(v, e) {
    let why = "";
    try {
      const m = (typeof e === "object" && e !== null) || typeof e === "function" ? e.message : undefined;
      if (typeof m === "string") why = m;
    } catch {}
    return this.foreign(v, "a value that cannot be read (" + why + ")", "Unreadable");
  }

  large(v) {
    const what = "part of a value with more than " + this.maxNodes + " parts (shared objects count once per use)";
    return this.foreign(v, what, "Large");
  }

  /** Refuses `v` (the app's) or keeps it aside behind a marker (stored). */
  foreign(v, what, marker) {
    this.back = -1;
    if (!this.stored) return this.refuse(what, -1);
    this.kept.push(this.path.slice(), what, marker, v);
    return mark(marker);
  }

  refuse(what, at) {
    this.refusal = [this.path.slice(), what, at];
    throw REFUSED;
  }

  /** Names an object that is not a plain object and, for a stored one, digests it cheaply and stably. */
  describe(v, proto) {
    let tag = "Object";
    try {
      const toString = Object.prototype.toString;
      const t = toString instanceof Function ? toString.call(v) : "";
      if (typeof t === "string" && t.startsWith("[object ") && t.endsWith("]")) tag = t.slice(8, -1);
    } catch {}
    if (tag === "Object" && !ArrayBuffer.isView(v)) {
      let name = "";
      try {
        const n = Reflect.get(Reflect.get(proto, "constructor"), "name");
        if (typeof n === "string") name = n;
      } catch {}
      if (name) return this.foreign(v, "an instance of class `" + name + "`", "Object:" + name);
      return this.foreign(v, "an object with a prototype of its own", "Object");
    }
    // The app's values are refused whatever their marker: only a stored one is digested
    // (a marker can cost a copy of a whole buffer).
    let data = "";
    if (this.stored) {
      const props = PROPS[tag];
      if (tag === "Date") data = ":" + time(v);
      else if (props) data = props.map((k) => ":" + text(v, k)).join("");
      else if (tag === "ArrayBuffer" || ArrayBuffer.isView(v)) data = ":" + bytes(v, tag !== "ArrayBuffer");
      else if (SHOWN.includes(tag)) data = ":" + text(v);
    }
    return this.foreign(v, article(tag), tag + data);
  }
}

/** The marker standing for a kept value in the JSON (src/convert/foreign.rs). */
function mark(marker) {
  return '{"' + OPAQUE + '":' + JSON.stringify(marker) + "}";
}

function outer(a, b) {
  return a < 0 ? b : b < 0 ? a : Math.min(a, b);
}

/** A finite number that is not a safe integer, by its bits: `#` and 16 hex digits. */
function float(n) {
  bits.setFloat64(0, n);
  return "#" + hex(bits.getUint32(0)) + hex(bits.getUint32(4));
}

function hex(n) {
  return (n >>> 0).toString(16).padStart(8, "0");
}

/**
 * Whether `p` is the `Object.prototype` of another realm (a same-origin iframe or window,
 * a WebDriver sandbox): a plain object made there is JSON as much as one made here (§3
 * rule 4). Such a prototype has no prototype and is its constructor's `prototype`.
 */
function isObjectPrototype(p) {
  try {
    if (Object.getPrototypeOf(p) !== null) return false;
    const c = Reflect.get(p, "constructor");
    return typeof c === "function" && Reflect.get(c, "prototype") === p;
  } catch {
    return false;
  }
}

/** `String(v)`, or of `v[k]`; "" when reading or printing it throws. */
function text(v, k) {
  try {
    return String(k === undefined ? v : v[k]);
  } catch {
    return "";
  }
}

/** The time of a Date by the intrinsic `getTime`: NaN for anything else. */
function time(v) {
  try {
    return getTime.call(v);
  } catch {
    return NaN;
  }
}

function article(name) {
  return (/^[AEIOUaeiou]/.test(name) ? "an " : "a ") + name;
}

/** Whether `b` is a real ArrayBuffer (brand-checked: a prototype or a Proxy cannot pass). */
function real(b) {
  try {
    byteLength.call(b);
    return true;
  } catch {
    return false;
  }
}

/**
 * `length:digest` of the bytes of an ArrayBuffer, or of a view on one; `detached` for a
 * buffer given away (`postMessage`, `structuredClone` with `transfer`). Only a real
 * ArrayBuffer is read: `new Uint8Array(fake)` reads an array-like of any `length`.
 */
function bytes(v, view) {
  let u8;
  try {
    if (!view) u8 = new Uint8Array(real(v) ? v : 0);
    else {
      let b;
      try {
        b = v.buffer;
      } catch {}
      u8 = real(b) ? new Uint8Array(b, number(v, "byteOffset"), number(v, "byteLength")) : new Uint8Array(0);
    }
  } catch {
    return "detached";
  }
  return u8.length + ":" + digest(u8);
}

function number(v, k) {
  try {
    const n = v[k];
    return typeof n === "number" ? n : 0;
  } catch {
    return 0;
  }
}

/** A stable digest (16 hex digits) of a string's units or of bytes: not a security measure. */
function digest(x) {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  const s = typeof x === "string";
  for (let i = 0; i < x.length; i++) {
    const c = s ? x.charCodeAt(i) : x[i];
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 13;
  }
  return hex(a) + hex(b);
}
