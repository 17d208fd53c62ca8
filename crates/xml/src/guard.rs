//! A linear scan of untrusted bytes before libxml2 parses them, for what libxml2 2.9 does in
//! quadratic time: many attributes on one element (its duplicate check compares every attribute
//! with every earlier one: 60,000 attributes took 4.9 s) and many namespace declarations in scope
//! (every prefixed name is looked up through all of them, innermost first).
//!
//! The scan must never count fewer attributes on an element, or fewer declarations in scope, than
//! libxml2 will meet, whatever the bytes: libxml2 goes on reading after a well-formedness error
//! (only the tree building stops), so a malformed document costs it the same work. Counting more
//! is allowed where only an absurd document is affected; each such place says so.
//!
//! * Attributes are counted between a `<` and the next `<`: libxml2 gives up a start tag at a `<`
//!   inside it (even inside a quoted value), so every attribute it keeps lies in that stretch,
//!   before the first `>` outside quotes, and has a quoted value of its own. Each quoted value
//!   there counts as an attribute, so no odd quote can hide one.
//! * Declarations in scope need the nesting, so comments, CDATA sections and processing
//!   instructions are stepped over as libxml2 steps over them. libxml2 ends one of those early at
//!   a character XML does not allow (and goes on reading from there as content), so any of them
//!   holding a byte that could be one (a control character, U+FFFE or U+FFFF, bytes that are not
//!   UTF-8), or too long for libxml2 (it gives up at 10,000,000 bytes), makes the rest of the
//!   scan step over nothing and stop trusting end tags: from there, declarations are never taken
//!   out of scope, and text inside comments and CDATA sections that looks like a tag with more
//!   than the limit of quoted values before any `>` is refused. A document with a DOCTYPE is read
//!   that way from the start, and its attribute-list declarations may give every element default
//!   attributes and declarations (libxml2 adds them even without validation): each element is
//!   charged with every default value the DTD holds.
//! * The encoding is found as libxml2 2.9 finds it (the first bytes, then the XML declaration).
//!   UTF-8 (and what libxml2 reads as UTF-8) is scanned as it is; UTF-16 by its 16-bit units; a
//!   declared encoding libxml2 switches to is converted with libxml2's own converter and the result
//!   scanned (as well as the bytes themselves). UCS-4 and EBCDIC documents, and a UTF-16 document
//!   declaring another encoding (libxml2 would switch part-way through a buffer), are refused.
//!
//! Not covered: with `allow_entity_declarations`, parameter entities can bring attribute-list
//! declarations and general entities markup that the bytes do not show (that option is for trusted
//! input).

use crate::error::{Capture, XmlError, XmlErrorKind};
use crate::parse::Limits;
use libxml::bindings::{
    xmlBufferAdd, xmlBufferContent, xmlBufferCreate, xmlBufferFree, xmlBufferLength,
    xmlCharEncCloseFunc, xmlCharEncInFunc, xmlFindCharEncodingHandler,
};
use std::ffi::CString;

/// libxml2's nesting limit without `XML_PARSE_HUGE`: it stops reading when a start tag would open
/// deeper than this, so at most this many elements (and the one being read) hold declarations
/// in scope.
const LIBXML2_MAX_DEPTH: usize = 257;
/// A little under libxml2's `XML_MAX_TEXT_LENGTH` (10,000,000): a comment, CDATA section or
/// processing instruction longer than that may be cut short by libxml2.
const LONG_BODY: usize = 9_000_000;

/// What the scan refuses, and where (a byte offset in the scanned text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Excess {
    Attributes { at: usize, count: usize },
    Namespaces { at: usize, count: usize },
}

/// Refuses `bytes` when an element could carry more than `limits.max_attributes` attributes
/// (namespace declarations included), or more than `limits.max_namespaces` namespace declarations
/// could be in scope at once. Linear in the input.
pub(crate) fn check(bytes: &[u8], limits: &Limits) -> Result<(), XmlError> {
    let refuse = |view: &[u8], e: Excess, line_base: u32| {
        let at = match e {
            Excess::Attributes { at, .. } | Excess::Namespaces { at, .. } => at,
        };
        let lines = memchr::memchr_iter(b'\n', &view[..at.min(view.len())]).count();
        let line = u32::try_from(lines)
            .ok()
            .and_then(|l| l.checked_add(line_base));
        match e {
            Excess::Attributes { count, .. } => {
                XmlError::too_many_attributes(count, limits.max_attributes, line)
            }
            Excess::Namespaces { count, .. } => XmlError::new(
                XmlErrorKind::TooManyNamespaces,
                format!(
                    "{count} namespace declarations in scope; the limit is {}",
                    limits.max_namespaces
                ),
            )
            .at(line, None),
        }
    };
    match family(bytes) {
        Family::Bytes { bom } => {
            let view = &bytes[bom..];
            scan(view, limits).map_err(|e| refuse(view, e, 1))?;
            if let Some((name, after)) = declared_encoding(view) {
                if !same_reading(&name, None) {
                    // libxml2 converts what follows the declaration's closing quote.
                    if let Some(text) = convert(&name, &view[after..]) {
                        let base = 1 + memchr::memchr_iter(b'\n', &view[..after]).count();
                        let base = u32::try_from(base).unwrap_or(u32::MAX);
                        scan(&text, limits).map_err(|e| refuse(&text, e, base))?;
                    }
                }
            }
            Ok(())
        }
        Family::Utf16 { le } => {
            let view = utf16_view(bytes, le);
            if let Some((name, _)) = declared_encoding(&view) {
                if !same_reading(&name, Some(le)) {
                    return Err(XmlError::new(
                        XmlErrorKind::Malformed,
                        format!(
                            "a UTF-16 document declaring the encoding '{}' is not accepted",
                            String::from_utf8_lossy(&name)
                        ),
                    ));
                }
            }
            scan(&view, limits).map_err(|e| refuse(&view, e, 1))
        }
        Family::Other => Err(XmlError::new(
            XmlErrorKind::Malformed,
            "UCS-4 and EBCDIC documents are not accepted",
        )),
    }
}

