//! The dashboard in a real browser: Debian's Chromium, headless, driven by Selenium through
//! chromedriver (`.ci/run` installs them; `tests/dashboard/drive.py` is the driver). It logs in
//! with MI's default user, sees DirectProxy's count rise after requests, and deactivates an
//! endpoint, which the management API then reports inactive.

mod common;
use common::setup::*;
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_logs_in_sees_counts_rise_and_deactivates_an_endpoint() {
    let root = workspace_root();
    let python = std::env::var("SELENIUM_PYTHON").map_or_else(
        |_| root.join("target/tools/selenium/bin/python"),
        std::path::PathBuf::from,
    );
    assert!(
        python.exists(),
        "no {} (bash .ci/run installs Selenium; SELENIUM_PYTHON=path names another)",
        python.display()
    );
    let be = backend().await;
    let s = start_on_capp(&capp(), be.addr, &[]);
    let dashboard = format!("http://{}/dashboard", s.health_addr());
    let proxy = s.url("/services/DirectProxy");
    let script = root.join("crates/sluice/tests/dashboard/drive.py");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .arg(script)
            .args([&dashboard, &proxy, "DirectProxy", "RealService"])
            .output()
            .expect("the driver runs")
    })
    .await
    .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: serde_json::Value = serde_json::from_str(said.trim()).unwrap();
    assert!(
        seen["after"].as_u64().unwrap() >= seen["before"].as_u64().unwrap() + 5,
        "{seen}"
    );
    assert_eq!(seen["endpoint_before"], "active", "{seen}");
    assert_eq!(seen["endpoint_after"], "inactive", "{seen}");
    assert_eq!(seen["error"], "", "{seen}");
    // The click went through the management API: the endpoint is off for everyone.
    let one = management_get(&s, "/management/endpoints?endpointName=RealService").await;
    assert_eq!(one["isActive"], false, "{one}");
}
