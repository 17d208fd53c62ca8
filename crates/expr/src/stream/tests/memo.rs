//! Readings from the memo of a shared beginning, and when memos are made again.

use super::*;

const DESCENDANT: &[&str] = &[
    "//order[1]/symbol",
    "//symbol",
    "count(//order)",
    "//order[symbol='IBM']/price",
    "//m:order/m:symbol",
    "//order/@id",
    "//price/text()",
    "boolean(//order[2])",
    "normalize-space(//order[2]/symbol)",
    "//order[@id='1'][1]/symbol = 'IBM'",
];

/// `head` with the content of each `routing` header element (prefixed or not) replaced by one
/// of [`AFTER_MEMO`]: what follows the memo of a path into the header.
fn revalue_headers(r: &mut Rng, head: &str) -> String {
    let mut out = String::with_capacity(head.len());
    let mut rest = head;
    while let Some(at) = ["<routing", "<t:routing"]
        .iter()
        .filter_map(|tag| rest.find(tag))
        .min()
    {
        let gt = at + rest[at..].find('>').unwrap() + 1;
        let end = gt + rest[gt..].find("</").unwrap();
        out.push_str(&rest[..gt]);
        out.push_str(r.pick(AFTER_MEMO));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// A reading whose document begins with the bytes before the place of the last memo made for its
/// path on this thread starts from that memo: whatever follows, and whichever beginning came
/// before, the answers are libxml2's. The documents of a round share one of two generated
/// beginnings (an envelope down to the payload's start tag) and differ in what follows: the
/// first order's content (where the memo of a `//order` path is made), the orders after it,
/// and, every other document of the rounds with any path, the header's text (where the memo
/// of a path into the header is made).
#[test]
fn readings_start_from_the_memo_of_a_shared_beginning() {
    let mut r = Rng(0x5851_f42d_4c95_7f2d);
    // The document around a payload's content, cut where the content goes.
    let frame = |r: &mut Rng| loop {
        let mut cut = None;
        let doc = gen_doc_with(r, &mut |_, s: &mut String| cut = Some(s.len()));
        if let Some(c) = cut {
            return (doc[..c].to_owned(), doc[c..].to_owned());
        }
    };
    let (mut readings, mut decided, mut hits, mut descendant) = (0, 0, 0, 0);
    for round in 0..80 {
        let heads = [frame(&mut r), frame(&mut r)];
        // Every other round, a `//` path (the kind a memo serves: its place is past the
        // envelope), else anything.
        let text = match round % 2 {
            0 => DESCENDANT[round / 2 % DESCENDANT.len()].to_owned(),
            _ => gen_expr(&mut r),
        };
        let Some(s) = StreamPath::compile(&text, &ns()) else {
            continue;
        };
        let e = Expr::compile(&text, &ns()).unwrap();
        let firsts = [after_memo(&mut r), after_memo(&mut r)];
        for (j, k) in [0, 0, 1, 0, 1, 1, 0, 0].into_iter().enumerate() {
            let (head, tail) = &heads[k];
            let mut doc = if round % 2 == 1 && j % 2 == 1 {
                revalue_headers(&mut r, head)
            } else {
                head.clone()
            };
            // The same start of a first order (and text before it), its symbol holding one of
            // the round's two contents, then other orders. (Two, not one for each document:
            // where a path's memo is made past an element no step tests, that element's
            // content is in the memo's prefix, which the next document must begin with.)
            doc.push_str("\n<order><symbol>");
            doc.push_str(&firsts[r.below(2)]);
            doc.push_str("</symbol></order>");
            gen_orders(&mut r, &mut doc);
            doc.push_str(tail);
            let lib = Lib(parse(doc.as_bytes()).unwrap_or_else(|| panic!("generated:\n{doc}")));
            // The document's first reading as routing makes it: from a memo or not.
            let before = MEMO_HITS.get();
            let first = s.eval_string(doc.as_bytes());
            let hit = MEMO_HITS.get() > before;
            if let Some(first) = first {
                let want = e.eval_string(&lib).unwrap();
                assert_eq!(first, want, "first reading {text} (memo: {hit})\n{doc}");
            }
            readings += 1;
            hits += usize::from(hit);
            if round % 2 == 0 {
                descendant += usize::from(hit);
            }
            // Every kind of reading (each from its own memo), against libxml2.
            if check(doc.as_bytes(), &lib, &text, &s) {
                decided += 1;
            }
        }
    }
    eprintln!("{readings} documents, {decided} decided, {hits} read from a memo first, {descendant} of them under a `//` path");
    assert_eq!(decided, readings);
    // At most three in eight (the beginning a reading finds is not the last one's in the other
    // five), and only when the beginning is long enough for a memo (two thirds of them).
    assert!(
        descendant * 12 >= readings,
        "{descendant} of the `//` paths' {} read from a memo",
        readings / 2
    );
    // Other paths' memos are deeper in the envelope (a SOAP header's), or none.
    assert!(
        (hits - descendant) * 30 >= readings,
        "{} of the other paths' {} read from a memo",
        hits - descendant,
        readings / 2
    );
}

/// How often memos are made: once for a client that keeps sending alike messages, at once again
/// when another such client follows, rarely when no two messages begin alike, and, for two
/// clients in turn, rarely too, one of them then reading from its memo.
///
/// Each message's first symbol (what follows the memo's place) holds another content, the
/// answer compared with libxml2's.
#[test]
fn memos_are_made_again_when_they_pay() {
    let text = "//order[1]/symbol";
    let (e, lib_e) = (sp(text), Expr::compile(text, &ns()).unwrap());
    let mut r = Rng(0x2f2b_6c8a_91d3_5e07);
    // Client `c`'s message (its beginning, down to the first symbol's start tag, is the
    // client's own), that symbol holding `first`.
    let message = |c: usize, first: &str| {
        ENVELOPE.replace("xsd", &format!("{c:03}")).replacen(
            "<symbol>IBM<",
            &format!("<symbol>{first}<"),
            1,
        )
    };
    // (hits, makings) over messages from `clients`, in turn.
    let mut read = |clients: &[usize], times: usize| {
        let (h, m) = (MEMO_HITS.get(), MEMO_MAKINGS.get());
        for k in 0..times {
            let doc = message(clients[k % clients.len()], &after_memo(&mut r));
            let got = e.eval_string(doc.as_bytes());
            let lib = Lib(parse(doc.as_bytes()).unwrap());
            let want = lib_e.eval_string(&lib).unwrap();
            assert_eq!(got.as_deref(), Some(&*want), "{doc}");
        }
        (MEMO_HITS.get() - h, MEMO_MAKINGS.get() - m)
    };
    assert_eq!(read(&[0], 50), (49, 1));
    assert_eq!(read(&[1], 50), (49, 1));
    let (hits, makings) = read(&[0, 1], 400);
    assert!(hits >= 150, "{hits} hits for two clients in turn");
    assert!(makings <= 10, "{makings} makings for two clients in turn");
    let unique: Vec<usize> = (2..402).collect();
    let (hits, makings) = read(&unique, 400);
    assert_eq!(hits, 0);
    assert!(makings <= 14, "{makings} makings for 400 messages");
    // A client alone after those: its memo is made within the longest wait.
    let (hits, makings) = read(&[3], 1000);
    assert!(hits >= 1000 - u64::from(MEMO_WAIT) - 1, "{hits} hits");
    assert_eq!(makings, 1);
}
