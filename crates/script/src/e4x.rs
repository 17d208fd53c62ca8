//! E4X, the XML syntax Synapse's Rhino engine gives JavaScript, rewritten at load into plain
//! JavaScript over the small XML objects of `e4x.js`.
//!
//! | E4X | Rewritten to |
//! |---|---|
//! | an XML literal `<a x="1">{expr}</a>` where an expression may start | `__e4x.xml("<a x=\"1\">" + __e4x.t(expr) + "</a>")` |
//! | `{expr}` as an attribute's value | `"\"" + __e4x.a(expr) + "\""` |
//! | `x..*::name`, `x..name`, `x..*` | `x.__desc("name")`, `x.__desc("*")` |
//! | `x.*::name` | `x.__child("name")` |
//! | `x.@name` | `x.__attr("name")` |
//!
//! Strings, template literals, comments and regular expressions are copied as they are. Not
//! supported (left as they are, so the parse fails and the script is refused): `x.name` child
//! access, filters `x.(expr)`, `for each`, `default xml namespace`, XML lists `<>...</>`.

/// The source rewritten, and whether it used E4X at all.
pub(crate) fn rewrite(src: &str) -> Result<(String, bool), String> {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len() + 64);
    let mut used = false;
    let mut i = 0;
    // The last significant byte copied (for where an expression may start).
    let mut last: u8 = b';';
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' | b'\'' | b'`' => {
                let end = string_end(b, i)?;
                out.push_str(&src[i..end]);
                i = end;
                last = c;
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = src[i..].find('\n').map_or(b.len(), |k| i + k);
                out.push_str(&src[i..end]);
                i = end;
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = src[i + 2..].find("*/").map_or(b.len(), |k| i + 2 + k + 2);
                out.push_str(&src[i..end]);
                i = end;
                continue;
            }
            b'/' if expression_starts(last, &out) => {
                let end = regex_end(b, i)?;
                out.push_str(&src[i..end]);
                i = end;
                last = b'/';
                continue;
            }
            b'<' if expression_starts(last, &out)
                && b.get(i + 1)
                    .is_some_and(|n| n.is_ascii_alphabetic() || *n == b'_') =>
            {
                let (js, end) = literal(src, i)?;
                out.push_str(&js);
                i = end;
                used = true;
                last = b')';
                continue;
            }
            b'.' => {
                if let Some((js, end)) = navigation(src, i) {
                    out.push_str(&js);
                    i = end;
                    used = true;
                    last = b')';
                    continue;
                }
            }
            _ => {}
        }
        let ch = src[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        if !ch.is_whitespace() {
            last = if ch.is_ascii() { ch as u8 } else { b'a' };
        }
        i += ch.len_utf8();
    }
    Ok((out, used))
}

/// Whether an expression may start after `last` (the last significant byte), `out` the text so far
/// (for `return`, `typeof` and the like).
fn expression_starts(last: u8, out: &str) -> bool {
    if matches!(
        last,
        b'(' | b','
            | b'='
            | b':'
            | b'['
            | b'!'
            | b'&'
            | b'|'
            | b'?'
            | b'{'
            | b'}'
            | b';'
            | b'+'
            | b'-'
            | b'*'
            | b'%'
            | b'<'
            | b'>'
            | b'~'
            | b'^'
    ) {
        return true;
    }
    let t = out.trim_end();
    [
        "return", "typeof", "case", "in", "of", "new", "delete", "void", "throw", "yield",
    ]
    .iter()
    .any(|k| {
        t.ends_with(k)
            && !t[..t.len() - k.len()]
                .chars()
                .next_back()
                .is_some_and(|p| p.is_alphanumeric() || p == '_' || p == '$' || p == '.')
    })
}

/// The index just after the string starting at `i` (its quote included).
fn string_end(b: &[u8], i: usize) -> Result<usize, String> {
    let q = b[i];
    let mut k = i + 1;
    while k < b.len() {
        match b[k] {
            b'\\' => k += 2,
            c if c == q => return Ok(k + 1),
            b'\n' if q != b'`' => return Err("a string is not closed on its line".into()),
            _ => k += 1,
        }
    }
    Err("a string is not closed".into())
}

