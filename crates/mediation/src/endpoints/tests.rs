use super::*;

fn address(name: &str) -> EndpointPlan {
    EndpointPlan::new(
        name.into(),
        Uri::from_static("http://h/x"),
        HeaderValue::from_static("h"),
        None,
        cfg::TimeoutAction::Fault,
        SuspendPolicy::new(&Default::default(), &Default::default()),
    )
}

fn leaf(name: &str) -> Arc<EndpointPlan> {
    Arc::new(address(name))
}

fn picks(ep: &Arc<EndpointPlan>, n: usize, tried: &[usize]) -> Vec<String> {
    let now = Instant::now();
    (0..n)
        .map(|_| ep.pick(now, tried).map_or("-".into(), |l| l.name.clone()))
        .collect()
}

#[test]
fn groups_pick_ready_children_by_their_rule() {
    let (a, b, c) = (leaf("a"), leaf("b"), leaf("c"));
    let group = |kind, children: &[&Arc<EndpointPlan>]| {
        Arc::new(EndpointPlan::group(
            "g".into(),
            kind,
            children.iter().map(|c| (*c).clone()).collect(),
        ))
    };
    let dynamic = group(GroupKind::Failover { dynamic: true }, &[&a, &b, &c]);
    let fixed = group(GroupKind::Failover { dynamic: false }, &[&a, &b, &c]);
    let rr = group(GroupKind::RoundRobin { failover: true }, &[&a, &b, &c]);
    assert_eq!(picks(&dynamic, 2, &[]), ["a", "a"]);
    assert_eq!(picks(&rr, 4, &[]), ["a", "b", "c", "a"]);
    // This message already failed on a: the next child, whatever the rule.
    assert_eq!(picks(&dynamic, 1, &[a.id()]), ["b"]);
    assert_eq!(picks(&rr, 3, &[b.id()]), ["c", "a", "c"]);
    // a suspended: dynamic and static failover both move on; when a is back, dynamic returns
    // to it and static stays where it went.
    let now = Instant::now();
    a.health.on_fault(101503, now);
    assert_eq!(picks(&dynamic, 1, &[]), ["b"]);
    assert_eq!(picks(&fixed, 2, &[]), ["b", "b"]);
    a.health.on_success();
    assert_eq!(picks(&dynamic, 1, &[]), ["a"]);
    assert_eq!(picks(&fixed, 1, &[]), ["b"]);
    // Nested: a round robin whose second child is a failover; nothing left gives None.
    let nested = group(GroupKind::RoundRobin { failover: true }, &[&c, &dynamic]);
    assert_eq!(picks(&nested, 2, &[]), ["c", "a"]);
    assert_eq!(picks(&nested, 1, &[a.id(), b.id(), c.id()]), ["-"]);
    assert!(dynamic.fails_over() && rr.fails_over() && !a.fails_over());
    let no = group(GroupKind::RoundRobin { failover: false }, &[&a]);
    assert!(!no.fails_over());
}

/// Synapse's WeightedRoundRobin: each child its weight's turns in a row; a child that is not
/// ready is passed over with its turns; none ready gives none.
#[test]
fn weighted_round_robin_gives_each_child_its_turns_in_a_row() {
    let (a, b, c) = (leaf("a"), leaf("b"), leaf("c"));
    let wrr = |weights: &[u32]| {
        Arc::new(EndpointPlan::weighted(
            "w".into(),
            true,
            vec![a.clone(), b.clone(), c.clone()],
            weights,
        ))
    };
    let g = wrr(&[3, 1, 2]);
    assert_eq!(
        picks(&g, 12, &[]),
        ["a", "a", "a", "b", "c", "c", "a", "a", "a", "b", "c", "c"]
    );
    let g = wrr(&[2, 2, 1]);
    assert_eq!(picks(&g, 3, &[b.id()]), ["a", "a", "c"]);
    assert_eq!(picks(&g, 3, &[b.id()]), ["a", "a", "c"]);
    let big = wrr(&[1_000_000, 1, u32::MAX]);
    assert_eq!(picks(&big, 1, &[a.id(), b.id(), c.id()]), ["-"]);
    assert_eq!(picks(&big, 1, &[a.id(), c.id()]), ["b"]);
}

/// The weights come from the children's `loadbalance.weight` properties, which draw no
/// warning; a weight that is no whole number above zero stops the endpoint.
#[test]
fn weights_are_read_from_the_children() {
    let load = |w: &str| {
        let text = format!(
            r#"<definitions xmlns="http://ws.apache.org/ns/synapse"><proxy name="P"><target><endpoint name="W">
<loadbalance algorithm="org.apache.synapse.endpoints.algorithms.WeightedRoundRobin">
<endpoint name="a"><address uri="http://a/"/><property name="loadbalance.weight" value="{w}"/></endpoint>
<endpoint name="b"><address uri="http://b/"/></endpoint>
</loadbalance></endpoint></target></proxy></definitions>"#
        );
        let (cfg, mut diags) = sluice_config::load_str("t.xml", &text);
        let plan = crate::compile(&cfg, &crate::CompileOptions::default(), &mut diags);
        (plan, diags)
    };
    let (plan, d) = load("2");
    assert!(d.items.is_empty(), "{:?}", d.items);
    let w = plan.proxies["P"].target.clone().unwrap();
    assert_eq!(picks(&w, 6, &[]), ["a", "a", "b", "a", "a", "b"]);
    for bad in ["0", "-1", "two"] {
        let (plan, d) = load(bad);
        assert!(plan.proxies.is_empty(), "{bad}");
        assert!(
            d.items[0].message.contains("loadbalance.weight"),
            "{:?}",
            d.items
        );
    }
}

