use super::filter::{relate, same, Op};
use super::{JsonPath, Step};
use crate::testing::{mutation_rounds, Rng};
use serde_json::{json, Value};
use std::borrow::Cow;

fn sel(path: &str, v: &Value) -> Vec<Value> {
    JsonPath::compile(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .select(v)
        .into_iter()
        .map(|c| c.into_owned())
        .collect()
}

/// Where the values `path` selects in `v` are.
fn sel_refs(path: &str, v: &Value) -> Vec<*const Value> {
    JsonPath::compile(path)
        .unwrap()
        .select(v)
        .iter()
        .map(|c| &**c as *const Value)
        .collect()
}

#[test]
fn the_usual_paths_select_as_jayway_does() {
    let v = json!({
        "order": {"symbol": "IBM", "qty": 3, "tags": ["a", "b", "c"]},
        "orders": [{"symbol": "IBM", "price": 1.5}, {"symbol": "SUN", "price": 2}],
        "odd key": true
    });
    assert_eq!(sel("$", &v), vec![v.clone()]);
    assert_eq!(sel("$.order.symbol", &v), vec![json!("IBM")]);
    assert_eq!(sel("$['order']['qty']", &v), vec![json!(3)]);
    assert_eq!(sel("$[\"odd key\"]", &v), vec![json!(true)]);
    assert_eq!(sel("$.order.tags[1]", &v), vec![json!("b")]);
    // A dot before a bracket is the bracket alone (Jayway; MI's TestJsonPathAgainstPropertyAPI).
    assert_eq!(sel("$.order.tags.[1]", &v), vec![json!("b")]);
    assert_eq!(sel("$.['order'].qty", &v), vec![json!(3)]);
    // A name with no dot before it is a member (Jayway; MI's EnrichTestAPI), and so is what
    // follows a filter (a stray ')' names nothing).
    assert_eq!(sel("$.orders[0]symbol", &v), vec![json!("IBM")]);
    assert!(sel("$.orders[?(@.price > 1)])", &v).is_empty());
    assert_eq!(sel("$.order.tags[-1]", &v), vec![json!("c")]);
    assert_eq!(sel("$.order.tags[0,2]", &v), vec![json!("a"), json!("c")]);
    assert_eq!(sel("$.order.tags[1:]", &v), vec![json!("b"), json!("c")]);
    assert_eq!(sel("$.order.tags[:-1]", &v), vec![json!("a"), json!("b")]);
    assert_eq!(sel("$.order.tags[*]", &v).len(), 3);
    assert_eq!(
        sel("$.orders[*].symbol", &v),
        vec![json!("IBM"), json!("SUN")]
    );
    assert_eq!(
        sel("$..symbol", &v),
        vec![json!("IBM"), json!("IBM"), json!("SUN")]
    );
    assert_eq!(sel("$..price", &v), vec![json!(1.5), json!(2)]);
    // Several names last: one object of them (Jayway's merge); elsewhere, each.
    assert_eq!(
        sel("$.order['symbol','qty','none']", &v),
        vec![json!({"symbol": "IBM", "qty": 3})]
    );
    assert_eq!(sel("$['order','orders'].symbol", &v), vec![json!("IBM")]);
    // Both bounds given: neither counts from the end (Jayway).
    assert!(sel("$.order.tags[1:-1]", &v).is_empty());
    assert!(sel("$.nothing.here", &v).is_empty());
    assert!(sel("$.order.tags[7]", &v).is_empty());
    assert!(sel("$.order.symbol.deeper", &v).is_empty());
}

#[test]
fn definite_paths_and_refusals() {
    let d = |p: &str| JsonPath::compile(p).unwrap().is_definite();
    assert!(d("$") && d("$.a.b") && d("$['a'][0]") && d("$.a['b','c']"));
    assert!(!d("$.a[*]") && !d("$..a") && !d("$.a[0,1]") && !d("$.a[1:]"));
    assert!(!d("$['a','b'].c"));
    assert!(!d("$.a[?(@.b)]"));
    for bad in [
        "a.b[",
        "$.a[?(@.b == )]",
        "$.a[?@.b]",
        "$.a[?(@.b =~ /x)]",
        "$.a[?(@.b == 1 &&)]",
        "$.a[?('x')]",
        "$.a[?(@.b fancy 1)]",
        "$.a[?(@.b == 1e3)]",
        "$.a[?(/x/)]",
        "$.a[?((@.b == 1)]",
        "$.a[(@.length-1)]",
        "$.a.concat('x')",
        "$.a.length().b",
        "$.a.nope()",
        &format!("$.a[?({}@.b{})]", "(".repeat(40), ")".repeat(40)),
        "$.a[",
        "$a",
        "$.a[x]",
        "$.a]",
    ] {
        assert!(JsonPath::compile(bad).is_err(), "{bad}");
    }
}

/// The document the filter tests select from.
fn filter_doc() -> Value {
    json!({
        "limit": 2,
        "order": {"symbol": "IBM", "qty": 3, "tags": ["a", "b", "c"]},
        "orders": [
            {"symbol": "IBM", "price": 1.5, "tags": ["a", "x"]},
            {"symbol": "SUN", "price": 2, "tags": []},
            {"symbol": "MSFT", "price": 2.5, "note": null}
        ]
    })
}

/// The `symbol` of each value `path` selects in [`filter_doc`].
fn symbols(path: &str) -> Vec<Value> {
    sel(path, &filter_doc())
        .into_iter()
        .map(|o| o["symbol"].clone())
        .collect()
}

#[test]
fn filters_compare_as_jayway_does() {
    let v = filter_doc();
    assert_eq!(
        symbols("$.orders[?(@.price > 1.6)]"),
        [json!("SUN"), json!("MSFT")]
    );
    assert_eq!(symbols("$.orders[?(@.price == 2.0)]"), [json!("SUN")]);
    assert_eq!(
        sel("$.orders[?(@.symbol == 'IBM')].price", &v),
        [json!(1.5)]
    );
    assert_eq!(
        sel("$.orders[?(@.symbol == \"SUN\")].price", &v),
        [json!(2)]
    );
    assert_eq!(symbols("$.orders[?(@.symbol != 'IBM')]").len(), 2);
    // A path that finds nothing: only != holds.
    assert_eq!(symbols("$.orders[?(@.missing != 'x')]").len(), 3);
    assert!(sel("$.orders[?(@.missing == null)]", &v).is_empty());
    assert_eq!(symbols("$.orders[?(@.note == null)]"), [json!("MSFT")]);
    // A path alone: it exists (null counts).
    assert_eq!(symbols("$.orders[?(@.note)]"), [json!("MSFT")]);
    assert!(sel("$.orders[?(@.nope)]", &v).is_empty());
    // A number equals a string that parses to it, and a string the number's text (Jayway);
    // order is only between numbers or between strings.
    assert_eq!(symbols("$.orders[?(@.price == '2')]"), [json!("SUN")]);
    assert_eq!(symbols("$.orders[?(@.price == '2.00')]"), [json!("SUN")]);
    assert_eq!(symbols("$.orders[?(@.price in ['2'])]"), [json!("SUN")]);
    assert_eq!(symbols("$.orders[?('1.5' == @.price)]"), [json!("IBM")]);
    assert!(sel("$.orders[?(@.price === '2')]", &v).is_empty());
    assert_eq!(symbols("$.orders[?(@.price === 2)]"), [json!("SUN")]);
    assert_eq!(symbols("$.orders[?(@.price !== 2)]").len(), 2);
    assert!(sel("$.orders[?(@.symbol < 3)]", &v).is_empty());
    assert_eq!(symbols("$.orders[?(@.symbol < 'J')]"), [json!("IBM")]);
    // Regexes match whole strings; `i` ignores case; numbers by their text, a missing value
    // as ""; the pattern may come first.
    assert_eq!(symbols("$.orders[?(@.symbol =~ /i.m/i)]"), [json!("IBM")]);
    assert_eq!(
        symbols("$.orders[?(@.price =~ /\\d\\.\\d/)]"),
        [json!("IBM"), json!("MSFT")]
    );
    assert_eq!(symbols("$.orders[?(@.missing =~ /.*/)]").len(), 3);
    assert_eq!(symbols("$.orders[?(/S.*/ =~ @.symbol)]"), [json!("SUN")]);
    // A regex holding brackets, parentheses and quotes.
    assert_eq!(
        symbols("$.orders[?(@.symbol =~ /[A-I]]*B(M)'?/)]"),
        [json!("IBM")]
    );
    assert_eq!(
        symbols("$.orders[?(@.symbol =~ /.*[)].*/ || @.price == 2)]"),
        [json!("SUN")]
    );
    assert!(sel("$.orders[?(@.symbol =~ /B/)]", &v).is_empty());
    assert_eq!(
        symbols("$.orders[?(@.symbol =~ /.*S.*/)]"),
        [json!("SUN"), json!("MSFT")]
    );
}

#[test]
fn filters_select_sets_and_logic_as_jayway_does() {
    let v = filter_doc();
    // Sets, sizes.
    assert_eq!(
        symbols("$.orders[?(@.symbol in ['SUN','X'])]"),
        [json!("SUN")]
    );
    assert_eq!(symbols("$.orders[?(@.symbol nin ['SUN','X'])]").len(), 2);
    assert_eq!(
        symbols("$.orders[?(@.tags subsetof ['a','x','y'])]"),
        [json!("IBM"), json!("SUN")]
    );
    assert_eq!(symbols("$.orders[?(@.tags anyof ['x'])]"), [json!("IBM")]);
    assert_eq!(symbols("$.orders[?(@.tags noneof ['x'])]"), [json!("SUN")]);
    assert_eq!(symbols("$.orders[?(@.tags size 2)]"), [json!("IBM")]);
    assert_eq!(symbols("$.orders[?(@.symbol size 4)]"), [json!("MSFT")]);
    assert_eq!(symbols("$.orders[?(@.tags empty true)]"), [json!("SUN")]);
    assert_eq!(symbols("$.orders[?(@.tags contains 'x')]"), [json!("IBM")]);
    assert_eq!(
        symbols("$.orders[?(@.symbol contains 'SF')]"),
        [json!("MSFT")]
    );
    assert_eq!(
        symbols("$.orders[?(@.tags all ['x', 'a'])]"),
        [json!("IBM")]
    );
    assert_eq!(symbols("$.orders[?(@.note exists true)]"), [json!("MSFT")]);
    assert_eq!(symbols("$.orders[?(@.note EXISTS false)]").len(), 2);
    assert_eq!(sel("$[?(@.order empty false)].limit", &v), [json!(2)]);
    // A missing value: nin holds, as !=.
    assert_eq!(symbols("$.orders[?(@.missing nin ['x'])]").len(), 3);
    // Negation; numbers and keywords right before `)`, `&&`, `||`; no spaces.
    assert_eq!(symbols("$.orders[?(!@.note)]").len(), 2);
    assert_eq!(symbols("$.orders[?(!(@.price > 1.6))]"), [json!("IBM")]);
    assert_eq!(
        symbols("$.orders[?(@.price == 1.5 || (@.price == 2))]"),
        [json!("IBM"), json!("SUN")]
    );
    assert_eq!(
        symbols("$.orders[?((@.price > 2) && @.note == null)]"),
        [json!("MSFT")]
    );
    assert_eq!(
        symbols("$.orders[?(@.price<2&&@.symbol=='IBM')]"),
        [json!("IBM")]
    );
    assert_eq!(
        symbols("$.orders[?(@.price > .5 && @.price < 002)]"),
        [json!("IBM")]
    );
    assert_eq!(
        symbols("$.orders[?(@.symbol == 'IB\\'M' || @.symbol == \"SU\\u004E\")]"),
        [json!("SUN")]
    );
    // && binds tighter than ||; parentheses group.
    assert_eq!(
        symbols("$.orders[?(@.price >= 2 && @.symbol == 'SUN' || @.symbol == 'IBM')]"),
        [json!("IBM"), json!("SUN")]
    );
    assert_eq!(
        symbols("$.orders[?((@.price >= 2 || @.symbol == 'IBM') && @.price < 2)]"),
        [json!("IBM")]
    );
    // `$` is the document; brackets inside a filter; `@` alone is the element.
    assert_eq!(symbols("$.orders[?(@.price < $.limit)]"), [json!("IBM")]);
    assert_eq!(symbols("$.orders[?(@.tags[0] == 'a')]"), [json!("IBM")]);
    assert_eq!(symbols("$.orders[?(@['symbol'] == 'SUN')]"), [json!("SUN")]);
    assert_eq!(sel("$.order.tags[?(@ == 'b')]", &v), [json!("b")]);
    // On an object, the object itself when it passes; deep scans filter at every level.
    assert_eq!(sel("$.order[?(@.qty == 3)].symbol", &v), [json!("IBM")]);
    assert!(sel("$.order[?(@.qty == 4)]", &v).is_empty());
    assert_eq!(sel("$..orders[?(@.price == 2)].symbol", &v), [json!("SUN")]);
    assert_eq!(sel("$..[?(@.symbol == 'IBM')].qty", &v), [json!(3)]);
}

#[test]
fn functions_last_in_a_path() {
    let v = json!({
        "prices": [1, 2.5, "x", 4],
        "empty": [],
        "scores": [1, 3],
        "order": {"symbol": "IBM", "qty": 3},
        "orders": [{"p": 1, "tags": ["a"]}, {"p": 3, "tags": ["a", "b"]}]
    });
    let one = |p: &str| -> Value {
        let c = JsonPath::compile(p).unwrap_or_else(|e| panic!("{p}: {e}"));
        assert!(c.is_definite(), "{p}");
        let mut found = c.select(&v);
        assert_eq!(found.len(), 1, "{p}");
        found.remove(0).into_owned()
    };
    assert_eq!(one("$.prices.length()"), json!(4));
    assert_eq!(one("$.order.size()"), json!(2));
    assert_eq!(one("$.prices.sum()"), json!(7.5));
    assert_eq!(one("$.prices.min()"), json!(1.0));
    assert_eq!(one("$.prices.max()"), json!(4.0));
    assert_eq!(one("$.prices.avg()"), json!(2.5));
    assert_eq!(one("$.order.keys()"), json!(["symbol", "qty"]));
    let sd = one("$.scores.stddev()").as_f64().unwrap();
    assert!((sd - 1.0).abs() < 1e-12, "{sd}");
    // After an indefinite path, the function of each match (the path stays indefinite); one
    // that fails (a number has no sum) fails the whole, as in Jayway 2.4.
    let c = JsonPath::compile("$.orders[*].tags.length()").unwrap();
    assert!(!c.is_definite());
    assert_eq!(sel("$.orders[*].tags.length()", &v), [json!(1), json!(2)]);
    assert!(sel("$.orders[*].p.sum()", &v).is_empty());
    assert!(sel("$..p.max()", &v).is_empty());
    // Nothing where Jayway gives null or fails: no numbers, no array.
    assert!(sel("$.order.symbol.length()", &v).is_empty());
    assert!(sel("$.empty.min()", &v).is_empty());
    assert!(sel("$.empty.avg()", &v).is_empty());
    assert!(sel("$.empty.sum()", &v).is_empty());
    assert!(sel("$.order.sum()", &v).is_empty());
    assert!(sel("$.nothing.length()", &v).is_empty());
    // In a filter.
    assert_eq!(sel("$.orders[?(@.tags.length() > 1)].p", &v), [json!(3)]);
}

/// The operators that look values up in an array, the plain way: every pair compared with
/// [`same`], and the matches counted. The reference for
/// `within_each_answers_as_every_pair_compared`.
fn pairwise(l: &Value, op: Op, r: &Value) -> bool {
    // Whether `x` is [`same`] to an element of `set` (nothing is in what is not an array).
    let among =
        |x: &Value, set: &Value| set.as_array().is_some_and(|a| a.iter().any(|e| same(x, e)));
    // For an array `xs`: how many of its elements are among `set`, and how many it has.
    let found = |xs: &Value, set: &Value| {
        xs.as_array()
            .map(|a| (a.iter().filter(|x| among(x, set)).count(), a.len()))
    };
    match op {
        Op::In => among(l, r),
        Op::Nin => r.is_array() && !among(l, r),
        Op::Contains => match (l, r) {
            (Value::String(x), Value::String(y)) => x.contains(y.as_str()),
            _ => l.is_array() && among(r, l),
        },
        Op::All => l.is_array() && found(r, l).is_some_and(|(n, of)| n == of),
        Op::SubsetOf => found(l, r).is_some_and(|(n, of)| n == of),
        Op::AnyOf => found(l, r).is_some_and(|(n, _)| n > 0),
        Op::NoneOf => found(l, r).is_some_and(|(n, _)| n == 0),
        _ => unreachable!("{op:?} looks nothing up"),
    }
}

/// Numbers of every kind serde_json keeps (unsigned, negative, floating, `-0.0`, past 2^53),
/// strings that parse to them or nearly (white space, `+`, exponents, `inf`, `NaN`, their
/// printed texts), and the rest: where `same` is not plain equality.
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "0.0",
    "-0.0",
    "1",
    "1.0",
    "1e0",
    "10",
    "-1",
    "-1.0",
    "0.1",
    "0.30000000000000004",
    "1.5",
    "2",
    "9007199254740992",
    "9007199254740993",
    "18446744073709551615",
    "-9223372036854775808",
    "1e21",
    "1e300",
];
const STRINGS: &[&str] = &[
    "1",
    "1.0",
    " 1 ",
    "01",
    "1e0",
    "+1",
    "-0",
    "0",
    "0.0",
    "-0.0",
    "inf",
    "NaN",
    "nan",
    "abc",
    "",
    "true",
    "null",
    "1.5",
    "2",
    " 2",
    "\t2\n",
    "0.1",
    "9007199254740992",
    "9007199254740993",
    "18446744073709551615",
    "1e21",
    "1e+21",
    "1e300",
    "\u{e9}",
];

