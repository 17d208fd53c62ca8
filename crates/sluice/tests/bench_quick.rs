//! The measuring kit's quick mode as a smoke test: the matrix runs against the real binary on the WSO2
//! artifacts and produces its table, with every Sluice scenario answering without errors.

use sluice_bench::matrix::{self, MatrixSpec};
use std::path::PathBuf;

#[test]
fn quick_matrix_produces_the_table_with_no_errors() {
    let reference =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/wso2-perf");
    assert!(reference.is_dir(), "{} is missing", reference.display());
    let mut spec = MatrixSpec::defaults(
        true,
        PathBuf::from(env!("CARGO_BIN_EXE_sluice")),
        reference.join("performance-ei/capp"),
        Some(reference),
    );
    // CI machines may lack nginx and HAProxy: they are skipped, and the report says so.
    spec.progress = false;
    let rep = matrix::run(&spec, "bench_quick test").expect("the matrix runs");
    let out = std::env::temp_dir().join(format!("sluice-bench-quick-{}", std::process::id()));
    let md = sluice_bench::report::write_all(&rep, &out).expect("the report is written");
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        md.contains("| Scenario | Concurrent users | Message size |"),
        "{md}"
    );
    for sc in matrix::SCENARIOS {
        let row = rep
            .rows
            .iter()
            .find(|r| r.scenario == sc)
            .unwrap_or_else(|| panic!("no row for {sc}:\n{md}"));
        assert!(row.requests > 0, "{sc} completed nothing:\n{md}");
        assert_eq!(
            row.error_pct, 0.0,
            "{sc} had errors {:?}:\n{md}",
            row.errors
        );
        assert!(row.cpu_us_per_req.is_some() && row.peak_rss_mb.is_some());
        assert!(
            md.contains(&format!("| Sluice {sc} | 10 | 1 KiB | 0 | 0.00 |")),
            "{md}"
        );
    }
    let direct = rep
        .rows
        .iter()
        .find(|r| r.scenario == "direct")
        .expect("direct row");
    assert_eq!(direct.error_pct, 0.0);
}