#[test]
fn endpoint_uris_need_http_a_host_and_no_user_info() {
    assert!(http_uri("http://h:81/x?y").is_ok());
    let (https, host) = http_uri("https://h/x").unwrap();
    assert_eq!(&*connect_authority(&https), "h:443");
    assert_eq!(host, "h");
    let (http, _) = http_uri("http://h/x").unwrap();
    assert_eq!(&*connect_authority(&http), "h:80");
    assert_eq!(
        &*connect_authority(&http_uri("https://h:8243/x").unwrap().0),
        "h:8243"
    );
    for (bad, sev) in [
        ("http://u:p@h/x", Severity::Unsupported),
        ("https://u@h/x", Severity::Unsupported),
        ("ftp://h/x", Severity::Unsupported),
        // Parsed as HTTP URIs they were malformed (an error); their scheme says first.
        ("jms:/SimpleStockQuoteService?transport.jms.ConnectionFactoryJNDIName=QueueConnectionFactory&java.naming.provider.url=tcp://localhost:61616", Severity::Unsupported),
        ("vfs:file:///home/user/test/out", Severity::Unsupported),
        ("vfs:sftp://user:pass@host/home/user/out", Severity::Unsupported),
        ("mailto:user@host", Severity::Unsupported),
        ("localhost:8280/x", Severity::Error),
        ("/x", Severity::Error),
        ("http:///x", Severity::Error),
    ] {
        assert_eq!(
            http_uri(bad).map(|_| ()).map_err(|e| e.0),
            Err(sev),
            "{bad}"
        );
    }
}

/// The timeout of each proxy's target endpoint, compiled from `timeouts` (one `<timeout>`
/// body each), with the diagnostics.
fn compiled_timeouts(timeouts: &[&str]) -> (Vec<Option<Duration>>, sluice_config::Diagnostics) {
    let mut text = String::from(r#"<definitions xmlns="http://ws.apache.org/ns/synapse">"#);
    for (i, t) in timeouts.iter().enumerate() {
        text.push_str(&format!(
            r#"<proxy name="P{i}"><target><endpoint><address uri="http://h/x"><timeout>{t}</timeout></address></endpoint><inSequence/></target></proxy>"#
        ));
    }
    text.push_str("</definitions>");
    let (cfg, mut diags) = sluice_config::load_str("t.xml", &text);
    let plan = crate::compile(&cfg, &crate::CompileOptions::default(), &mut diags);
    let found = (0..timeouts.len())
        .map(|i| {
            plan.proxies[&format!("P{i}")]
                .target
                .as_ref()
                .unwrap()
                .timeout
        })
        .collect();
    (found, diags)
}

#[test]
fn timeouts_of_zero_or_less_are_the_default_as_in_synapse() {
    let (t, diags) = compiled_timeouts(&[
        "<duration>0</duration>",
        "<duration>-1</duration>",
        "<duration>0</duration><responseAction>fault</responseAction>",
        "<responseAction>discard</responseAction>",
        "<duration>2500</duration><responseAction>fault</responseAction>",
        "<duration>7</duration>",
    ]);
    assert!(diags.items.is_empty(), "{diags:?}");
    let ms = |v: u64| Some(Duration::from_millis(v));
    assert_eq!(t, [None, None, ms(30_000), ms(30_000), ms(2500), ms(7)]);
}

#[test]
fn retry_config_decides_which_failures_go_to_another_child() {
    let mut p = address("e");
    assert!(p.retry_allows(101503));
    p.retry.disabled = vec![101504];
    assert!(p.retry_allows(101503) && !p.retry_allows(101504));
    p.retry.enabled = vec![101503];
    assert!(p.retry_allows(101503) && !p.retry_allows(101505));
}

#[test]
fn rest_postfixes_join_addresses_as_synapse_joins_them() {
    assert_eq!(joined("http://h/svc", "/a/b?x=1"), "http://h/svc/a/b?x=1");
    assert_eq!(joined("http://h/svc/", "/a"), "http://h/svc/a");
    assert_eq!(joined("http://h/svc", "a"), "http://h/svc/a");
    assert_eq!(joined("http://h/svc/", "a"), "http://h/svc/a");
    assert_eq!(joined("http://h/svc/", "?x=1"), "http://h/svc?x=1");
    assert_eq!(joined("http://h/svc", "/"), "http://h/svc/");
}