fn gen_value(r: &mut Rng, depth: usize) -> Value {
    match r.below(if depth < 2 { 12 } else { 9 }) {
        0..=2 => serde_json::from_str(NUMBERS[r.below(NUMBERS.len())]).unwrap(),
        3..=5 => json!(STRINGS[r.below(STRINGS.len())]),
        6 => json!(r.below(2) == 0),
        7 => Value::Null,
        8 => json!(format!("s{}", r.below(40))),
        9 | 10 => Value::Array((0..r.below(4)).map(|_| gen_value(r, depth + 1)).collect()),
        _ => {
            // Members in either order, so that equal objects differ in order.
            let mut members: Vec<(String, Value)> = (0..r.below(3))
                .map(|_| {
                    (
                        ["a", "b", "c"][r.below(3)].to_owned(),
                        gen_value(r, depth + 1),
                    )
                })
                .collect();
            members.dedup_by(|x, y| x.0 == y.0);
            if r.below(2) == 0 {
                members.reverse();
            }
            Value::Object(members.into_iter().collect())
        }
    }
}

/// An array of up to `max` values, half the time drawn from `pool` (so that both sides share
/// values, spelled alike or not).
fn gen_array(r: &mut Rng, pool: &[Value], max: usize) -> Vec<Value> {
    (0..r.below(max + 1))
        .map(|_| match r.below(2) {
            0 if !pool.is_empty() => pool[r.below(pool.len())].clone(),
            _ => gen_value(r, 0),
        })
        .collect()
}

