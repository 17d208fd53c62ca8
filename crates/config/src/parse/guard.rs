//! A linear scan of configuration text before roxmltree reads it.
//!
//! roxmltree compares each attribute of an element with every earlier one, and looks a prefix up
//! through every namespace declaration in scope: one element with 60,000 attributes, or a
//! document declaring 60,000 prefixes, keeps it busy for seconds. The scan refuses such text
//! first, with the place, in time linear in its length.
//!
//! | Limit | Value | Why this much |
//! |---|---:|---|
//! | attributes on one element (declarations included) | 128 | the busiest Synapse or MI artifact has about 20 |
//! | namespace declarations in scope | 128 | quick-xml's default; a WSDL in a proxy declares about 15 |
//!
//! The scan knows comments, CDATA sections, processing instructions and quoted attribute values
//! (a `>` or `<` inside one ends nothing). It stops at a DOCTYPE (roxmltree refuses those here)
//! and trusts end tags to close what they name. On text that is not well-formed it may count
//! wrongly; roxmltree then refuses the text anyway.

/// At most this many attributes, namespace declarations included, on one element.
pub(crate) const MAX_ATTRIBUTES: usize = 128;
/// At most this many namespace declarations in scope at once.
pub(crate) const MAX_NAMESPACES: usize = 128;

/// What the scan refused, at a byte offset of the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub at: usize,
    pub message: String,
}

/// `Err` when an element of `text` carries more than [`MAX_ATTRIBUTES`] attributes, or more than
/// [`MAX_NAMESPACES`] declarations are in scope at once.
pub(crate) fn check(text: &str) -> Result<(), Refusal> {
    let b = text.as_bytes();
    // Declarations made by each open element, innermost last, and their sum.
    let mut open: Vec<u32> = Vec::new();
    let mut in_scope = 0usize;
    let mut i = 0;
    while let Some(off) = memchr(b'<', &b[i..]) {
        let at = i + off;
        let rest = &b[at..];
        i = if rest.starts_with(b"<!--") {
            skip_past(b, at + 4, b"-->")
        } else if rest.starts_with(b"<![CDATA[") {
            skip_past(b, at + 9, b"]]>")
        } else if rest.starts_with(b"<?") {
            skip_past(b, at + 2, b"?>")
        } else if rest.starts_with(b"<!") {
            return Ok(());
        } else if rest.starts_with(b"</") {
            in_scope -= open.pop().unwrap_or(0) as usize;
            at + 2
        } else {
            let tag = start_tag(b, at + 1);
            if tag.attributes > MAX_ATTRIBUTES {
                return Err(Refusal {
                    at,
                    message: format!(
                        "an element with {} attributes (namespace declarations included); \
                         the limit is {MAX_ATTRIBUTES}",
                        tag.attributes
                    ),
                });
            }
            in_scope += tag.declarations;
            if in_scope > MAX_NAMESPACES {
                return Err(Refusal {
                    at,
                    message: format!(
                        "{in_scope} namespace declarations in scope; the limit is {MAX_NAMESPACES}"
                    ),
                });
            }
            if tag.empty {
                in_scope -= tag.declarations;
            } else {
                open.push(tag.declarations as u32);
            }
            tag.end
        };
    }
    Ok(())
}

/// The index just past the first `end` at or after `from`, or the text's end.
fn skip_past(b: &[u8], from: usize, end: &[u8]) -> usize {
    let mut i = from;
    while let Some(off) = memchr(end[0], &b[i.min(b.len())..]) {
        let at = i + off;
        if b[at..].starts_with(end) {
            return at + end.len();
        }
        i = at + 1;
    }
    b.len()
}

struct StartTag {
    attributes: usize,
    declarations: usize,
    empty: bool,
    /// Just past the tag's `>`, or the text's end.
    end: usize,
}

