//! Hot deployment: a change to the files Sluice was started on is served without a restart (a
//! keep-alive connection moves to it at its next request), `SIGHUP` reloads, a change that brings
//! a new error is refused while the serving configuration stays (the log and the management API's
//! `server` say why), and the metrics page and the management API follow the plan.

mod common;
use common::*;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A folder with one `synapse.xml`, removed on drop.
struct Folder(PathBuf);

impl Folder {
    fn new(name: &str) -> Folder {
        let dir = std::env::temp_dir().join(format!("sluice-hot-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Folder(dir)
    }

    fn config(&self) -> PathBuf {
        self.0.join("synapse.xml")
    }

    /// Writes the configuration (through a new file moved in place, as deployment tools do).
    fn write(&self, text: &str) {
        let tmp = self.0.join(".synapse.xml.new");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, self.config()).unwrap();
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Proxies that answer `<v>VERSION</v>` themselves; `more` is added to the definitions.
fn version(v: u32, more: &str) -> String {
    format!(
        r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
  <proxy name="P" transports="http">
    <target><inSequence>
      <payloadFactory media-type="xml"><format><v xmlns="">{v}</v></format><args/></payloadFactory>
      <property name="X-Version" value="{v}" scope="transport"/>
      <respond/>
    </inSequence></target>
  </proxy>
  {more}
</definitions>"#
    )
}

/// Sends to `/services/P` on `c` until the answer says `want` (a reload is due within a few
/// seconds: the files are looked at every second and deployed once they held still for a look).
async fn until_version(c: &mut Conn, want: &str, s: &Sluice) -> Reply {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c
            .post("/services/P", SOAP_HEADERS, "<a/>".into())
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        if r.text().contains(&format!(">{want}</v>")) {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "still {} after 20 s; Sluice said:\n{}",
            r.text(),
            s.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sluice on a new folder holding version 1, with `settings` as its `--config` file.
fn on_folder(name: &str, settings: &str) -> (Folder, Sluice) {
    let f = Folder::new(name);
    f.write(&version(1, ""));
    let toml = f.file("sluice.toml", settings);
    let s = Sluice::start(&[
        "run",
        f.config().to_str().unwrap(),
        "--config",
        toml.to_str().unwrap(),
    ]);
    (f, s)
}

/// `lastReload` of the management API's `server`.
async fn last_reload(s: &Sluice) -> serde_json::Value {
    management_get(s, "/management/server").await["lastReload"].clone()
}

async fn metrics_page(s: &Sluice) -> String {
    let mut c = Conn::open(s.health_addr()).await;
    c.get("/metric-service/metrics").await.unwrap().text()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_is_served_on_the_same_connection_and_counted_on() {
    let (f, s) = on_folder("watch", "[metric_handler]\nenable = true\n");
    let mut c = Conn::open(s.addr).await;
    let r = until_version(&mut c, "1", &s).await;
    assert_eq!(r.header("x-version"), "1");
    // Version 2 adds a proxy; the same keep-alive connection gets it.
    let q = r#"<proxy name="Q" transports="http"><target><inSequence><respond/></inSequence></target></proxy>"#;
    f.write(&version(2, q));
    let r = until_version(&mut c, "2", &s).await;
    assert_eq!(r.header("x-version"), "2");
    let q_answer = c
        .post("/services/Q", SOAP_HEADERS, "<q/>".into())
        .await
        .unwrap();
    assert_eq!(q_answer.status, 200);
    assert!(s
        .stderr_with("reloaded in", Duration::from_secs(5))
        .contains("reloaded in"));
    // P's count goes on across the reload; Q is listed once the new plan is served.
    let page = metrics_page(&s).await;
    let count = |page: &str, name: &str| -> u64 {
        let series = format!(
            "wso2_integration_proxy_request_count_total{{service_name=\"{name}\",service_type=\"proxy\"}} "
        );
        page.lines()
            .find_map(|l| l.strip_prefix(series.as_str()))
            .unwrap_or_else(|| panic!("no {series} in\n{page}"))
            .parse()
            .unwrap()
    };
    assert!(count(&page, "P") >= 2, "{page}");
    assert_eq!(count(&page, "Q"), 1, "{page}");
    // A change with an error is refused: version 2 stays, and the log says why.
    let broken = r#"<proxy name="Broken"><target><inSequence><filter source="//a[" regex="x"><drop/></filter></inSequence></target></proxy>"#;
    f.write(&version(3, broken));
    let log = s.stderr_with("reload refused", Duration::from_secs(20));
    assert!(log.contains("reload refused"), "{log}");
    let r = c
        .post("/services/P", SOAP_HEADERS, "<a/>".into())
        .await
        .unwrap();
    assert!(r.text().contains(">2</v>"), "{}", r.text());
    // The management API says so too.
    let last = last_reload(&s).await;
    assert_eq!(last["status"], "refused", "{last}");
    let errors = last["errors"].to_string();
    assert!(errors.contains("XPath"), "{last}");
    // The folder mended: served.
    f.write(&version(4, ""));
    until_version(&mut c, "4", &s).await;
    assert_eq!(last_reload(&s).await["status"], "deployed");
    let page = metrics_page(&s).await;
    assert!(!page.contains("service_name=\"Q\""), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_when_the_folder_is_not_watched() {
    let (f, s) = on_folder("hup", "[server]\nhot_deployment = false\n");
    let mut c = Conn::open(s.addr).await;
    until_version(&mut c, "1", &s).await;
    f.write(&version(2, ""));
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &s.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    until_version(&mut c, "2", &s).await;
    let log = s.stderr_with("reloading: SIGHUP", Duration::from_secs(5));
    assert!(log.contains("reloading: SIGHUP"), "{log}");
    // Not watched: no reload but the one SIGHUP asked for.
    assert!(!log.contains("the deployed files changed"), "{log}");
}