/// The operators that look values up in an array (`in`, `nin`, `contains`, `all`,
/// `subsetof`, `anyof`, `noneof`), on generated arrays of numbers, strings, booleans, nulls,
/// objects and arrays, short and long (compared pair by pair, or through an index), answer
/// as every pair compared with `same` did.
#[test]
fn within_each_answers_as_every_pair_compared() {
    let mut r = Rng(0x3c6e_f372_fe94_f82b);
    let ops = [
        Op::In,
        Op::Nin,
        Op::Contains,
        Op::All,
        Op::SubsetOf,
        Op::AnyOf,
        Op::NoneOf,
    ];
    // Per operator: answers true, false; pairs of arrays both long enough for an index.
    let mut seen = [(0, 0); 7];
    let mut indexed = 0;
    for round in 0..3000 {
        let max = [4, 12, 40, 120][round % 4];
        let pool: Vec<Value> = (0..1 + r.below(30)).map(|_| gen_value(&mut r, 0)).collect();
        let (a, b) = (gen_array(&mut r, &pool, max), gen_array(&mut r, &pool, max));
        if a.len().min(b.len()) > super::filter::FEW_MEMBERS
            && a.len() * b.len() > super::filter::FEW_PAIRS
        {
            indexed += 1;
        }
        // One side a subset of the other now and then: `all`, `subsetof` hold.
        let sub: Vec<Value> = b.iter().filter(|_| r.below(3) == 0).cloned().collect();
        let x = gen_value(&mut r, 0);
        let (a, b, sub) = (Value::Array(a), Value::Array(b), Value::Array(sub));
        for (k, &op) in ops.iter().enumerate() {
            for (l, rt) in [
                (&a, &b),
                (&sub, &b),
                (&b, &sub),
                (&x, &b),
                (&a, &x),
                (&x, &x),
            ] {
                let want = pairwise(l, op, rt);
                assert_eq!(relate(l, op, rt), want, "{op:?}\n{l}\n{rt}");
                if want {
                    seen[k].0 += 1;
                } else {
                    seen[k].1 += 1;
                }
            }
        }
    }
    eprintln!("{indexed} of 3000 pairs indexed; (true, false) per operator: {seen:?}");
    assert!(indexed >= 1000, "{indexed} pairs indexed");
    for (k, (t, f)) in seen.iter().enumerate() {
        assert!(*t >= 500 && *f >= 500, "{:?}: {t} true, {f} false", ops[k]);
    }
    // Each kind of value found through the index, spelled otherwise: a number through a
    // string that parses to it, a string through a number that prints as it, `-0.0` as
    // `0`, objects in another order, arrays of those.
    // `v` after 40 strings of its own (`pad` apart: the probes' and the set's differ).
    let long = |pad: &str, v: Value| {
        let mut a: Vec<Value> = (0..40).map(|k| json!(format!("{pad}{k}"))).collect();
        a.push(v);
        Value::Array(a)
    };
    for (x, set) in [
        (json!(1), json!(" 1.0 ")),
        (json!("1.0"), json!(1.0)),
        (json!(0), serde_json::from_str::<Value>("-0.0").unwrap()),
        (json!({"a": 1, "b": [2]}), json!({"b": [2], "a": 1})),
        (json!([1, "2", {"c": null}]), json!(["1", 2, {"c": null}])),
    ] {
        let (probes, set) = (long("p", x), long("s", set));
        assert!(relate(&probes, Op::AnyOf, &set), "{probes} {set}");
        assert!(pairwise(&probes, Op::AnyOf, &set));
    }
    // And what differs only in spelling is not: "1.0" is no "1", 1 no 1.0 inside an object.
    for (x, set) in [
        (json!("1.0"), json!("1")),
        (json!({"a": 1}), json!({"a": 1.0})),
        (json!(["1.0"]), json!([1])),
    ] {
        let (probes, set) = (long("p", x), long("s", set));
        assert!(!relate(&probes, Op::AnyOf, &set), "{probes} {set}");
        assert!(!pairwise(&probes, Op::AnyOf, &set));
    }
}