/// How libxml2 2.9 reads the first bytes (`xmlDetectCharEncoding`, only asked with 4 bytes or more).
#[derive(Debug, PartialEq, Eq)]
enum Family {
    /// UTF-8 or another encoding whose ASCII bytes are ASCII (until a declaration says otherwise);
    /// `bom`: the length of a UTF-8 byte order mark.
    Bytes {
        bom: usize,
    },
    Utf16 {
        le: bool,
    },
    Other,
}

fn family(b: &[u8]) -> Family {
    if b.len() < 4 {
        return Family::Bytes { bom: 0 };
    }
    match b {
        [0, 0, 0, 0x3C, ..]
        | [0x3C, 0, 0, 0, ..]
        | [0, 0, 0x3C, 0, ..]
        | [0, 0x3C, 0, 0, ..]
        | [0x4C, 0x6F, 0xA7, 0x94, ..] => Family::Other,
        [0x3C, 0x3F, 0x78, 0x6D, ..] => Family::Bytes { bom: 0 },
        [0x3C, 0, 0x3F, 0, ..] => Family::Utf16 { le: true },
        [0, 0x3C, 0, 0x3F, ..] => Family::Utf16 { le: false },
        [0xEF, 0xBB, 0xBF, ..] => Family::Bytes { bom: 3 },
        [0xFE, 0xFF, ..] => Family::Utf16 { le: false },
        [0xFF, 0xFE, ..] => Family::Utf16 { le: true },
        _ => Family::Bytes { bom: 0 },
    }
}

/// UTF-16 text as bytes the scan reads the same way: an ASCII unit as its byte, any other unit
/// (surrogates included) as 0x80, which the scan never takes for markup; a byte order mark dropped.
fn utf16_view(b: &[u8], le: bool) -> Vec<u8> {
    let mut v: Vec<u8> = b
        .chunks_exact(2)
        .map(|u| {
            let unit = if le {
                u16::from_le_bytes([u[0], u[1]])
            } else {
                u16::from_be_bytes([u[0], u[1]])
            };
            u8::try_from(unit)
                .ok()
                .filter(|c| c.is_ascii())
                .unwrap_or(0x80)
        })
        .collect();
    if b.len() >= 2 && matches!((le, b[0], b[1]), (true, 0xFF, 0xFE) | (false, 0xFE, 0xFF)) {
        v.remove(0);
    }
    v
}

/// Whether a declared encoding leaves libxml2 reading as it already does: UTF-8 and UTF-16 are
/// taken as said (a UTF-16 label on bytes is an error, not a switch); on UTF-16 text (`le` given),
/// its own byte order names libxml2's handler already in use.
fn same_reading(name: &[u8], utf16_le: Option<bool>) -> bool {
    let is = |s: &str| name.eq_ignore_ascii_case(s.as_bytes());
    is("UTF-8")
        || is("UTF8")
        || is("UTF-16")
        || is("UTF16")
        || (utf16_le == Some(true) && is("UTF-16LE"))
        || (utf16_le == Some(false) && is("UTF-16BE"))
}

