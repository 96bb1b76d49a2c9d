//! Where in a value: the paths messages name (`body.list[2]["a b"]`).

/// One step of a path: an object key or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    /// `.key` or `["key"]`.
    Key(String),
    /// `[i]`.
    Index(u32),
}

/// A path as the app writes it in JS: `body.list[2]["a b"]`.
#[must_use]
pub fn path_string(segs: &[Seg]) -> String {
    let mut s = String::new();
    for (i, seg) in segs.iter().enumerate() {
        match seg {
            Seg::Key(k) if is_identifier(k) => {
                if i > 0 {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Key(k) => {
                s.push('[');
                // The key as a JSON string, written by serde_json's writer of a `Value` (no
                // writer of a bare string of its own, issue 35): the same text.
                s.push_str(&outbox_core::json::text(&serde_json::Value::from(k.as_str())));
                s.push(']');
            }
            Seg::Index(n) => {
                s.push('[');
                crate::js::push_decimal(&mut s, *n as usize);
                s.push(']');
            }
        }
    }
    s
}

/// A long path, shortened for a message.
pub(super) fn short_path(segs: &[Seg]) -> String {
    if segs.len() <= 12 {
        return path_string(segs);
    }
    let mut s = path_string(&segs[..6]);
    s.push('…');
    s.push_str(&path_string(&segs[segs.len() - 3..]));
    s
}

fn is_identifier(k: &str) -> bool {
    let mut chars = k.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}