/// A deep scan from many values at once (`$..a..b`, `$..*..b`, a value twice) selects what
/// the scan from each in turn selects, in the same order and as often (Jayway repeats a match
/// under nested starts), on generated nested documents.
#[test]
fn deep_scans_from_many_starts_select_as_from_each() {
    fn gen_doc(r: &mut Rng, depth: usize) -> Value {
        let leaf = |r: &mut Rng| match r.below(3) {
            0 => json!(r.below(5)),
            1 => json!(["x", "y"][r.below(2)]),
            _ => Value::Null,
        };
        if depth >= 6 || r.below(5) == 0 {
            return leaf(r);
        }
        if r.below(3) == 0 {
            Value::Array((0..r.below(4)).map(|_| gen_doc(r, depth + 1)).collect())
        } else {
            let mut m = serde_json::Map::new();
            for _ in 0..r.below(4) {
                m.insert(
                    ["a", "b", "c"][r.below(3)].to_owned(),
                    gen_doc(r, depth + 1),
                );
            }
            Value::Object(m)
        }
    }
    let cases = [
        ("$..a", "..b"),
        ("$..a", "..a"),
        ("$..*", "..b"),
        ("$..*", "..*"),
        ("$..a", "..[0]"),
        ("$..[*]", "..a"),
        ("$..a", "..[?(@.b)]"),
        ("$..[0,0]", "..b"),
        ("$..a[0,0,-1]", "..c"),
        ("$..b", "..*"),
    ];
    let mut r = Rng(0xbb67_ae85_84ca_a73b);
    let (mut many, mut nested) = (0, 0);
    for _ in 0..300 {
        let doc = gen_doc(&mut r, 0);
        for (first, then) in cases {
            let starts = JsonPath::compile(first).unwrap().select(&doc);
            let whole = sel(&format!("{first}{then}"), &doc);
            // From each start alone (one start: the scan as it always was).
            let each = JsonPath::compile(&format!("${then}")).unwrap();
            let mut want = Vec::new();
            for v in &starts {
                want.extend(each.select(v).into_iter().map(|c| c.into_owned()));
            }
            assert_eq!(whole, want, "{first}{then} on {doc}");
            many += usize::from(starts.len() > 1);
            // A start below another (found again, not scanned again).
            let below: std::collections::HashSet<*const Value> =
                starts.iter().flat_map(|v| sel_refs("$..*", v)).collect();
            nested += usize::from(
                starts
                    .iter()
                    .any(|v| below.contains(&(&**v as *const Value))),
            );
        }
    }
    // Paths list a start before those below it; in the other order (and with repeats), the
    // matches below a start scanned first are taken again inside the later scan.
    for _ in 0..300 {
        let doc = gen_doc(&mut r, 0);
        let mut starts: Vec<&Value> = JsonPath::compile("$..*")
            .unwrap()
            .select(&doc)
            .into_iter()
            .map(|c| match c {
                Cow::Borrowed(v) => v,
                Cow::Owned(_) => unreachable!(),
            })
            .collect();
        starts.reverse();
        let again: Vec<&Value> = starts.iter().step_by(3).copied().collect();
        starts.extend(again);
        for inner in [
            Step::Names(vec!["b".into()]),
            Step::Wild,
            Step::Indexes(vec![0]),
        ] {
            let mut got = Vec::new();
            super::deep_from_each(&inner, &starts, &doc, &mut got);
            let (deep, mut want) = (Step::Deep(Box::new(inner)), Vec::new());
            for v in &starts {
                super::apply(&deep, v, &doc, &mut want);
            }
            assert_eq!(got, want, "{doc}");
        }
    }
    eprintln!("{many} with many starts, {nested} with a start below another");
    assert!(
        many >= 1000 && nested >= 500,
        "{many} with many starts, {nested} nested"
    );
}