fn is_blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// The encoding named by the XML declaration, read exactly as libxml2 2.9.14 reads it
/// (`xmlParseXMLDecl`, `xmlParseVersionInfo`, `xmlParseEncodingDecl`), with the index just after
/// its closing quote (where libxml2 switches). `None` when libxml2 finds no encoding name.
fn declared_encoding(v: &[u8]) -> Option<(Vec<u8>, usize)> {
    if !(v.starts_with(b"<?xml") && v.get(5).is_some_and(|&c| is_blank(c))) {
        return None;
    }
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    let blanks = |mut i: usize| {
        while is_blank(at(i)) {
            i += 1;
        }
        i
    };
    let mut i = blanks(5);
    // VersionInfo: on any error libxml2 stops where it is and goes on from there.
    if v[i..].starts_with(b"version") {
        i = blanks(i + 7);
        if at(i) == b'=' {
            i = blanks(i + 1);
            let q = at(i);
            if q == b'"' || q == b'\'' {
                i += 1;
                // VersionNum: a digit, '.', digits (nothing consumed when the first fails; the
                // digit alone when '.' is missing).
                if at(i).is_ascii_digit() {
                    i += 1;
                    if at(i) == b'.' {
                        i += 1;
                        while at(i).is_ascii_digit() {
                            i += 1;
                        }
                    }
                }
                if at(i) == q {
                    i += 1;
                }
            }
        }
    }
    if !is_blank(at(i)) && at(i) == b'?' && at(i + 1) == b'>' {
        return None;
    }
    i = blanks(i);
    if !v[i..].starts_with(b"encoding") {
        return None;
    }
    i = blanks(i + 8);
    if at(i) != b'=' {
        return None;
    }
    i = blanks(i + 1);
    let q = at(i);
    if q != b'"' && q != b'\'' {
        return None;
    }
    let from = i + 1;
    // EncName: [A-Za-z] ([A-Za-z0-9._] | '-')*
    if !at(from).is_ascii_alphabetic() {
        return None;
    }
    let mut end = from + 1;
    while matches!(at(end), b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'_' | b'-') {
        end += 1;
    }
    (at(end) == q).then(|| (v[from..end].to_vec(), end + 1))
}

/// `raw` converted to UTF-8 by the converter libxml2 finds for `name`, as far as it converts;
/// `None` when libxml2 has none (it then stops reading: "Unsupported encoding").
fn convert(name: &[u8], raw: &[u8]) -> Option<Vec<u8>> {
    let name = CString::new(name).ok()?;
    let len = std::ffi::c_int::try_from(raw.len()).ok()?;
    // The converter reports bad input through libxml2's error handlers: kept off stderr.
    let capture = Capture::start();
    // SAFETY: `name` is a NUL-terminated string for the call; the handler returned is either one
    // of libxml2's static handlers or a new one we own, and `xmlCharEncCloseFunc` (called once,
    // below) frees only the latter. The buffers are created here, checked for NULL, used only
    // through libxml2's buffer functions and freed once; `raw` is copied into `input` by
    // `xmlBufferAdd` with its exact length. The output content pointer is read while `output` is
    // alive, for the length libxml2 reports.
    let out = unsafe {
        let handler = xmlFindCharEncodingHandler(name.as_ptr());
        if handler.is_null() {
            return None;
        }
        let input = xmlBufferCreate();
        let output = xmlBufferCreate();
        let mut text = Vec::new();
        if !input.is_null() && !output.is_null() && xmlBufferAdd(input, raw.as_ptr(), len) == 0 {
            loop {
                let left = xmlBufferLength(input);
                let rc = xmlCharEncInFunc(handler, output, input);
                let now = xmlBufferLength(input);
                // -2: bad input, where libxml2 stops too; no progress: nothing more to convert.
                if now == 0 || rc == -2 || now >= left {
                    break;
                }
            }
            let n = usize::try_from(xmlBufferLength(output)).unwrap_or(0);
            let p = xmlBufferContent(output);
            if !p.is_null() && n > 0 {
                text.extend_from_slice(std::slice::from_raw_parts(p, n));
            }
        }
        if !input.is_null() {
            xmlBufferFree(input);
        }
        if !output.is_null() {
            xmlBufferFree(output);
        }
        xmlCharEncCloseFunc(handler);
        text
    };
    drop(capture.finish());
    Some(out)
}

/// The scan proper over `v` (UTF-8, or text whose ASCII bytes are its ASCII characters).
pub(crate) fn scan(v: &[u8], limits: &Limits) -> Result<(), Excess> {
    if plainly_within(v, limits) {
        return Ok(());
    }
    scan_all(v, limits)
}

