//! Helpers the workspace's tests share (not part of the crate's API).

/// `text` without the white space between a tag's `>` and the next `<`: for comparing documents
/// a transform rebuilt without the original's line breaks.
pub fn without_space_between_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending = String::new();
    for c in text.chars() {
        if c.is_whitespace() && (out.ends_with('>') || !pending.is_empty()) {
            pending.push(c);
            continue;
        }
        if c != '<' {
            out.push_str(&pending);
        }
        pending.clear();
        out.push(c);
    }
    out
}