/// Documents that made membership filters and nested deep scans cost the product of their
/// sizes: how long each path takes (a measurement to read, not an assertion; run with
/// `--ignored --nocapture`).
#[test]
#[ignore]
fn adversarial_sizes_timings() {
    use std::time::Instant;
    for n in [1_000usize, 4_000, 16_000] {
        // Two long arrays from the message, of strings, numbers and numeric strings: one
        // item's tags all allowed but found last (the allowed list reversed), the other's
        // none allowed (every probe a miss).
        let allowed: Vec<Value> = (0..n)
            .map(|k| match k % 3 {
                0 => json!(format!("s{k}")),
                1 => json!(k),
                _ => json!(format!("{k}.5")),
            })
            .collect();
        let hits: Vec<Value> = allowed.iter().rev().cloned().collect();
        let misses: Vec<Value> = (0..n)
            .map(|k| match k % 2 {
                0 => json!(format!("t{k}")),
                _ => json!(k as f64 + 0.25),
            })
            .collect();
        let doc =
            json!({"allowed": allowed, "hits": [{"tags": hits}], "misses": [{"tags": misses}]});
        for (op, items) in [
            ("subsetof", "hits"),
            ("all", "hits"),
            ("anyof", "misses"),
            ("noneof", "misses"),
        ] {
            let path = format!("$.{items}[?(@.tags {op} $.allowed)]");
            let p = JsonPath::compile(&path).unwrap();
            let t = Instant::now();
            let found = p.select(&doc).len();
            eprintln!("{op:>8} n={n:>6}: {:>9.1?} ({found})", t.elapsed());
        }
    }
    // `..a..b` over `a`s nested `depth` deep, each level with `width` other members: every
    // `a` scanned again from each `a` above it (as often as there are `a`s above it).
    for (depth, width) in [(50usize, 100usize), (100, 100), (100, 1_000)] {
        let mut v = json!({"b": 1});
        for level in 0..depth {
            let mut m = serde_json::Map::new();
            for k in 0..width {
                m.insert(format!("x{k}"), json!([level, k, "pad"]));
            }
            m.insert("a".into(), v);
            v = Value::Object(m);
        }
        for path in ["$..a..b", "$..a..x0", "$..a..nothing", "$..[?(@..b)].x0"] {
            let p = JsonPath::compile(path).unwrap();
            let t = Instant::now();
            let found = p.select(&v).len();
            eprintln!(
                "{path:>16} depth={depth} width={width}: {:>9.1?} ({found})",
                t.elapsed()
            );
        }
    }
}