/// [`scan`] without its shortcut.
fn scan_all(v: &[u8], limits: &Limits) -> Result<(), Excess> {
    let max_attrs = limits.max_attributes;
    let max_ns = limits.max_namespaces;
    let dtd = memchr::memmem::find(v, b"<!DOCTYPE").is_some();
    let (d_attrs, d_ns) = if dtd { defaults(v) } else { (0, 0) };
    // Whether end tags are trusted (see the module doc).
    let mut nested = !dtd;
    // Declarations of the open elements, as counted at their start tags, while `nested`.
    let mut stack: Vec<usize> = Vec::new();
    let mut in_scope = 0usize;
    // Start tags read since end tags stopped being trusted.
    let mut untrusted_tags = 0usize;
    let mut i = 0;
    // libxml2 reads `<?xml` and a blank at the start as the XML declaration, which ends at its
    // first `>` (the right place when it is well-formed, where libxml2 goes on after an error).
    if v.starts_with(b"<?xml") && v.get(5).is_some_and(|&c| is_blank(c)) {
        match memchr::memchr(b'>', v) {
            Some(gt) => i = gt + 1,
            None => return Ok(()),
        }
    }
    while let Some(lt) = next_lt(v, i) {
        match v.get(lt + 1) {
            None => break,
            Some(b'/') => {
                if nested {
                    in_scope -= stack.pop().unwrap_or(0);
                }
                i = lt + 2;
            }
            Some(b'!' | b'?') if !nested => i = lt + 2,
            Some(b'!' | b'?') => match step_over(v, lt) {
                Step::To(end) => i = end,
                Step::Past => i = lt + 2,
                Step::Unsure => {
                    nested = false;
                    i = lt + 2;
                }
                Step::ToEnd => break,
            },
            Some(_) => {
                let t = tag(v, lt, max_attrs.saturating_sub(d_attrs));
                let attrs = t.values + d_attrs;
                if attrs > max_attrs {
                    return Err(Excess::Attributes {
                        at: lt,
                        count: attrs,
                    });
                }
                let count = if nested {
                    let count = in_scope + t.decls;
                    if t.open {
                        stack.push(t.decls);
                        in_scope = count;
                    }
                    count
                } else {
                    untrusted_tags += 1;
                    in_scope += t.decls;
                    in_scope + d_ns * untrusted_tags.min(LIBXML2_MAX_DEPTH)
                };
                if count > max_ns {
                    return Err(Excess::Namespaces { at: lt, count });
                }
                i = t.end;
            }
        }
    }
    Ok(())
}

/// Whether the input certainly keeps within the limits, by two passes that are cheap on any input
/// (the usual message ends here): every attribute needs a `=` between its element's `<` and the
/// next `<`, and every namespace declaration an `xmlns` of its own; defaults from an attribute-list
/// declaration need neither.
fn plainly_within(v: &[u8], limits: &Limits) -> bool {
    memchr::memmem::find(v, b"<!ATTLIST").is_none()
        && memchr::memmem::find_iter(v, b"xmlns")
            .nth(limits.max_namespaces)
            .is_none()
        && (memchr::memchr_iter(b'=', v)
            .nth(limits.max_attributes)
            .is_none()
            || equals_between_tags(v) <= limits.max_attributes)
}

/// A bound on the number of `=` between a `<` and the next: counted by blocks, a stretch is charged
/// with every block it touches.
fn equals_between_tags(v: &[u8]) -> usize {
    const BLOCK: usize = 64;
    let (mut best, mut run) = (0, 0);
    let blocks = v.chunks_exact(BLOCK);
    let tail = blocks.remainder();
    for block in blocks.map(Some).chain([None]) {
        let block = block.unwrap_or(tail);
        // Byte-wide sums without branches (at most 64 each), so that the loop vectorises.
        let (mut lts, mut eqs) = (0u8, 0u8);
        for &c in block {
            lts += u8::from(c == b'<');
            eqs += u8::from(c == b'=');
        }
        let eqs = usize::from(eqs);
        if lts == 0 {
            run += eqs;
        } else {
            best = best.max(run + eqs);
            run = eqs;
        }
    }
    best.max(run)
}

/// A start tag (or what might be one) from the `<` at `lt`, read up to the first `>` outside
/// quotes or the next `<`, whichever comes first.
struct Tag {
    /// Quoted values before the end.
    values: usize,
    /// Those whose name part mentions `xmlns`.
    decls: usize,
    /// It ends with `>` (not `/>`, not at a `<`): the element stays open.
    open: bool,
    /// Where the scan goes on: after the `>`, or at the `<` (or the end of the input).
    end: usize,
}

/// Reading stops once there are more than `cap` values: the element is refused anyway.
fn tag(v: &[u8], lt: usize, cap: usize) -> Tag {
    let (mut values, mut decls) = (0, 0);
    // Where the name part before the next quoted value starts.
    let mut seg = lt + 1;
    let mut j = lt + 1;
    // Byte by byte: tags are short, shorter than a memchr call is worth.
    while let Some(&c) = v.get(j) {
        match c {
            b'>' => {
                return Tag {
                    values,
                    decls,
                    open: v[j - 1] != b'/' || j - 1 == lt,
                    end: j + 1,
                }
            }
            b'<' => break,
            b'"' | b'\'' => {
                values += 1;
                if values > cap {
                    break;
                }
                if mentions_xmlns(&v[seg..j]) {
                    decls += 1;
                }
                match memchr::memchr2(c, b'<', &v[j + 1..]) {
                    Some(k) if v[j + 1 + k] == c => {
                        j += 1 + k + 1;
                        seg = j;
                    }
                    Some(k) => {
                        j += 1 + k;
                        break;
                    }
                    None => {
                        j = v.len();
                        break;
                    }
                }
            }
            _ => j += 1,
        }
    }
    Tag {
        values,
        decls,
        open: false,
        end: j,
    }
}

/// The first `<` at or after `i`: the usual gap (a short text, the rest of an end tag) byte by
/// byte, a longer one by memchr.
#[inline]
fn next_lt(v: &[u8], i: usize) -> Option<usize> {
    let near = v.len().min(i + 16);
    match v.get(i..near)?.iter().position(|&c| c == b'<') {
        Some(k) => Some(i + k),
        None => memchr::memchr(b'<', &v[near..]).map(|k| near + k),
    }
}

