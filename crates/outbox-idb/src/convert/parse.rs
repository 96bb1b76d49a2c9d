//! The text the walk writes (walk.js), read into JSON. It is JSON as `JSON.stringify`
//! writes it, but for numbers that are not safe integers: `#` and the 16 hex digits of
//! their bits, so that they read back exact. A reader of its own, not serde_json's: that
//! one is not linked otherwise, and rounds some floats (no `float_roundtrip`). The text
//! comes from walk.js alone; anything else reads as something, never as a panic.

use serde_json::{Map, Number, Value};

/// The JSON the walk wrote as `text`.
pub(super) fn parse(text: &str) -> Value {
    Reader { text, at: 0 }.value()
}

struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl Reader<'_> {
    /// The next byte (0 past the end), consumed.
    fn next(&mut self) -> u8 {
        let b = self.text.as_bytes().get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    /// Whether `byte` comes next; consumed if so.
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.text.as_bytes().get(self.at) == Some(&byte);
        self.at += usize::from(next);
        next
    }

    fn value(&mut self) -> Value {
        match self.next() {
            b'{' => {
                let mut map = Map::new();
                if self.eat(b'}') {
                    return Value::Object(map);
                }
                // Each round consumes bytes, and any byte but `,` ends the object.
                loop {
                    self.at += 1; // the key's `"`
                    let key = self.string();
                    self.at += 1; // `:`
                    let value = self.value();
                    map.insert(key, value);
                    if self.next() != b',' {
                        return Value::Object(map);
                    }
                }
            }
            b'[' => {
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Value::Array(items);
                }
                loop {
                    items.push(self.value());
                    if self.next() != b',' {
                        return Value::Array(items);
                    }
                }
            }
            b'"' => Value::String(self.string()),
            b't' => self.word(3, Value::Bool(true)),
            b'f' => self.word(4, Value::Bool(false)),
            b'n' => self.word(3, Value::Null),
            b'#' => {
                let bits = self.hex(16);
                Number::from_f64(f64::from_bits(bits)).map_or(Value::Null, Value::Number)
            }
            b'-' => Value::from(-(self.digits(0) as i64)),
            b @ b'0'..=b'9' => Value::from(self.digits(u64::from(b - b'0'))),
            _ => Value::Null,
        }
    }

    fn word(&mut self, rest: usize, v: Value) -> Value {
        self.at += rest;
        v
    }

    /// A safe integer's digits, after `n` read so far.
    fn digits(&mut self, mut n: u64) -> u64 {
        while let Some(d @ b'0'..=b'9') = self.text.as_bytes().get(self.at).copied() {
            n = n.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
            self.at += 1;
        }
        n
    }

    fn hex(&mut self, len: usize) -> u64 {
        (0..len).fold(0, |n, _| {
            let d = match self.next() {
                b @ b'0'..=b'9' => b - b'0',
                b @ b'a'..=b'f' => b - b'a' + 10,
                _ => 0,
            };
            n << 4 | u64::from(d)
        })
    }

    /// A string's text after its opening `"`, through its closing one.
    fn string(&mut self) -> String {
        let mut out = String::new();
        loop {
            let start = self.at;
            let bytes = self.text.as_bytes();
            while !matches!(bytes.get(self.at), None | Some(b'"' | b'\\')) {
                self.at += 1;
            }
            out.push_str(self.text.get(start..self.at).unwrap_or_default());
            if self.next() != b'\\' {
                return out;
            }
            let c = match self.next() {
                b'n' => '\n',
                b't' => '\t',
                b'r' => '\r',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                // JSON.stringify writes other control characters, and unpaired surrogates
                // (in a marker or a key, read as U+FFFD as any string from JS is), so.
                b'u' => char::from_u32(self.hex(4) as u32).unwrap_or('\u{FFFD}'),
                b => char::from(b),
            };
            out.push(c);
        }
    }
}