/// Deterministic mutation fuzzing of the compiler and of selection: valid paths of every kind
/// with characters replaced, deleted, inserted (the path syntax's own, white space and
/// multi-byte ones, where a byte index would fall inside a character), spans duplicated and
/// tails cut must compile or be refused, never panic; a compiled one selects without panicking,
/// a definite path selects one value at most, and its text compiles again to the same selection.
#[test]
fn mutated_paths_never_panic() {
    let seeds = [
        "$",
        "$.order.symbol",
        "$['order']['qty']",
        "$[\"odd key\"]",
        "$.order.tags[-1]",
        "$.order.tags[0,2]",
        "$.order.tags[1:]",
        "$.order.tags[:-1]",
        "$.orders[*].symbol",
        "$..symbol",
        "$..[1]",
        "$..*",
        "$.order['symbol','qty']",
        "$.orders[?(@.price > 1.6 && @.symbol != 'IBM')].symbol",
        "$.orders[?(@.symbol =~ /i.m/i || !@.note)]",
        "$.orders[?(@.tags anyof ['x'] && @.tags size 2)]",
        "$.orders[?((@.price >= 2 || @['symbol'] in ['SUN','X']) && @.price < $.limit)]",
        "$.orders[?(@.tags[0] == 'a' || @.symbol == \"S\\\"N\")]",
        "$.orders[*].tags.length()",
        "$.deep..a[?(@.length() > 1)]",
        "$.prices.avg()",
    ];
    let mut doc = filter_doc();
    doc["odd key"] = json!(true);
    doc["prices"] = json!([1, 2.5, "x"]);
    doc["deep"] = json!({"a": {"a": {"a": [1, [2, [3]], {"a": "é"}]}}});
    let specials = "$.[]()?@*:,'\"/\\=!<>~&|- 0-1aé\u{0}\u{1F600}";
    let (compiled, rounds) = mutation_rounds(&seeds, specials, 0x51_7cc1_b727_220a, |text| {
        let Ok(path) = JsonPath::compile(text) else {
            return false;
        };
        let found = path.select(&doc);
        if path.is_definite() {
            assert!(found.len() <= 1, "{text}: definite, selected {found:?}");
        }
        let (values, one) = path.evaluate(&doc);
        assert!(
            !one || values.len() <= 1,
            "{text}: one value, gave {values:?}"
        );
        let again = JsonPath::compile(path.as_str())
            .unwrap_or_else(|e| panic!("{text}: compiled, but its text does not: {e}"));
        assert_eq!(again.select(&doc), found, "{text}");
        true
    });
    // The edits leave enough paths valid for the selection checks to mean something.
    assert!(compiled * 5 > rounds, "{compiled} of {rounds} compiled");
}