/// The index just after the regular expression literal at `i`, its flags included.
fn regex_end(b: &[u8], i: usize) -> Result<usize, String> {
    let mut k = i + 1;
    let mut class = false;
    while k < b.len() {
        match b[k] {
            b'\\' => k += 1,
            b'[' => class = true,
            b']' => class = false,
            b'/' if !class => {
                k += 1;
                while k < b.len() && b[k].is_ascii_alphabetic() {
                    k += 1;
                }
                return Ok(k);
            }
            b'\n' => return Err("a regular expression is not closed on its line".into()),
            _ => {}
        }
        k += 1;
    }
    Err("a regular expression is not closed".into())
}

/// `..*::name`, `..name`, `..*`, `.*::name` or `.@name` at `i` (a `.`): the JavaScript for it and
/// the index after it.
fn navigation(src: &str, i: usize) -> Option<(String, usize)> {
    let rest = &src[i..];
    let name_at = |s: &str| -> usize {
        s.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(s.len())
    };
    // (method, any namespace, where the name starts)
    let (method, any, from) = if let Some(r) = rest.strip_prefix("..*::") {
        ("__desc", ", true", rest.len() - r.len())
    } else if let Some(r) = rest.strip_prefix(".*::") {
        ("__child", ", true", rest.len() - r.len())
    } else if let Some(r) = rest.strip_prefix(".@") {
        ("__attr", "", rest.len() - r.len())
    } else if rest.starts_with("..*") {
        return Some((".__desc(\"*\", true)".into(), i + 3));
    } else if let Some(r) = rest.strip_prefix("..") {
        if !r.starts_with(|c: char| c.is_alphabetic() || c == '_') {
            return None;
        }
        ("__desc", ", false", 2)
    } else {
        return None;
    };
    let n = name_at(&rest[from..]);
    if n == 0 {
        return None;
    }
    let name = &rest[from..from + n];
    Some((format!(".{method}(\"{name}\"{any})"), i + from + n))
}

/// The XML literal at `i` (a `<`): the JavaScript that makes it, and the index after it.
fn literal(src: &str, i: usize) -> Result<(String, usize), String> {
    let b = src.as_bytes();
    let mut parts: Vec<String> = Vec::new();
    let mut text = String::new();
    let mut depth = 0usize;
    let mut k = i;
    let flush = |text: &mut String, parts: &mut Vec<String>| {
        if !text.is_empty() {
            parts.push(js_string(text));
            text.clear();
        }
    };
    loop {
        if k >= b.len() {
            return Err("an XML literal is not closed".into());
        }
        if b[k] == b'<' {
            // A tag: copied up to its `>`, attribute values in braces made expressions.
            let closing = b.get(k + 1) == Some(&b'/');
            let mut q = k;
            loop {
                let Some(&c) = b.get(q) else {
                    return Err("a tag in an XML literal is not closed".into());
                };
                match c {
                    b'"' | b'\'' => {
                        let end = src[q + 1..]
                            .find(c as char)
                            .map(|e| q + 1 + e + 1)
                            .ok_or("an attribute value in an XML literal is not closed")?;
                        text.push_str(&src[q..end]);
                        q = end;
                    }
                    b'{' => {
                        let end = brace_end(b, q)?;
                        flush(&mut text, &mut parts);
                        parts.push(format!(
                            "\"\\\"\" + __e4x.a({}) + \"\\\"\"",
                            &src[q + 1..end - 1]
                        ));
                        q = end;
                    }
                    b'>' => {
                        text.push('>');
                        q += 1;
                        break;
                    }
                    _ => {
                        let ch = src[q..].chars().next().unwrap_or(' ');
                        text.push(ch);
                        q += ch.len_utf8();
                    }
                }
            }
            let empty = b[q - 2] == b'/';
            if closing {
                depth -= 1;
            } else if !empty {
                depth += 1;
            }
            k = q;
            if depth == 0 {
                break;
            }
        } else if b[k] == b'{' {
            let end = brace_end(b, k)?;
            flush(&mut text, &mut parts);
            parts.push(format!("__e4x.t({})", &src[k + 1..end - 1]));
            k = end;
        } else {
            let ch = src[k..].chars().next().unwrap_or(' ');
            text.push(ch);
            k += ch.len_utf8();
        }
    }
    flush(&mut text, &mut parts);
    Ok((format!("__e4x.xml({})", parts.join(" + ")), k))
}