fn mentions_xmlns(s: &[u8]) -> bool {
    s.windows(5).any(|w| w == b"xmlns")
}

/// What follows a `<!` or `<?` in a document read with trusted end tags.
enum Step {
    /// A comment, CDATA section or processing instruction libxml2 reads whole up to here.
    To(usize),
    /// libxml2 reads the `<` as text (or stops reading): go on after the next byte.
    Past,
    /// libxml2 may end it early and read the rest as content.
    Unsure,
    /// It runs to the end of the input.
    ToEnd,
}

fn step_over(v: &[u8], lt: usize) -> Step {
    let rest = &v[lt + 1..];
    let (from, end) = if rest.starts_with(b"!--") {
        (lt + 4, &b"-->"[..])
    } else if rest.starts_with(b"![CDATA[") {
        (lt + 9, &b"]]>"[..])
    } else if rest.starts_with(b"?") {
        // libxml2 reads the `<?` and then, without a target name, content.
        match v.get(lt + 2) {
            Some(c) if c.is_ascii_alphabetic() || *c == b'_' || *c == b':' => {}
            Some(c) if *c >= 0x80 => return Step::Unsure,
            _ => return Step::Past,
        }
        (lt + 2, &b"?>"[..])
    } else {
        return Step::Past;
    };
    let found = memchr::memmem::find(&v[from..], end);
    let body = &v[from..found.map_or(v.len(), |k| from + k)];
    if doubtful(body) {
        return Step::Unsure;
    }
    match found {
        Some(k) => Step::To(from + k + end.len()),
        None => Step::ToEnd,
    }
}

/// Whether libxml2 might end a comment, CDATA section or processing instruction with this body
/// before its terminator: a byte that is or may be part of a character XML does not allow.
fn doubtful(body: &[u8]) -> bool {
    if body.len() > LONG_BODY {
        return true;
    }
    match crate::chars::control_scan(body) {
        Some(high) => {
            high && match std::str::from_utf8(body) {
                Ok(s) => s.contains(['\u{FFFE}', '\u{FFFF}']),
                Err(_) => true,
            }
        }
        None => true,
    }
}