#[test]
fn set_puts_a_value_where_a_definite_path_points() {
    let mut v: Value = serde_json::json!({"a": {"b": [1, 2, 3]}, "c": 1});
    let set = |v: &mut Value, p: &str, x: Value| JsonPath::compile(p).unwrap().set(v, x);
    assert!(set(&mut v, "$.a.b", serde_json::json!([])));
    assert!(set(&mut v, "$.a.new", serde_json::json!("n")));
    assert!(set(&mut v, "$.c", serde_json::json!({"d": 4})));
    assert_eq!(
        v,
        serde_json::json!({"a": {"b": [], "new": "n"}, "c": {"d": 4}})
    );
    let mut w = serde_json::json!([1, 2]);
    assert!(set(&mut w, "$[-1]", serde_json::json!(9)));
    assert_eq!(w, serde_json::json!([1, 9]));
    assert!(!set(&mut w, "$[5]", serde_json::json!(0)));
    assert!(
        !set(&mut v, "$.x.y", serde_json::json!(0)),
        "a missing step before the last"
    );
    assert!(!set(&mut v, "$..b", serde_json::json!(0)), "not definite");
    assert!(set(&mut v, "$", serde_json::json!(7)));
    assert_eq!(v, serde_json::json!(7));
}

#[test]
fn a_path_without_a_root_starts_at_the_roots_member_as_in_jayway() {
    let v: Value = json!({"propertyName": "hospitalName", "a": {"b": 1}});
    let text = |p: &str| {
        let jp = JsonPath::compile(p).unwrap();
        let (found, _) = jp.evaluate(&v);
        found.iter().map(|x| x.to_string()).collect::<Vec<_>>()
    };
    assert_eq!(text("propertyName"), ["\"hospitalName\""]);
    assert_eq!(text("a.b"), ["1"]);
}

#[test]
fn delete_and_rename_key_work_where_the_path_selects() {
    let mut v = json!({"store": {"book": [
        {"author": "a", "price": 8}, {"author": "b", "price": 22}, {"author": "c", "price": 30}
    ], "bike": {"color": "red"}}});
    let p = |t: &str| JsonPath::compile(t).unwrap();
    assert_eq!(p("$.store.book[*].author").delete(&mut v), 3);
    assert_eq!(p("$.store.book[?(@.price > 20)]").delete(&mut v), 2);
    assert_eq!(
        v,
        json!({"store": {"book": [{"price": 8}], "bike": {"color": "red"}}})
    );
    assert_eq!(p("$.nothing").delete(&mut v), 0);
    // The root stays.
    assert_eq!(p("$").delete(&mut v), 0);
    let mut w = json!({"accountNo": 1, "name": "x", "inner": {"accountNo": 2}});
    assert_eq!(p("$").rename_key(&mut w, "accountNo", "avcId"), 1);
    assert_eq!(
        w.to_string(),
        r#"{"name":"x","inner":{"accountNo":2},"avcId":1}"#
    );
    assert_eq!(p("$..inner").rename_key(&mut w, "accountNo", "id"), 1);
    assert_eq!(w["inner"], json!({"id": 2}));
}