/// The index just after the `}` closing the brace at `i` (strings in it skipped).
fn brace_end(b: &[u8], i: usize) -> Result<usize, String> {
    let mut depth = 0;
    let mut k = i;
    while k < b.len() {
        match b[k] {
            b'"' | b'\'' | b'`' => {
                k = string_end(b, k)?;
                continue;
            }
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Ok(k + 1);
                }
            }
            _ => {}
        }
        k += 1;
    }
    Err("a {...} in an XML literal is not closed".into())
}

/// `s` as a JavaScript string literal.
fn js_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    #[test]
    fn literals_and_navigation_become_plain_javascript() {
        let (js, used) = rewrite(
            "var s = mc.getPayloadXML()..*::Code.toString();\nmc.setPayloadXML(<m:q xmlns:m=\"urn:m\" a={s}>\n  <m:s>{s}</m:s><e/></m:q>);",
        )
        .unwrap();
        assert!(used);
        assert_eq!(
            js,
            "var s = mc.getPayloadXML().__desc(\"Code\", true).toString();\nmc.setPayloadXML(__e4x.xml(\"<m:q xmlns:m=\\\"urn:m\\\" a=\" + \"\\\"\" + __e4x.a(s) + \"\\\"\" + \">\\n  <m:s>\" + __e4x.t(s) + \"</m:s><e/></m:q>\"));"
        );
        let (js, _) = rewrite("x.*::a + x.@id + x..b + x..*").unwrap();
        assert_eq!(
            js,
            "x.__child(\"a\", true) + x.__attr(\"id\") + x.__desc(\"b\", false) + x.__desc(\"*\", true)"
        );
    }

    #[test]
    fn strings_comments_regexes_and_comparisons_stay_as_they_are() {
        for src in [
            "var a = '<b>' + \"..*::c\"; // <d>{e}</d>\n/* x..y */ var r = /<f>/g; if (a < b) {}",
            "var n = 1 < 2 ? 3 : 4; for (var i = 0; i<n; i++) {}",
            "var t = `<a>${x}</a>`; var q = 10 / 2 / 1;",
        ] {
            let (js, used) = rewrite(src).unwrap();
            assert!(!used, "{src}");
            assert_eq!(js, src);
        }
    }

    /// Mutated E4X scripts (bytes changed, cut and repeated at pseudo-random places) are rewritten
    /// or refused, never a panic: the rewrite indexes the source by bytes.
    #[test]
    fn mutated_sources_never_panic() {
        let seed = "var s = mc.getPayloadXML()..*::Code.toString(); // c\n\
                    mc.setPayloadXML(<m:q xmlns:m=\"urn:m\" a={s} b='x'><m:s>{s + '}'}</m:s><é/></m:q>);\n\
                    var r = /<a>/g; var t = `<b>${s}</b>`; x.@id; x.*::y; x..z;";
        let pieces = [
            "<", ">", "{", "}", "\"", "'", "`", "/", "..", "::", "@", "é", "\n", "</m:s>",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..3000 {
            let mut s: Vec<char> = seed.chars().collect();
            for _ in 0..1 + next(4) {
                let at = next(s.len());
                match next(3) {
                    0 => {
                        s.remove(at);
                    }
                    1 => s
                        .splice(at..at, pieces[next(pieces.len())].chars())
                        .for_each(drop),
                    _ => s.truncate(at),
                }
                if s.is_empty() {
                    break;
                }
            }
            let text: String = s.into_iter().collect();
            let _ = rewrite(&text);
        }
    }
}