/// Upper bounds on the default attributes, and on the default namespace declarations among them,
/// that the document's attribute-list declarations can give one element: every quoted value in
/// each stretch from a `<!ATTLIST` to the next `<` (a default value cannot hold a `<`), and every
/// `xmlns` there.
fn defaults(v: &[u8]) -> (usize, usize) {
    let (mut attrs, mut ns) = (0, 0);
    for at in memchr::memmem::find_iter(v, b"<!ATTLIST") {
        let end = memchr::memchr(b'<', &v[at + 1..]).map_or(v.len(), |k| at + 1 + k);
        let region = &v[at..end];
        ns += memchr::memmem::find_iter(region, b"xmlns").count();
        let mut j = 0;
        while let Some(k) = memchr::memchr2(b'"', b'\'', &region[j..]) {
            attrs += 1;
            let q = j + k;
            match memchr::memchr(region[q], &region[q + 1..]) {
                Some(k) => j = q + 1 + k + 1,
                None => break,
            }
        }
    }
    (attrs, ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_untrusted, Document, Node};

    fn unlimited() -> Limits {
        Limits {
            max_attributes: usize::MAX,
            max_namespaces: usize::MAX,
            ..Limits::default()
        }
    }

    fn kind(doc: &[u8]) -> Option<XmlErrorKind> {
        check(doc, &Limits::default()).err().map(|e| e.kind())
    }

    fn attrs(n: usize, prefix: &str) -> String {
        (0..n).map(|k| format!(" {prefix}{k}=\"1\"")).collect()
    }

    fn decls(n: usize, tag: &str) -> String {
        (0..n)
            .map(|k| format!(" xmlns:{tag}{k}=\"u{k}\""))
            .collect()
    }

    /// The largest count of attributes and namespace declarations on one element, and of
    /// declarations in scope, in the tree libxml2 built: what the scan must never count below.
    fn truth(doc: &Document) -> (usize, usize) {
        fn ns_defs(n: &Node<'_>) -> usize {
            // SAFETY: `n` is a live element of a document borrowed for the call; `nsDef` is NULL
            // or the head of the element's own list of xmlNs, each linked by `next`.
            unsafe {
                let mut p = (*n.as_ptr()).nsDef;
                let mut k = 0;
                while !p.is_null() {
                    k += 1;
                    p = (*p).next;
                }
                k
            }
        }
        fn walk(n: Node<'_>, scope: usize, best: &mut (usize, usize)) {
            let own = ns_defs(&n);
            let here = scope + own;
            best.0 = best.0.max(n.attributes().count() + own);
            best.1 = best.1.max(here);
            for c in n.child_elements() {
                walk(c, here, best);
            }
        }
        let mut best = (0, 0);
        if let Some(root) = doc.root_element() {
            walk(root, 0, &mut best);
        }
        best
    }

    /// The scan refuses at one below what libxml2 built, for attributes and for declarations in
    /// scope: it never counts fewer.
    fn never_below(doc: &[u8]) -> bool {
        let Ok(tree) = parse_untrusted(doc, &unlimited()) else {
            return false;
        };
        let (a, n) = truth(&tree);
        type Case = (
            usize,
            Limits,
            XmlErrorKind,
            &'static str,
            fn(&Excess) -> bool,
        );
        let cases: [Case; 2] = [
            (
                a,
                Limits {
                    max_attributes: a.saturating_sub(1),
                    ..unlimited()
                },
                XmlErrorKind::TooManyAttributes,
                "attributes",
                |e| matches!(e, Excess::Attributes { .. }),
            ),
            (
                n,
                Limits {
                    max_namespaces: n.saturating_sub(1),
                    ..unlimited()
                },
                XmlErrorKind::TooManyNamespaces,
                "in scope",
                |e| matches!(e, Excess::Namespaces { .. }),
            ),
        ];
        for (count, l, kind, what, is_excess) in cases {
            if count > 0 {
                refused(doc, &l, kind, &format!("{count} {what}"), is_excess);
            }
        }
        true
    }

    /// `doc` refused under `l` as `kind`, and, for bytes without a BOM, by the scan without its
    /// shortcut with an excess `is_excess` takes (`what` says what `doc` has too many of).
    fn refused(
        doc: &[u8],
        l: &Limits,
        kind: XmlErrorKind,
        what: &str,
        is_excess: fn(&Excess) -> bool,
    ) {
        let got = check(doc, l).err().map(|e| e.kind());
        assert_eq!(got, Some(kind), "{what}: {}", String::from_utf8_lossy(doc));
        if family(doc) == (Family::Bytes { bom: 0 }) {
            let full = scan_all(doc, l);
            assert!(
                matches!(&full, Err(e) if is_excess(e)),
                "{what}, without the shortcut: {}",
                String::from_utf8_lossy(doc)
            );
        }
    }

    #[test]
    fn normal_documents_pass() {
        let soap = br#"<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:m="urn:m">
 <soapenv:Header><t:routing xmlns:t="http://someuri">r1</t:routing></soapenv:Header>
 <soapenv:Body><m:order id="1" kind='x'><!-- a 'quote --><![CDATA[<a b="c">]]>IBM</m:order></soapenv:Body>
</soapenv:Envelope>"#;
        assert_eq!(kind(soap), None);
        assert!(never_below(soap));
        // Many `=` in text, attributes and declarations spread over siblings.
        let mut doc = String::from("<r>");
        for k in 0..400 {
            doc.push_str(&format!(
                "<e{}{}>a=b=c</e>",
                decls(5, &format!("p{k}_")),
                attrs(5, "a")
            ));
        }
        doc.push_str("</r>");
        assert_eq!(kind(doc.as_bytes()), None);
        assert!(never_below(doc.as_bytes()));
    }

    #[test]
    fn attributes_over_the_limit_are_refused() {
        for n in [999, 1000] {
            let doc = format!("<r{}/>", attrs(n, "a"));
            assert_eq!(kind(doc.as_bytes()), None, "{n}");
        }
        for n in [1001, 5000] {
            let doc = format!("<r{}/>", attrs(n, "a"));
            let e = check(doc.as_bytes(), &Limits::default()).unwrap_err();
            assert_eq!(e.kind(), XmlErrorKind::TooManyAttributes, "{n}");
            assert_eq!(e.line(), Some(1));
            assert!(e.to_string().contains("the limit is 1000"), "{e}");
        }
        // Declarations count as attributes, as in Woodstox.
        let doc = format!("<r{}{}/>", decls(600, "p"), attrs(401, "a"));
        assert_eq!(kind(doc.as_bytes()), Some(XmlErrorKind::TooManyAttributes));
        // The line of the element.
        let doc = format!("<r>\n\n<e{}/></r>", attrs(1001, "a"));
        let e = check(doc.as_bytes(), &Limits::default()).unwrap_err();
        assert_eq!(e.line(), Some(3));
        // Through parse_untrusted, before libxml2 reads it.
        let doc = format!("<r{}/>", attrs(1_000_000, "a"));
        let e = parse_untrusted(doc.as_bytes(), &Limits::default()).unwrap_err();
        assert_eq!(e.kind(), XmlErrorKind::TooManyAttributes);
    }

    #[test]
    fn attributes_cannot_hide() {
        let many = attrs(1001, "a");
        for doc in [
            // `>` and the other quote inside values.
            format!("<r x='>\"'{many}/>"),
            // A quote in a comment or in text before the tag.
            format!("<!-- ' --><r{many}/>"),
            format!("<r>it's<e{many}/></r>"),
            // A `<` inside a value: libxml2 reads a tag from there.
            format!("<r x='<e{many}/>'/>"),
            format!("<r x=1 '<e{many}/>'/>"),
            // A comment libxml2 cuts short at a character XML does not allow.
            format!("<r><!-- \u{1} <e{many}/> --></r>"),
            format!("<r><!-- \u{FFFE} <![CDATA[ --><e{many}/>]]></r>"),
            // A processing instruction without a target.
            format!("<r><? <e{many}/> ?></r>"),
            // Once a comment may be cut short, text that looks like a tag counts (documented).
            format!("<r><!-- \u{1} --><![CDATA[<e{many}>]]></r>"),
            // Defaults from the DTD, on an element with no attribute written.
            format!("<!DOCTYPE r [<!ATTLIST e{}>]><r><e/></r>", {
                (0..1001)
                    .map(|k| format!(" a{k} CDATA \"1\""))
                    .collect::<String>()
            }),
        ] {
            assert_eq!(
                kind(doc.as_bytes()),
                Some(XmlErrorKind::TooManyAttributes),
                "{}",
                &doc[..doc.len().min(80)]
            );
        }
        // What libxml2 certainly reads as a comment, CDATA section or processing instruction.
        for doc in [
            format!("<r><![CDATA[<e{many}>]]></r>"),
            format!("<r><!--<e{many}>--></r>"),
            format!("<r><?pi <e{many}>?></r>"),
        ] {
            assert_eq!(kind(doc.as_bytes()), None);
        }
    }

    #[test]
    fn namespaces_in_scope_are_bounded() {
        // 3 x 400 nested: 1,200 in scope.
        let nested = format!(
            "<a{}><b{}><c{}/></b></a>",
            decls(400, "p"),
            decls(400, "q"),
            decls(400, "s")
        );
        assert_eq!(
            kind(nested.as_bytes()),
            Some(XmlErrorKind::TooManyNamespaces)
        );
        assert!(never_below(nested.as_bytes()));
        // The same as siblings: at most 800 at once.
        let siblings = format!(
            "<a{}><b{}/><c{}>x</c></a>",
            decls(400, "p"),
            decls(400, "q"),
            decls(400, "s")
        );
        assert_eq!(kind(siblings.as_bytes()), None);
        assert!(never_below(siblings.as_bytes()));
        // End tags inside CDATA sections, comments and processing instructions are not ends.
        for hide in ["<![CDATA[</a></b>]]>", "<!--</a></b>-->", "<?pi </a></b>?>"] {
            let doc = format!(
                "<a{}><b{}>{hide}<c{}/></b></a>",
                decls(400, "p"),
                decls(400, "q"),
                decls(400, "s")
            );
            assert_eq!(
                kind(doc.as_bytes()),
                Some(XmlErrorKind::TooManyNamespaces),
                "{hide}"
            );
        }
        // Once a comment may be cut short, end tags are not trusted: siblings count as nested.
        let doc = format!(
            "<a><!-- \u{1} --><b{}/><c{}/><d{}/></a>",
            decls(400, "p"),
            decls(400, "q"),
            decls(400, "s")
        );
        assert_eq!(kind(doc.as_bytes()), Some(XmlErrorKind::TooManyNamespaces));
        // A default declaration from the DTD is charged to every element, up to libxml2's depth.
        let doc = format!(
            "<!DOCTYPE a [<!ATTLIST e xmlns:z CDATA 'urn:z'>]><a{}>{}</a>",
            decls(800, "p"),
            "<e/>".repeat(300)
        );
        assert_eq!(kind(doc.as_bytes()), Some(XmlErrorKind::TooManyNamespaces));
        // Through parse_untrusted.
        let e = parse_untrusted(nested.as_bytes(), &Limits::default()).unwrap_err();
        assert_eq!(e.kind(), XmlErrorKind::TooManyNamespaces);
    }

    fn utf16(s: &str, le: bool, bom: bool) -> Vec<u8> {
        let mut out = Vec::new();
        if bom {
            out.extend_from_slice(if le { &[0xFF, 0xFE] } else { &[0xFE, 0xFF] });
        }
        for u in s.encode_utf16() {
            out.extend_from_slice(&if le { u.to_le_bytes() } else { u.to_be_bytes() });
        }
        out
    }

    #[test]
    fn encodings_are_read_as_libxml2_reads_them() {
        let many = attrs(1001, "a");
        for le in [true, false] {
            for bom in [true, false] {
                let ok = utf16("<?xml version='1.0'?><r a='é'><e/></r>", le, bom);
                assert_eq!(kind(&ok), None);
                assert!(never_below(&ok), "utf-16 le={le} bom={bom}");
                let bad = utf16(&format!("<?xml version='1.0'?><r{many}/>"), le, bom);
                assert_eq!(kind(&bad), Some(XmlErrorKind::TooManyAttributes));
                let declared = utf16(
                    &format!("<?xml version='1.0' encoding='ISO-8859-1'?><r{many}/>"),
                    le,
                    bom,
                );
                assert_eq!(kind(&declared), Some(XmlErrorKind::Malformed));
            }
        }
        // A declared encoding libxml2 switches to: what follows the declaration, converted.
        let mut doc = b"<?xml version='1.0' encoding='UTF-16LE'?>".to_vec();
        doc.extend(utf16(&format!("<r{many}/>"), true, false));
        assert_eq!(kind(&doc), Some(XmlErrorKind::TooManyAttributes));
        let latin = format!("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><r x='\u{e9}'{many}/>");
        assert_eq!(
            kind(latin.as_bytes()),
            Some(XmlErrorKind::TooManyAttributes)
        );
        let latin = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><r x='\xe9'/>";
        assert_eq!(kind(latin), None);
        assert!(never_below(latin));
        // An encoding libxml2 does not know: it stops there.
        let unknown = format!("<?xml version='1.0' encoding='x-none'?><r{many}/>");
        assert_eq!(
            kind(unknown.as_bytes()),
            Some(XmlErrorKind::TooManyAttributes)
        );
        // UCS-4 and EBCDIC.
        for start in [
            &[0u8, 0, 0, 0x3C][..],
            &[0x3C, 0, 0, 0],
            &[0x4C, 0x6F, 0xA7, 0x94],
        ] {
            let mut doc = start.to_vec();
            doc.extend_from_slice(b"????");
            assert_eq!(kind(&doc), Some(XmlErrorKind::Malformed));
        }
    }

    #[test]
    fn the_declaration_is_read_as_libxml2_reads_it() {
        for (decl, name) in [
            (
                "<?xml version='1.0' encoding='Shift_JIS'?>",
                Some("Shift_JIS"),
            ),
            (
                "<?xml version=\"1.0\"  encoding = \"latin1\" ?>",
                Some("latin1"),
            ),
            // No version: libxml2 complains and still reads the encoding.
            ("<?xml encoding='koi8-r'?>", Some("koi8-r")),
            // A broken version number: libxml2 stops before the encoding.
            ("<?xml version='1.0x' encoding='koi8-r'?>", None),
            ("<?xml version='1.0'encoding='koi8-r'?>", Some("koi8-r")),
            ("<?xml version='1.0' encoding='9x'?>", None),
            ("<?xml version='1.0' encoding='x\"?>", None),
            ("<?xml version='1.0'?>", None),
            ("<?xmlversion='1.0' encoding='x'?>", None),
        ] {
            let got = declared_encoding(decl.as_bytes()).map(|(n, _)| n);
            assert_eq!(got.as_deref(), name.map(str::as_bytes), "{decl}");
        }
    }

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Random edits of documents full of what the scan steps over: it never panics, and wherever
    /// libxml2 builds a tree, the scan never counts below it.
    #[test]
    fn mutated_documents_never_panic_nor_undercount() {
        let bases = [
            format!(
                "<?xml version='1.0'?>\n<!-- c --><a{}><?pi x?><b{} x='1'><![CDATA[</b>]]><c{}/>t</b><d{}/></a>",
                decls(3, "p"),
                decls(4, "q"),
                attrs(6, "x"),
                decls(2, "s")
            ),
            format!(
                "<!DOCTYPE a [<!ATTLIST b xmlns:z CDATA 'urn:z' y CDATA \"2\">]><a><b{}/><b/></a>",
                attrs(3, "x")
            ),
            "<a x='>' y=\"'\"><!-- ' \" --><b xmlns='u'>it's</b></a>".to_owned(),
            format!("<a{}><b{}>x</b><b{}/></a>", decls(3, "p"), decls(3, "p"), decls(3, "q")),
        ];
        let junk: &[&[u8]] = &[
            b"<",
            b">",
            b"'",
            b"\"",
            b"/",
            b"<!--",
            b"-->",
            b"<![CDATA[",
            b"]]>",
            b"<?",
            b"?>",
            b"</a>",
            b"<b>",
            b" xmlns:w='v'",
            b" y='2'",
            b"\x01",
            b"\xef\xbf\xbe",
            b"\xff",
            b"=",
            b"<!DOCTYPE a>",
            b"<!ATTLIST a z CDATA 'q'>",
        ];
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        let mut parsed = 0;
        for i in 0..6000 {
            let mut doc = bases[i % bases.len()].clone().into_bytes();
            for _ in 0..1 + r.below(2) {
                let at = r.below(doc.len() + 1);
                match r.below(4) {
                    0 => doc.truncate(at),
                    1 if at < doc.len() => {
                        doc.remove(at);
                    }
                    2 if at < doc.len() => doc[at] = r.next() as u8,
                    _ => {
                        let j = junk[r.below(junk.len())];
                        doc.splice(at..at, j.iter().copied());
                    }
                }
            }
            let _ = check(&doc, &Limits::default());
            let _ = scan(&doc, &Limits::default());
            let tiny = Limits {
                max_attributes: r.below(4),
                max_namespaces: r.below(4),
                ..Limits::default()
            };
            let _ = check(&doc, &tiny);
            if never_below(&doc) {
                parsed += 1;
            }
        }
        assert!(parsed > 500, "{parsed} mutated documents parsed");
    }
}