/// JSON text for [`text_answers_as_the_tree`]: members from a few names (some escaped, some
/// repeated in one object), nested objects and arrays, and scalars of every kind. Returns whether
/// some object names a member twice.
fn gen_text(r: &mut Rng, depth: usize, out: &mut String) -> bool {
    // As written, and as read.
    const KEYS: [(&str, &str); 6] = [
        ("a", "a"),
        ("b", "b"),
        ("c", "c"),
        ("symbol", "symbol"),
        ("a\\u0062", "ab"),
        ("ab", "ab"),
    ];
    let mut repeated = false;
    // An object at the top, where the paths start.
    let kind = match depth {
        0 if r.chance(80) => 9,
        0 => 6,
        1..=3 => r.below(10),
        _ => r.below(6),
    };
    match kind {
        0 => out.push_str(NUMBERS[r.below(NUMBERS.len())]),
        1 => out.push_str(&serde_json::to_string(STRINGS[r.below(STRINGS.len())]).unwrap()),
        2 => out.push_str(["true", "false", "null"][r.below(3)]),
        3..=5 => out.push_str(&format!("{}", r.below(100))),
        6 | 7 => {
            out.push('[');
            for i in 0..r.below(4) {
                if i > 0 {
                    out.push(',');
                }
                repeated |= gen_text(r, depth + 1, out);
            }
            out.push(']');
        }
        _ => {
            out.push('{');
            let mut names = Vec::new();
            for i in 0..r.below(5) {
                if i > 0 {
                    out.push(',');
                }
                let (written, read) = KEYS[r.below(KEYS.len())];
                repeated |= names.contains(&read);
                names.push(read);
                out.push_str(&format!("\"{written}\":"));
                repeated |= gen_text(r, depth + 1, out);
            }
            out.push('}');
        }
    }
    repeated
}

/// A path read from the text gives what it gives over the parsed tree, on generated documents
/// (keys repeated within an object included); it answers for every document whose objects have
/// no repeated key, and leaves text serde_json refuses to the tree.
#[test]
fn text_answers_as_the_tree() {
    let paths = [
        "$.a",
        "$..a",
        "$.a.b",
        "$..a..b",
        "$.a..b",
        "$..symbol",
        "$..ab.length()",
        "$['a','b']",
        "$..['a','c']",
        "$.a['b','c']",
        "$..b.sum()",
        "$.c.c.c",
        "$.a[0]",
        "$.a[1].b",
        "$..a[0,2]",
        "$.*",
        "$.a[*].b",
        "$..b.*",
        "$.*[1]",
        "$.a[*]['b','c']",
        "$[2].a",
    ];
    let paths: Vec<JsonPath> = paths
        .iter()
        .map(|p| JsonPath::compile(p).unwrap())
        .collect();
    assert!(paths.iter().all(JsonPath::reads_text));
    for other in [
        "$",
        "$[-1]",
        "$.a[1,-1]",
        "$..*",
        "$.a[?(@.b)]",
        "$..[1]",
        "$.a[0:2]",
    ] {
        assert!(!JsonPath::compile(other).unwrap().reads_text(), "{other}");
    }
    let mut r = Rng(0x5eed_1234);
    let (mut answered, mut left, mut found_some) = (0, 0, 0);
    for _ in 0..4000 {
        let mut text = String::new();
        let repeated = gen_text(&mut r, 0, &mut text);
        let tree: Value = serde_json::from_str(&text).unwrap();
        for p in &paths {
            let (found, definite) = p.evaluate(&tree);
            let want: Vec<Value> = found.into_iter().map(Cow::into_owned).collect();
            match p.evaluate_text(text.as_bytes()) {
                Some(got) => {
                    found_some += usize::from(!want.is_empty());
                    assert_eq!(got, (want, definite), "{} over {text}", p.as_str());
                    answered += 1;
                }
                None => {
                    assert!(repeated, "{} over {text}", p.as_str());
                    left += 1;
                }
            }
        }
    }
    assert!(
        answered > 20 * left,
        "{answered} answered, {left} left to the tree"
    );
    assert!(
        found_some > answered / 10,
        "{found_some} of {answered} found something"
    );
    for bad in [
        "{\"a\":1e400}",
        "[1,2",
        "{\"a\":1}x",
        "{\"a\" 1}",
        "\"\\ud800\"",
        "{\"a\":[1,]}",
    ] {
        assert!(serde_json::from_str::<Value>(bad).is_err(), "{bad}");
        assert!(paths[1].evaluate_text(bad.as_bytes()).is_none(), "{bad}");
    }
}