/// Reads the start tag whose name begins at `from`: each `=` outside quotes is an attribute, and
/// one whose name is `xmlns` or starts `xmlns:` a declaration.
fn start_tag(b: &[u8], from: usize) -> StartTag {
    let mut tag = StartTag {
        attributes: 0,
        declarations: 0,
        empty: false,
        end: b.len(),
    };
    let mut name_start = from;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            q @ (b'"' | b'\'') => {
                i = memchr(q, &b[i + 1..]).map_or(b.len(), |off| i + 1 + off + 1);
                name_start = i;
                continue;
            }
            b'=' => {
                tag.attributes += 1;
                let name = b[name_start..i].trim_ascii();
                if name == b"xmlns" || name.starts_with(b"xmlns:") {
                    tag.declarations += 1;
                }
            }
            b'>' => {
                tag.empty = i > from && b[i - 1] == b'/';
                tag.end = i + 1;
                return tag;
            }
            c if c.is_ascii_whitespace() => name_start = i + 1,
            _ => {}
        }
        i += 1;
    }
    tag
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&c| c == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(n: usize) -> String {
        (0..n).map(|k| format!(" a{k}=\"1\"")).collect()
    }

    #[test]
    fn ordinary_configurations_pass() {
        let text = r#"<?xml version="1.0"?>
<!-- a comment with <tags a="1"> -->
<definitions xmlns="http://ws.apache.org/ns/synapse" xmlns:s="urn:s">
  <proxy name="P" transports="http https" startOnLoad="true">
    <target><inSequence><log level="full"/><payloadFactory media-type="xml">
      <format><m:a xmlns:m="urn:m" x='>' y="<">text &amp; <![CDATA[<not a="tag">]]></m:a></format>
    </payloadFactory></inSequence></target>
  </proxy>
  <?pi <x a="1"?>
</definitions>"#;
        assert_eq!(check(text), Ok(()));
    }

    #[test]
    fn attributes_past_the_limit_are_refused_where_they_are() {
        let ok = format!("<a><b{}/></a>", attrs(MAX_ATTRIBUTES));
        assert_eq!(check(&ok), Ok(()));
        let bad = format!("<a>\n<b{}/></a>", attrs(MAX_ATTRIBUTES + 1));
        let r = check(&bad).unwrap_err();
        assert_eq!(r.at, 4);
        assert!(r.message.contains("129 attributes"), "{}", r.message);
    }

    #[test]
    fn declarations_count_while_in_scope() {
        let decl = |from: usize, n: usize| -> String {
            (from..from + n)
                .map(|k| format!(" xmlns:p{k}=\"urn:{k}\""))
                .collect()
        };
        // Siblings each within the limit: their declarations leave scope with them.
        let siblings = format!("<r><a{}/><b{}></b></r>", decl(0, 100), decl(0, 100));
        assert_eq!(check(&siblings), Ok(()));
        // Nested: 100 + 29 in scope at once.
        let nested = format!("<r{}><b{}/></r>", decl(0, 100), decl(100, 29));
        let r = check(&nested).unwrap_err();
        assert!(r.message.starts_with("129 namespace"), "{}", r.message);
        // Past the end of the element that made them, they are gone.
        let after = format!("<r><a{}></a><b{}/></r>", decl(0, 100), decl(100, 100));
        assert_eq!(check(&after), Ok(()));
    }

    #[test]
    fn quoted_equals_signs_and_markup_are_not_attributes() {
        let value = "=".repeat(500);
        let text = format!(
            "<a b=\"{value}\" c='{value}'><!--{}--><![CDATA[{}]]></a>",
            attrs(500),
            attrs(500)
        );
        assert_eq!(check(&text), Ok(()));
    }

    #[test]
    fn linear_on_unclosed_markup() {
        // Nothing closes: each skip ends at the text's end, once.
        for start in ["<!--", "<![CDATA[", "<?", "<a b=\"", "<a"] {
            let text = format!("{start}{}", "-]?x".repeat(100_000));
            assert_eq!(check(&text), Ok(()), "{start}");
        }
    }
}
